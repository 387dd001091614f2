#pragma once
// The vocabulary shared by host code, the protocol between ranks and the device kernels: which
// collective, which element type. Plain C++17 so nvcc compiles it too.
#include <cstdint>

namespace hdb::allreduce {

enum class collective : std::uint32_t { all_reduce, reduce_scatter, all_gather };
enum class data_type : std::uint32_t { float32, bfloat16, float16 };

}  // namespace hdb::allreduce
