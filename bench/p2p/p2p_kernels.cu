#include "hdb/cuda_check.hpp"
#include "p2p_kernels.hpp"

#include <cstdint>

namespace hdb::p2p::kernels {
namespace {

constexpr int threads_per_block = 512;
constexpr int unroll = 4;

__global__ void peer_copy_kernel(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                                 std::size_t bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t vector_bytes = 0;
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15) == 0) {
    const std::size_t vectors = bytes / 16;
    auto* dst4 = reinterpret_cast<uint4*>(dst);
    const auto* src4 = reinterpret_cast<const uint4*>(src);
    std::size_t v = first;
    // All loads of an iteration are issued before its stores: remote latency is paid once per
    // `unroll` vectors, not once per vector.
    for (; v + (unroll - 1) * stride < vectors; v += unroll * stride) {
      uint4 part[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) part[u] = src4[v + u * stride];
#pragma unroll
      for (int u = 0; u < unroll; ++u) dst4[v + u * stride] = part[u];
    }
    for (; v < vectors; v += stride) dst4[v] = src4[v];
    vector_bytes = vectors * 16;
  }
  for (std::size_t b = vector_bytes + first; b < bytes; b += stride) dst[b] = src[b];
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

void preload() {
  cudaFuncAttributes attributes{};
  HDB_CUDA_CALL(cudaFuncGetAttributes(&attributes, peer_copy_kernel));
  HDB_CUDA_CALL(cudaFuncGetAttributes(&attributes, busy_wait_kernel));
}

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
