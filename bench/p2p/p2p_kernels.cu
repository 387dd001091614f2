#include "hdb/cuda_check.hpp"
#include "hdb/grid_copy.cuh"
#include "p2p_kernels.hpp"

#include <cstdint>

namespace hdb::p2p::kernels {
namespace {

constexpr int threads_per_block = 512;
constexpr int unroll = 4;

__global__ void peer_copy_kernel(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                                 std::size_t bytes) {
  hdb::kernels::grid_copy<unroll>(dst, src, bytes);
}

__global__ void busy_wait_kernel(std::uint64_t ns) {
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (std::uint64_t now = start; now - start < ns;) {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

}  // namespace

void peer_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream) {
  if (bytes == 0) return;
  peer_copy_kernel<<<blocks, threads_per_block, 0, stream>>>(static_cast<std::uint8_t*>(dst),
                                                             static_cast<const std::uint8_t*>(src), bytes);
  HDB_CUDA_CALL(cudaGetLastError());
}

void busy_wait(std::uint64_t ns, cudaStream_t stream) {
  busy_wait_kernel<<<1, 1, 0, stream>>>(ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

}  // namespace hdb::p2p::kernels
