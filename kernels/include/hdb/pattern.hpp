#pragma once
// The data pattern every copy path is verified against: non-zero in every byte (so a buffer
// that was never written, or was zeroed, fails) and dependent on the position (so a shifted,
// truncated or duplicated copy fails). The same function runs on host and device.
#include <cstddef>
#include <cstdint>

#include "hdb/host_device.hpp"

namespace hdb {

// splitmix64 finaliser of (word index, seed), with the low bit of every byte forced on.
HDB_HOST_DEVICE constexpr std::uint64_t pattern_word(std::uint64_t word_index, std::uint32_t seed) {
  std::uint64_t z = word_index + (static_cast<std::uint64_t>(seed) << 40) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z | 0x0101010101010101ull;
}

// Byte i of a buffer holding the pattern (words stored little-endian from an aligned start).
HDB_HOST_DEVICE constexpr std::uint8_t pattern_byte(std::uint64_t byte_index, std::uint32_t seed) {
  return static_cast<std::uint8_t>(pattern_word(byte_index >> 3, seed) >> (8 * (byte_index & 7)));
}

}  // namespace hdb
