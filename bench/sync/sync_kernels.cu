#include "sync_kernels.hpp"
#include "step_value.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/pattern.hpp"

namespace hdb::sync::device {
namespace {

constexpr int block_threads = 256;

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void spin_for(std::uint64_t spin_ns) {
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < spin_ns) {
  }
}

__global__ void empty_kernel() {}

__global__ void delay_then_stamp_kernel(std::uint64_t spin_ns, volatile std::uint64_t* end_ns) {
  spin_for(spin_ns);
  *end_ns = global_timer_ns();
}

__global__ void trap_step_kernel(std::uint64_t spin_ns, std::uint32_t* accumulator, std::uint32_t* history,
                                 std::uint64_t step) {
  spin_for(spin_ns);
  const std::uint32_t value = *accumulator + step_value(step);
  *accumulator = value;
  if (history != nullptr) history[step] = value;
}

__global__ void clock_echo_kernel(const volatile std::uint32_t* request, volatile std::uint64_t* replies,
                                  std::uint32_t rounds, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_timer_ns();
  for (std::uint32_t r = 1; r <= rounds; ++r) {
    while (*request < r) {
      if (global_timer_ns() - start > timeout_ns) return;
    }
    replies[r - 1] = global_timer_ns();
    __threadfence_system();
  }
}

__global__ void produce_kernel(std::uint64_t* data, std::size_t words, std::uint32_t seed, std::uint64_t spin_ns,
                               volatile std::uint64_t* end_ns) {
  if (threadIdx.x == 0) spin_for(spin_ns);
  __syncthreads();
  for (std::size_t w = threadIdx.x; w < words; w += blockDim.x) data[w] = pattern_word(w, seed);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    *end_ns = global_timer_ns();
  }
}

__global__ void consume_kernel(const std::uint64_t* data, std::size_t words, std::uint32_t seed,
                               unsigned long long* mismatches, volatile std::uint64_t* start_ns) {
  if (threadIdx.x == 0) *start_ns = global_timer_ns();
  unsigned long long bad = 0;
  for (std::size_t w = threadIdx.x; w < words; w += blockDim.x) bad += data[w] != pattern_word(w, seed) ? 1 : 0;
  if (bad != 0) atomicAdd(mismatches, bad);
}

}  // namespace

void empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  HDB_CUDA_CALL(cudaGetLastError());
}

void delay_then_stamp(std::uint64_t spin_ns, std::uint64_t* end_ns, cudaStream_t stream) {
  delay_then_stamp_kernel<<<1, 1, 0, stream>>>(spin_ns, end_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

void trap_step(std::uint64_t spin_ns, std::uint32_t* accumulator, std::uint32_t* history, std::uint64_t step,
               cudaStream_t stream) {
  trap_step_kernel<<<1, 1, 0, stream>>>(spin_ns, accumulator, history, step);
  HDB_CUDA_CALL(cudaGetLastError());
}

void clock_echo(const std::uint32_t* request, std::uint64_t* replies, std::uint32_t rounds, std::uint64_t timeout_ns,
                cudaStream_t stream) {
  clock_echo_kernel<<<1, 1, 0, stream>>>(request, replies, rounds, timeout_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

void produce(std::uint64_t* data, std::size_t words, std::uint32_t seed, std::uint64_t spin_ns, std::uint64_t* end_ns,
             cudaStream_t stream) {
  produce_kernel<<<1, block_threads, 0, stream>>>(data, words, seed, spin_ns, end_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

void consume(const std::uint64_t* data, std::size_t words, std::uint32_t seed, unsigned long long* mismatches,
             std::uint64_t* start_ns, cudaStream_t stream) {
  consume_kernel<<<1, block_threads, 0, stream>>>(data, words, seed, mismatches, start_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

}  // namespace hdb::sync::device
