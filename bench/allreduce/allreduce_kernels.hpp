#pragma once
// Launchers for this family's kernels (plain C++, callable from host-compiled sources): the input
// pattern, the output check against value_pattern.hpp, the busy compute kernel of the overlap
// case and the delay kernel of the straggler case.
#include "types.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hdb::allreduce::kernels {

// dst[i] = input_value(rank, i, modulus) in `type`, for i < count.
void fill_input(void* dst, data_type type, std::uint64_t count, int rank, std::uint64_t modulus, cudaStream_t stream);

struct output_check {
  std::uint64_t wrong = 0;
  std::uint64_t first_wrong = 0;  // valid when wrong > 0
};

// Compares out[j], j < recv_count, with expected_output(op, rank, ranks, j, ...); synchronises.
[[nodiscard]] output_check check_output(const void* out, data_type type, collective op, int rank, int ranks,
                                        std::uint64_t send_count, std::uint64_t recv_count, std::uint64_t modulus,
                                        cudaStream_t stream);

// Dependent FMA chains on every SM: `blocks` blocks of 256 threads, `rounds` iterations each. The
// result goes to sink[0..blocks*256) so nothing is optimised away.
void busy_compute(float* sink, int blocks, std::uint32_t rounds, cudaStream_t stream);
inline constexpr int busy_threads_per_block = 256;

// One thread spins on %globaltimer (the GPU's nanosecond clock, 32 ns ticks on Hopper; it does not
// follow the SM clock, so no calibration) until `ns` have passed: a wait on the device, in stream
// order, so the host never sleeps inside a timed region. ns = 0 still launches the kernel, so a
// zero delay costs the same launch as the others.
void spin_for(std::uint64_t ns, cudaStream_t stream);

}  // namespace hdb::allreduce::kernels
