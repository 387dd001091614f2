#pragma once
// The pattern of hdb/pattern.hpp, written and checked by the CPU: for pageable memory, which
// the device cannot address. Huge buffers are checked by sampling, so verification never costs
// more than a fraction of the measurement it guards.
#include "hdb/kernels.hpp"

#include <cstddef>
#include <cstdint>

namespace hdb {

void fill_pattern_host(void* dst, std::size_t bytes, std::uint32_t seed);
// Bytes [begin, end) of the buffer at `base`, each with the pattern of its position in the buffer:
// one slice of fill_pattern_host, so threads filling slices write what one thread would.
void fill_pattern_host_range(void* base, std::size_t begin, std::size_t end, std::uint32_t seed);

// Buffers up to this size are checked byte for byte; larger ones at their first and last MiB
// and the first and last word of every 4 KiB page in between.
inline constexpr std::size_t full_check_limit = std::size_t{64} << 20;

[[nodiscard]] kernels::pattern_mismatch verify_pattern_host(const void* src, std::size_t bytes, std::uint32_t seed);

}  // namespace hdb
