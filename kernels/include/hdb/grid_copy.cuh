#pragma once
// The grid-stride byte copy of hdb::kernels::sm_copy and of the p2p family's peer copy, one body
// for both (CUDA only: include from .cu files). 16-byte vectors when both pointers allow, bytes
// for the rest. Unroll > 1 issues that many loads before their stores: over a remote link the
// latency is then paid once per `Unroll` vectors, not once per vector.
#include <cstddef>
#include <cstdint>

namespace hdb::kernels {

template <int Unroll>
__device__ __forceinline__ void grid_copy(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                                          std::size_t bytes) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t vector_bytes = 0;
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15) == 0) {
    const std::size_t vectors = bytes / 16;
    auto* dst4 = reinterpret_cast<uint4*>(dst);
    const auto* src4 = reinterpret_cast<const uint4*>(src);
    std::size_t v = first;
    for (; v + (Unroll - 1) * stride < vectors; v += Unroll * stride) {
      uint4 part[Unroll];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) part[u] = src4[v + u * stride];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) dst4[v + u * stride] = part[u];
    }
    for (; v < vectors; v += stride) dst4[v] = src4[v];
    vector_bytes = vectors * 16;
  }
  for (std::size_t b = vector_bytes + first; b < bytes; b += stride) dst[b] = src[b];
}

}  // namespace hdb::kernels
