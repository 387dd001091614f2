#pragma once
// What the p2p family measures, as data and without CUDA: the methods, the pairs of the selected
// GPUs, and the ordered list of cases (which transfers run together, at which size, whether the
// case can run on this many GPUs, which peer-access state it needs). Unit-tested for 1, 2, 4 and
// 8 GPUs; p2p.cpp turns each planned case into a Google Benchmark case.
#include <compare>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::p2p {

// How bytes get from one GPU to another.
enum class method {
  ce_peer,     // cudaMemcpyPeerAsync, peer access enabled: a copy engine over NVLink/PCIe P2P
  ce_no_peer,  // the same call with peer access not enabled: whatever the driver does instead
  staged,      // our pipeline through pinned host bounce buffers (D2H on the source, H2D on the destination)
  sm_read,     // a kernel on the destination GPU loads from the source GPU's memory (peer pointers)
  sm_write,    // a kernel on the source GPU stores into the destination GPU's memory
};

// The peer-access state a method needs: peer access is per (accessing context, peer) pair.
enum class peer_state { enabled, disabled, either };

// Which transfers run at once: one direction of a pair, both directions of a pair, every
// ordered pair of the selection, or a GPU to itself through host memory (staged only).
enum class traffic { uni, bidir, all_pairs, loopback };

enum class case_kind {
  bandwidth,    // a size sweep, one method
  latency,      // small transfers, one method
  chunk_sweep,  // staged pipeline at a fixed size, one case per chunk size
  aggregate,    // every ordered pair at once
};

[[nodiscard]] std::string_view to_string(method m);
[[nodiscard]] std::string_view to_string(traffic t);
[[nodiscard]] std::string_view to_string(case_kind k);
[[nodiscard]] peer_state required_peer_state(method m);
// Every method, in the order cases are registered (see plan_cases).
[[nodiscard]] const std::vector<method>& all_methods();

struct ordered_pair {
  int src = 0;
  int dst = 0;
  auto operator<=>(const ordered_pair&) const = default;
};

// Every (src, dst) with src != dst, src-major: 0->1, 0->2, ..., 1->0, 1->2, ...
[[nodiscard]] std::vector<ordered_pair> ordered_pairs(const std::vector<int>& devices);
// Every pair once, src < dst (the bidirectional cases).
[[nodiscard]] std::vector<ordered_pair> unordered_pairs(const std::vector<int>& devices);

struct plan_options {
  std::vector<std::size_t> sizes;            // bandwidth sweep
  std::vector<std::size_t> latency_sizes;    // small-transfer latency
  std::vector<std::size_t> chunk_sizes;      // staged chunk candidates
  std::size_t chunk_sweep_size = 0;          // the size of the chunk-sweep cases
  std::vector<std::size_t> aggregate_sizes;  // all pairs at once
};

struct planned_case {
  case_kind kind = case_kind::bandwidth;
  method how = method::ce_peer;
  traffic pattern = traffic::uni;
  std::vector<ordered_pair> transfers;  // what moves concurrently (src == dst for loopback)
  std::size_t bytes = 0;                // per transfer
  std::size_t chunk = 0;                // chunk_sweep: the chunk size; 0: the pipeline picks the best candidate
  std::vector<int> devices;             // the GPUs it touches, ascending
  std::string src_label;                // CSV src / dst columns ("" for all-pairs cases and skipped pairs)
  std::string dst_label;
  std::optional<std::string> skip_reason;  // set: registered, reported skipped, never run
};

// The state a planned case needs: its method's, except a loopback (a GPU never needs peer access to itself).
[[nodiscard]] peer_state required_peer_state(const planned_case& c);

// One-GPU runs register every pair case with this reason, so the CSV and the report say why the
// P2P figures are missing instead of dropping them.
[[nodiscard]] std::string needs_two_gpus_reason(std::size_t selected);

// The cases in run order. Cases are grouped by the peer-access state they need (disabled first:
// a fresh process has peer access off; then either; then enabled), so one pass over the plan
// toggles peer access once. Within a group: bandwidth uni, bidir, latency, chunk sweep,
// loopback, aggregate. With fewer than two devices every pair case is skipped and the
// loopback cases (staged and direct) still run.
[[nodiscard]] std::vector<planned_case> plan_cases(const std::vector<int>& devices, const plan_options& options);

// How often running `plan` in order changes the process's peer-access state (starting with it
// off): the cost model behind plan_cases' order.
[[nodiscard]] int peer_state_changes(const std::vector<planned_case>& plan);

// The staged pipeline's chunk for one transfer: the candidate raised to at least
// ceil(bytes / max_chunks) (so a gated batch never queues more than max_chunks copies per stream)
// and rounded up to 4 KiB, or the whole transfer when it is smaller.
inline constexpr std::size_t max_chunks_per_transfer = 128;
[[nodiscard]] std::size_t effective_chunk(std::size_t candidate, std::size_t bytes);
// The distinct effective chunks of a candidate list, ascending.
[[nodiscard]] std::vector<std::size_t> chunk_candidates(const std::vector<std::size_t>& candidates, std::size_t bytes);
// Transfers per timed batch for a staged case: at most max_chunks_per_transfer chunks queued per
// stream, and never more transfers than the shared batch sizing allows.
[[nodiscard]] std::size_t staged_ops_per_batch(std::size_t bytes, std::size_t chunk, std::size_t shared_ops_per_batch);

}  // namespace hdb::p2p
