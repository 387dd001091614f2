#pragma once
// The vocabulary shared by host code, the protocol between ranks and the device kernels: which
// collective, which element type, how the timed collectives are launched. Plain C++17 so nvcc
// compiles it too.
#include <cstdint>

namespace hdb::allreduce {

enum class collective : std::uint32_t { all_reduce, reduce_scatter, all_gather };
enum class data_type : std::uint32_t { float32, bfloat16, float16 };
// How a rank issues the timed batch: captured once into a CUDA graph and replayed with one
// cudaGraphLaunch (the default, as nccl-tests -G), or one host call per collective on the stream.
enum class launch_method : std::uint32_t { graph, stream };

}  // namespace hdb::allreduce
