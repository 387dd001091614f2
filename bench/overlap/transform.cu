// The overlap family's kernel. Each thread carries four independent multiply-add chains (one
// uint4), so the SMs' integer pipes, not memory or latency, set the time per byte.
#include "transform.hpp"

#include "hdb/cuda_check.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace hdb::overlap {
namespace {

constexpr unsigned threads_per_block = 256;
// Beyond this the grid strides; a 1 GiB chunk needs 262144 blocks of one uint4 per thread.
constexpr std::size_t max_blocks = std::size_t{1} << 20;

__device__ __forceinline__ std::uint32_t steps(std::uint32_t x, std::uint32_t iterations, std::uint32_t increment) {
  for (std::uint32_t i = 0; i < iterations; ++i) x = x * transform_multiplier + increment;
  return x;
}

__global__ void transform_kernel(std::uint32_t* data, std::size_t words, std::uint32_t iterations,
                                 std::uint32_t increment) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t vectors = words / 4;
  auto* data4 = reinterpret_cast<uint4*>(data);
  for (std::size_t v = first; v < vectors; v += stride) {
    uint4 x = data4[v];
#pragma unroll 4
    for (std::uint32_t i = 0; i < iterations; ++i) {
      x.x = x.x * transform_multiplier + increment;
      x.y = x.y * transform_multiplier + increment;
      x.z = x.z * transform_multiplier + increment;
      x.w = x.w * transform_multiplier + increment;
    }
    data4[v] = x;
  }
  for (std::size_t w = vectors * 4 + first; w < words; w += stride) data[w] = steps(data[w], iterations, increment);
}

}  // namespace

void launch_transform(void* data, std::size_t words, std::uint32_t iterations, std::uint32_t salt, cudaStream_t stream) {
  if ((reinterpret_cast<std::uintptr_t>(data) & 15) != 0) {
    throw std::invalid_argument("launch_transform: data must be 16-byte aligned");
  }
  if (words == 0) return;
  const std::size_t threads_needed = std::max<std::size_t>(words / 4, 1);
  const std::size_t blocks = std::min(max_blocks, (threads_needed + threads_per_block - 1) / threads_per_block);
  transform_kernel<<<static_cast<unsigned>(blocks), threads_per_block, 0, stream>>>(
      static_cast<std::uint32_t*>(data), words, iterations, transform_increment(salt));
  HDB_CUDA_CALL(cudaGetLastError());
}

}  // namespace hdb::overlap
