#pragma once
// The transform every overlap pipeline applies, out = f(in), as host-side arithmetic: each 32-bit
// word goes through `iterations` steps of x -> a*x + c (mod 2^32). The device runs every step
// (that is the tunable work per byte); the host composes the affine map by squaring, so checking
// a word costs one multiply-add however heavy the regime. c is odd and depends on a per-pipeline
// salt, so output left over from another pipeline never passes as this one's.
// Plain C++17 without CUDA: the kernel (.cu), the family and the host tests share it.
#include <cstddef>
#include <cstdint>

namespace hdb::overlap {

// Knuth/Numerical Recipes LCG multiplier: a = 1 (mod 4) with an odd c gives a full period, so
// no number of iterations below 2^32 returns a word to itself.
inline constexpr std::uint32_t transform_multiplier = 1664525u;

[[nodiscard]] constexpr std::uint32_t transform_increment(std::uint32_t salt) noexcept { return 2u * salt + 1u; }

// x -> mul * x + add (mod 2^32).
struct affine_map {
  std::uint32_t mul = 1;
  std::uint32_t add = 0;

  [[nodiscard]] constexpr std::uint32_t operator()(std::uint32_t x) const noexcept { return mul * x + add; }
};

// The step applied `iterations` times, by repeated squaring (O(log iterations)).
[[nodiscard]] constexpr affine_map transform_power(std::uint32_t iterations, std::uint32_t salt) noexcept {
  affine_map result{};                                              // identity
  affine_map square{transform_multiplier, transform_increment(salt)};  // step^(2^bit)
  for (std::uint32_t k = iterations; k != 0; k >>= 1) {
    // f(g(x)) = f.mul * (g.mul * x + g.add) + f.add: composing powers of one map commutes.
    if ((k & 1u) != 0) result = {square.mul * result.mul, square.mul * result.add + square.add};
    square = {square.mul * square.mul, square.mul * square.add + square.add};
  }
  return result;
}

}  // namespace hdb::overlap
