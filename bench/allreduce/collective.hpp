#pragma once
// The collectives as data (one file each: collective_all_reduce.cpp, collective_reduce_scatter.cpp,
// collective_all_gather.cpp):
// how many elements every rank sends and receives for a message, and the bus factor that turns
// algorithm bandwidth into bus bandwidth. Definitions follow nccl-tests (doc/PERFORMANCE.md):
//   message size S = the full vector: all-reduce's buffer, reduce-scatter's input, all-gather's
//   output (each rank holds S/n of the latter two's other side);
//   algbw = S / t; busbw = algbw x factor, with factor 2(n-1)/n for all-reduce (a ring moves every
//   byte through n-1 reduce steps and n-1 gather steps, each carrying S/n) and (n-1)/n for
//   reduce-scatter and all-gather (one of the two halves). busbw is then comparable with the link's
//   per-direction rate whatever n is.
#include "types.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace hdb::allreduce {

struct collective_traits {
  collective op;
  std::string_view name;       // label value: "all_reduce"
  std::string_view nccl_call;  // "ncclAllReduce"
  double (*bus_factor)(int ranks);
  // Per-rank element counts for a message of `count` elements (a multiple of split_granularity).
  std::uint64_t (*send_count)(std::uint64_t count, int ranks);
  std::uint64_t (*recv_count)(std::uint64_t count, int ranks);
  // Whether the message is split into n equal blocks (then count must be a multiple of n).
  bool split_over_ranks;
};

[[nodiscard]] const collective_traits& all_reduce_traits();
[[nodiscard]] const collective_traits& reduce_scatter_traits();
[[nodiscard]] const collective_traits& all_gather_traits();
[[nodiscard]] const collective_traits& traits(collective op);
[[nodiscard]] const std::vector<collective>& all_collectives();

[[nodiscard]] std::string_view to_string(collective op);
[[nodiscard]] std::string_view to_string(data_type type);  // "float", "bfloat16", "half"
[[nodiscard]] std::optional<collective> parse_collective(std::string_view text);
[[nodiscard]] std::optional<data_type> parse_data_type(std::string_view text);
[[nodiscard]] std::size_t element_bytes(data_type type);

// Elements of a message of `bytes` bytes: rounded down to whole elements and, for a collective
// split over ranks, to a multiple of n. 0 when not even one element per rank fits.
[[nodiscard]] std::uint64_t message_count(collective op, data_type type, std::size_t bytes, int ranks);

// GB/s (1e9 B/s) of `bytes` moved in `seconds`.
[[nodiscard]] double algbw_gbps(std::size_t bytes, double seconds);
[[nodiscard]] double busbw_gbps(collective op, int ranks, std::size_t bytes, double seconds);

}  // namespace hdb::allreduce
