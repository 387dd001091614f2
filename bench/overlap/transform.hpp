#pragma once
// Host-callable launcher of the overlap family's kernel (plain C++, no CUDA syntax). The kernel
// applies transform_math.hpp's map `iterations` times to every 32-bit word in place: compute-bound
// with a work per byte the regimes tune, and an output the host can check.
#include "transform_math.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hdb::overlap {

// data: device memory, 16-byte aligned (throws std::invalid_argument otherwise); `words` 32-bit
// words transformed in place on `stream`. Safe inside stream capture.
void launch_transform(void* data, std::size_t words, std::uint32_t iterations, std::uint32_t salt, cudaStream_t stream);

}  // namespace hdb::overlap
