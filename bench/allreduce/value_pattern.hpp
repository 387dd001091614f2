#pragma once
// What every rank puts in its input and what every output element must hold afterwards, written
// once for the host (tests) and the device (fill and verify kernels).
//
// Input element i of rank r is a small whole number, 1 + (mix(i) + 7r) mod m, never zero and
// position-dependent (a chunk delivered to the wrong place or from the wrong rank is caught). m is
// chosen so that the sum over n ranks stays an exactly representable integer in the element type
// (float 2^24, half 2^11, bfloat16 2^8): every partial sum a ring or tree forms is then exact, and
// the check is an equality, whatever order NCCL adds in.
#include "hdb/host_device.hpp"
#include "types.hpp"

#include <cstdint>

namespace hdb::allreduce {

// Largest N such that every integer in [0, N] is exact in the type.
HDB_HOST_DEVICE constexpr std::uint64_t exact_integer_limit(data_type type) {
  return type == data_type::float32 ? (1ull << 24) : type == data_type::float16 ? (1ull << 11) : (1ull << 8);
}

// Input values lie in [1, m]: n * m never exceeds the type's exact range (m >= 1 regardless).
HDB_HOST_DEVICE constexpr std::uint64_t pattern_modulus(data_type type, int ranks) {
  const std::uint64_t m = exact_integer_limit(type) / static_cast<std::uint64_t>(ranks < 1 ? 1 : ranks);
  return m < 1 ? 1 : m;
}

HDB_HOST_DEVICE constexpr std::uint64_t input_value(int rank, std::uint64_t index, std::uint64_t modulus) {
  const std::uint64_t mixed = (index * 0x9E3779B97F4A7C15ull) >> 29;  // Fibonacci hashing: neighbours differ
  return 1 + (mixed + 7ull * static_cast<std::uint64_t>(rank)) % modulus;
}

// The value output element j of rank `rank` must hold. send_count / recv_count are this
// collective's per-rank element counts (see collective_traits).
HDB_HOST_DEVICE constexpr std::uint64_t expected_output(collective op, int rank, int ranks, std::uint64_t j,
                                                        std::uint64_t send_count, std::uint64_t recv_count,
                                                        std::uint64_t modulus) {
  if (op == collective::all_gather) {
    // Block q of the output is rank q's whole input.
    return input_value(static_cast<int>(j / send_count), j % send_count, modulus);
  }
  // all-reduce: the sum of element j over ranks; reduce-scatter: rank r keeps block r of that sum.
  const std::uint64_t source = op == collective::reduce_scatter ? static_cast<std::uint64_t>(rank) * recv_count + j : j;
  std::uint64_t sum = 0;
  for (int q = 0; q < ranks; ++q) sum += input_value(q, source, modulus);
  return sum;
}

}  // namespace hdb::allreduce
