#pragma once
// The overlap family's arithmetic, free of CUDA so the host tests check it without a GPU: how a
// buffer splits into chunks and chunks onto streams, the serial and ideal pipeline times from
// measured stage rates, the probe that measures those rates beside every pass and how its times
// become rates, speedup and overlap efficiency, the kernel's work per byte for a regime, and which
// output words are checked. docs/methodology.md summarises the model (the derivation: git show 47ce745:docs/overlap.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::overlap {

// ---------------------------------------------------------------- chunks

// Chunks start on a 4 KiB page so every copy starts page-aligned and every kernel on a 16-byte
// boundary; sizes must be whole pages.
inline constexpr std::size_t chunk_alignment = 4096;

struct chunk {
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

// `count` chunks of ceil(units / count) whole alignment units, the last one shorter when `count`
// does not divide the size: the split a hand-written pipeline loop makes. Throws
// std::invalid_argument (with the reason) for 0 bytes, a size that is not whole units, count < 1,
// or a split that would leave a chunk empty (more chunks than the size allows).
[[nodiscard]] std::vector<chunk> split_into_chunks(std::size_t bytes, int count,
                                                   std::size_t alignment = chunk_alignment);

// Round-robin: chunk i runs on stream i mod streams.
[[nodiscard]] int stream_of_chunk(int chunk_index, int streams);

// One item of --chunks: a fixed count ("32") or a multiple of the stream count ("S", "4S").
struct chunk_rule {
  int count = 0;            // fixed count, or the multiplier of S when per_stream
  bool per_stream = false;
};

// "S,4S,32" -> rules. Throws std::invalid_argument naming the bad item.
[[nodiscard]] std::vector<chunk_rule> parse_chunk_rules(std::string_view text);
// The chunk counts the rules give for `streams` streams: ascending, each once.
[[nodiscard]] std::vector<int> chunk_counts(const std::vector<chunk_rule>& rules, int streams);

// ---------------------------------------------------------------- regimes

// How heavy the kernel is next to the copies: its time per chunk is calibrated on the device to
// this multiple of the chunk's host-to-device copy time (pinned).
enum class regime { balanced, compute_heavy, copy_heavy };

[[nodiscard]] std::string_view to_string(regime r) noexcept;
[[nodiscard]] double kernel_to_copy_ratio(regime r) noexcept;  // 1, 4, 1/4
inline constexpr regime all_regimes[] = {regime::balanced, regime::compute_heavy, regime::copy_heavy};

// Kernel time is t(k) = fixed_us + k * per_iteration_us for k iterations per word (a line through
// two measured points). The k (>= 1) whose time is closest to target_us. Throws std::runtime_error
// when per_iteration_us <= 0: the time did not grow with the work, so no k can be chosen.
[[nodiscard]] std::uint32_t iterations_for(double fixed_us, double per_iteration_us, double target_us);

// ---------------------------------------------------------------- bounds

// Measured on the device (decimal GB/s): by the bound probe beside each pass (below), or once at
// start-up by the calibration.
struct stage_rates {
  double h2d_gbps = 0;     // host-to-device alone on the link
  double d2h_gbps = 0;     // device-to-host alone on the link
  double bidir_gbps = 0;   // both directions at once, the two summed
  double kernel_gbps = 0;  // bytes the kernel transforms per second (resident data)
};

// One pass with nothing overlapping: every byte copied in, transformed and copied out in turn.
[[nodiscard]] double serial_time_us(const stage_rates& rates, std::size_t bytes);

// The fastest `streams` streams could run this chunking, from the stage rates:
//   one stream:  the serial time (a stream runs its operations in order);
//   otherwise    max(pipeline, busiest stream), where
//     pipeline       = h_0 + k_0 + d_0 + sum_{i>=1} max(k_i, l_i)   (fill + one bottleneck per chunk)
//     l_i            = max(h_i, d_i, 2 b_i / bidir)   (h2d of one chunk and d2h of another share the link)
//     busiest stream = max_s sum_{i on s} (h_i + k_i + d_i)   (a stream serialises its own chunks)
// with h_i = b_i / h2d, k_i = b_i / kernel, d_i = b_i / d2h for chunk i of b_i bytes.
[[nodiscard]] double ideal_time_us(const stage_rates& rates, const std::vector<chunk>& chunks, int streams);

// ---------------------------------------------------------------- the bound, measured beside each pass

// Each repetition of a pipeline case measures the rates its bound needs right after its timed pass,
// over the same buffers, with operations the size of the pass's chunks: H2D alone, D2H alone, both
// at once on two streams, and the regime's kernel on resident data. A batch moves about this many
// bytes per direction: enough that the gate's release and the events are < 0.5 % of it, few enough
// that the probe costs a fraction of a pass (the budget: git show 47ce745:docs/overlap.md).
inline constexpr std::size_t probe_batch_bytes = std::size_t{64} << 20;
// Chunks so small that a batch would need more operations than this are probed with this many.
inline constexpr int max_probe_ops = 64;

// What one probe batch does: `ops` operations of `op_bytes` each, operation j at h2d_offsets[j]
// (H2D and the kernel) or d2h_offsets[j] (D2H) of the pass's buffers. Successive operations walk
// successive chunk-sized regions, as the pass does, rather than repeating one region the host's
// caches could serve; in the two-way batch the D2H regions follow the H2D ones, so the two
// directions touch different bytes while the buffer has room.
struct probe_plan {
  std::size_t op_bytes = 0;
  int ops = 0;
  std::vector<std::size_t> h2d_offsets;
  std::vector<std::size_t> d2h_offsets;
};

// The plan for a pass over `bytes` split into `chunks`: op_bytes = the first (largest) chunk, at
// most probe_batch_bytes; ops = probe_batch_bytes / op_bytes within [1, max_probe_ops]; regions
// of op_bytes taken in turn, wrapping at the end of the buffer. Throws std::invalid_argument for
// no chunks or a chunk larger than the buffer.
[[nodiscard]] probe_plan plan_probe(const std::vector<chunk>& chunks, std::size_t bytes);

// Device times (us) of one probe's batches.
struct probe_times {
  double h2d_us = 0;               // ops H2D copies on one stream
  double d2h_us = 0;               // ops D2H copies on one stream
  std::optional<double> bidir_us;  // ops H2D on one stream and ops D2H on another at once; pinned only
  double kernel_us = 0;            // ops kernels of op_bytes on resident data
};

// The stage rates of one probe. Pageable memory cannot run both directions at once (each copy
// blocks the host), so without bidir_us the two-way rate is `bidir_when_unmeasured` (the start-up
// pinned figure: a cap a pageable pipeline never reaches). Throws std::runtime_error naming the
// batch when a time is not > 0 (no rate can come from it).
[[nodiscard]] stage_rates rates_from_probe(const probe_plan& plan, const probe_times& times,
                                           double bidir_when_unmeasured);

// ---------------------------------------------------------------- figures of merit

// serial / measured.
[[nodiscard]] double speedup(double serial_us, double measured_us);

// (serial - measured) / (serial - ideal) as a fraction: 1 = the ideal bound, 0 = no overlap at all.
// nullopt when the bound leaves no room to overlap (serial - ideal below 1 % of serial).
[[nodiscard]] std::optional<double> overlap_efficiency(double serial_us, double measured_us, double ideal_us);

// What a pipeline case reports from the serial, measured and ideal times of the same repetition.
struct pass_figures {
  double speedup = 0;
  double ideal_speedup = 0;
  std::optional<double> efficiency;  // a fraction; none for one stream (its bound is the serial time) or no room
};
[[nodiscard]] pass_figures figures_of_pass(double serial_us, double measured_us, double ideal_us, int streams);

// ---------------------------------------------------------------- verification

// Word i (32-bit, little-endian) of the input: the shared position-dependent pattern.
[[nodiscard]] std::uint32_t input_word(std::size_t word_index, std::uint32_t seed) noexcept;

// Up to this size every output word is checked; beyond it, a sample that still touches every
// chunk where errors land (its first and last 4 KiB: offsets, lengths, a chunk that never came
// back) plus one word in every 64 KiB, so checking 1 GiB costs milliseconds, not a second.
inline constexpr std::size_t full_check_bytes = std::size_t{32} << 20;

// Ascending word indices to check for this chunking of `bytes`.
[[nodiscard]] std::vector<std::size_t> words_to_check(const std::vector<chunk>& chunks, std::size_t bytes);

struct word_mismatch {
  std::size_t index = 0;
  std::uint32_t expected = 0;
  std::uint32_t found = 0;
};

// The first checked word of `output` that is not transform^iterations(input) for this salt.
[[nodiscard]] std::optional<word_mismatch> first_mismatch(const std::uint32_t* output, const std::vector<std::size_t>& words,
                                                          std::uint32_t seed, std::uint32_t iterations, std::uint32_t salt);

}  // namespace hdb::overlap
