#pragma once
// Which cases a run measures, as data (host-only, unit-tested). The sweep that carries the
// lesson gets every size: all-reduce, float, out-of-place, default interconnect, for every rank
// count. Every variation (in-place, other dtypes, reduce-scatter, all-gather, P2P disabled) gets
// the sampled sizes: every fourth requested size and the largest, so the default run stays near
// a minute on two GPUs. In place on one rank NCCL does no device work at all, so those cases are
// left out (one skipped case says why). The overlap case and the straggler case (one rank enters
// every collective late) run at the largest rank count only.
#include "collective.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::allreduce {

enum class placement { out_of_place, in_place };
enum class interconnect { default_transports, p2p_disabled };
// What a case measures, and so the schema's case kind and the protocol each repetition runs.
enum class case_kind { collective, overlap, straggler };

[[nodiscard]] std::string_view to_string(placement p);
[[nodiscard]] std::string_view to_string(interconnect i);
[[nodiscard]] std::string_view to_string(launch_method m);
// "graph" or "stream"; nullopt for anything else (--launch also takes "auto": plan_options).
[[nodiscard]] std::optional<launch_method> parse_launch_method(std::string_view text);

struct plan_options {
  std::vector<std::size_t> sizes;          // --sizes, ascending
  std::vector<int> ranks;                  // --ranks, ascending
  int available_ranks = 1;                 // GPUs selected (local) or MPI world size
  std::vector<collective> collectives;     // --collectives
  std::vector<data_type> types;            // --dtypes
  std::vector<placement> placements;       // --placements
  std::vector<interconnect> interconnects; // --interconnect
  std::size_t overlap_bytes = 0;           // --overlap-size; 0: no overlap case
  // --launch: one method for every collective case, or nullopt (auto): a CUDA graph below
  // graph_below bytes (--graph-below), host-launched at and above.
  std::optional<launch_method> launch;
  std::size_t graph_below = std::size_t{1} << 20;
  // --straggler-delays (µs, ascending; empty: no straggler case) and --straggler-size.
  std::vector<int> straggler_delays_us;
  std::size_t straggler_bytes = std::size_t{64} << 20;
};

// The longest straggler delay --straggler-delays takes: a batch of up to 100 collectives, each
// that late, must finish well inside the watchdog (60 s by default).
inline constexpr int max_straggler_delay_us = 100000;

// "0,10,100,1000" -> {0, 10, 100, 1000} (sorted, duplicates dropped); "none" -> {}. Whole numbers
// of µs from 0 to max_straggler_delay_us; throws usage_error naming --flag for anything else.
[[nodiscard]] std::vector<int> parse_straggler_delays(const std::string& flag, const std::string& text);

// The launch method of a collective case of `bytes` under `o` (auto: graph below o.graph_below).
[[nodiscard]] launch_method launch_for(const plan_options& o, std::size_t bytes);

struct planned_case {
  collective op = collective::all_reduce;
  data_type type = data_type::float32;
  placement where = placement::out_of_place;
  interconnect via = interconnect::default_transports;
  int ranks = 1;
  std::size_t bytes = 0;        // the message actually measured (rounded to whole elements per rank)
  std::uint64_t count = 0;      // its elements; 0 when nothing fits (the case is skipped)
  case_kind kind = case_kind::collective;
  // The collective cases follow launch_for; the overlap case is always stream-launched (its batch
  // runs beside a compute kernel started from the same event, and at its size launch cost is noise).
  // A case parameter: the CSV row says how its time was taken.
  launch_method launch = launch_method::graph;
  std::string skip_reason;      // non-empty: registered to report why it cannot run here
  // The straggler case: one case per (delay, rank), each reporting that rank's time (a row per
  // rank); the late rank is the last one. The other kinds leave these at their defaults.
  int straggler_rank = -1;
  int delay_us = 0;
  int rank = 0;
};

// Every fourth size and the largest.
[[nodiscard]] std::vector<std::size_t> sampled_sizes(const std::vector<std::size_t>& sizes);

// "all": 1, 2, 4, ... up to `available`, plus `available` itself, and always 2 (so a one-GPU node
// reports the multi-rank case as skipped); otherwise a list of counts >= 1. Throws usage_error
// naming --ranks.
[[nodiscard]] std::vector<int> parse_ranks(const std::string& text, int available);

// In the order they run: cases sharing worker processes stay together (the default transports
// first, with the overlap and straggler cases, then the P2P-disabled group, which needs its own
// processes).
[[nodiscard]] std::vector<planned_case> plan_cases(const plan_options& options);

// Collectives per timed batch and warm-up collectives before it: ~512 MiB of messages per batch
// (at least 2, at most 100 collectives) and a fifth as many warm-ups (1 to 10).
struct batch_shape {
  int warmup = 1;
  int iterations = 2;
};
[[nodiscard]] batch_shape batch_for(std::size_t bytes);

}  // namespace hdb::allreduce
