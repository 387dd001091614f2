#include "hdb/host_pattern.hpp"

#include "hdb/pattern.hpp"

#include <algorithm>
#include <cstring>

namespace hdb {
namespace {

void check_range(const std::uint8_t* bytes, std::size_t begin, std::size_t end, std::uint32_t seed,
                 kernels::pattern_mismatch& result) {
  for (std::size_t i = begin; i < end; ++i) {
    if (bytes[i] != pattern_byte(i, seed)) {
      if (result.count == 0 || i < result.first_index) result.first_index = i;
      ++result.count;
    }
  }
}

}  // namespace

void fill_pattern_host(void* dst, std::size_t bytes, std::uint32_t seed) { fill_pattern_host_range(dst, 0, bytes, seed); }

void fill_pattern_host_range(void* base, std::size_t begin, std::size_t end, std::uint32_t seed) {
  auto* out = static_cast<std::uint8_t*>(base);
  std::size_t i = begin;
  for (; i < end && i % 8 != 0; ++i) out[i] = pattern_byte(i, seed);  // up to the first whole word
  for (; i + 8 <= end; i += 8) {
    const std::uint64_t word = pattern_word(i / 8, seed);
    std::memcpy(out + i, &word, sizeof(word));  // little-endian, as the device writes it
  }
  for (; i < end; ++i) out[i] = pattern_byte(i, seed);
}

kernels::pattern_mismatch verify_pattern_host(const void* src, std::size_t bytes, std::uint32_t seed) {
  const auto* in = static_cast<const std::uint8_t*>(src);
  kernels::pattern_mismatch result;
  if (bytes <= full_check_limit) {
    check_range(in, 0, bytes, seed, result);
    return result;
  }
  constexpr std::size_t edge = std::size_t{1} << 20;
  constexpr std::size_t page = 4096;
  check_range(in, 0, edge, seed, result);
  for (std::size_t p = edge; p + page <= bytes - edge; p += page) {
    check_range(in, p, p + 8, seed, result);
    check_range(in, p + page - 8, p + page, seed, result);
  }
  check_range(in, bytes - edge, bytes, seed, result);
  return result;
}

}  // namespace hdb
