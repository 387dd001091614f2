#pragma once
// The overlap family's GPU side: the buffers a pipeline moves, the pipeline itself in every way of
// issuing it (the sweep, the stream-semantics pitfalls, a CUDA graph), its per-operation timeline,
// the probe that measures a pass's bound beside it, the movement-tax variants and the start-up
// calibration of link and kernel rates. Shared by the benchmark binary and its GPU tests. See
// overlap.cpp for what each case times.
#include "overlap_model.hpp"

#include "hdb/buffers.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace hdb::overlap {

// How a pipeline's chunks are issued. All but `graph` are the same loop over chunks
// (H2D -> kernel -> D2H of chunk i on stream i mod S); they differ in stream semantics.
enum class issue_mode {
  nonblocking,         // non-blocking streams, every stage on its chunk's stream (the sweep)
  legacy_default,      // blocking streams; the kernel stage on the legacy default stream, which
                       // implicitly waits for (and holds back) all work on blocking streams
  per_thread_default,  // the same code with the kernel stage on the per-thread default stream
                       // (what --default-stream per-thread makes of stream 0): no implicit sync
  host_sync,           // non-blocking streams; the host synchronises each chunk's stream before the next chunk
  graph,               // the nonblocking pipeline captured once into a CUDA graph, replayed by one launch
};

[[nodiscard]] std::string_view to_string(issue_mode mode) noexcept;

// Seed of the input pattern (hdb/pattern.hpp); the output is its transform.
inline constexpr std::uint32_t input_seed = 0x0F1A9u;

// A fresh salt for each pipeline object, so output left by an earlier one never verifies.
[[nodiscard]] std::uint32_t next_salt() noexcept;

// Host input (holding the pattern), host output and the device buffer chunks pass through, of one
// (device, host kind, size). Allocating and pinning 1 GiB takes about as long as the cases that
// use it, so every case of that triple shares one set.
struct pipeline_buffers {
  pipeline_buffers(int device, host_kind kind, std::size_t bytes);

  int device;
  host_kind kind;
  std::size_t bytes;
  host_buffer input;
  host_buffer output;
  device_buffer data;  // transformed in place

  // Writes the pattern into the first `bytes` of the input: on the device for pinned memory,
  // with a CPU loop for pageable memory.
  void fill_input(std::size_t bytes, cudaStream_t stream) const;
  // Throws std::runtime_error naming the first output word (of the first `bytes`) that is not the
  // transform of the input for (iterations, salt).
  void verify_output(const std::vector<chunk>& chunks, std::size_t bytes, std::uint32_t iterations,
                     std::uint32_t salt) const;
};

struct pipeline_config {
  issue_mode mode = issue_mode::nonblocking;
  int streams = 1;
  int chunks = 1;
  std::uint32_t iterations = 1;  // kernel steps per 32-bit word (the regime)
};

// Start and end of one operation, microseconds after the pipeline's origin event.
struct op_span {
  double start_us = 0;
  double end_us = 0;
};
struct chunk_timeline {
  op_span h2d;
  op_span kernel;
  op_span d2h;
};
struct timeline {
  std::vector<chunk_timeline> chunks;
  double total_us = 0;  // the origin to the last stream's end
};

// Streams, events (and graph) of one pipeline configuration over shared buffers. Construction
// (outside any timing) captures and instantiates the graph, runs one warm-up pass and verifies
// its output; a pipeline that exists has produced the right bytes.
class pipeline {
 public:
  pipeline(const pipeline_config& config, std::shared_ptr<const pipeline_buffers> buffers, spin_gate& gate);
  ~pipeline();
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  // Device time of one pass in us, from an event before the first operation to the last stream's
  // end. Queueable pipelines wait behind the spin gate while enqueued; the others (pageable
  // copies, a host sync per chunk) block the host, so their time includes what the host did.
  [[nodiscard]] double run(spin_gate& gate) const;
  // One pass with an event before and after every operation (nonblocking mode only).
  [[nodiscard]] timeline run_with_timeline(spin_gate& gate) const;
  void verify() const;

  [[nodiscard]] bool queueable() const noexcept;
  [[nodiscard]] const std::vector<chunk>& chunks() const noexcept { return chunks_; }

 private:
  struct graph_state;

  void enqueue(const std::vector<event>* marks) const;
  void capture_graph();

  pipeline_config config_;
  std::shared_ptr<const pipeline_buffers> buffers_;
  std::vector<chunk> chunks_;
  std::uint32_t salt_;
  std::vector<stream> lanes_;
  cudaStream_t kernel_stream_ = nullptr;  // legacy / per-thread default stream, when used
  bool separate_kernel_stream_ = false;
  std::vector<event> ready_;  // h2d done -> kernel may start (separate kernel stream)
  std::vector<event> done_;   // kernel done -> d2h may start
  std::vector<cudaStream_t> batch_streams_;
  std::unique_ptr<graph_state> graph_;
};

// ---------------------------------------------------------------- the bound probe

// The rates a pass's bound needs, measured over the pass's own buffers with operations of its
// chunk size (plan_probe in overlap_model.hpp): per run one batch each of H2D alone, D2H alone,
// both directions at once on two streams (pinned memory only) and the regime's kernel. A pipeline
// case runs it right after every timed pass, so a repetition's bound sees the link in the state
// its pass saw. Pinned batches wait behind the gate; pageable copies block the host, so they run
// between their events as the pageable pass runs them. Construction runs one warm-up probe.
// The probe's copies and kernels overwrite the pass's device data and host output (never its
// input): a pipeline over the same buffers verifies only before the probe first runs.
class bound_probe {
 public:
  bound_probe(std::shared_ptr<const pipeline_buffers> buffers, const std::vector<chunk>& chunks, std::uint32_t iterations,
              spin_gate& gate);
  [[nodiscard]] probe_times run(spin_gate& gate) const;
  [[nodiscard]] const probe_plan& plan() const noexcept { return plan_; }

 private:
  std::shared_ptr<const pipeline_buffers> buffers_;
  probe_plan plan_;
  std::uint32_t iterations_;
  stream up_;
  stream down_;
};

// ---------------------------------------------------------------- the movement tax

// The same kernel over the same bytes, paying for data movement or not.
enum class tax_variant {
  resident,          // kernel alone; the data already lives on the device
  round_trip,        // H2D before and D2H after every call
  host_generated,    // the input written by a CPU loop into host memory, then H2D, then the kernel
  device_generated,  // the input written by a kernel on the device, then the kernel
};
[[nodiscard]] std::string_view to_string(tax_variant variant) noexcept;
inline constexpr tax_variant all_tax_variants[] = {tax_variant::resident, tax_variant::round_trip,
                                                   tax_variant::host_generated, tax_variant::device_generated};

// One variant over the first `bytes` of pinned buffers; construction runs and verifies one call.
class movement_tax {
 public:
  movement_tax(tax_variant variant, std::size_t bytes, std::uint32_t iterations,
               std::shared_ptr<const pipeline_buffers> buffers, spin_gate& gate);
  // Device time of one call in us (the CPU loop of host_generated runs between its events).
  [[nodiscard]] double run(spin_gate& gate) const;

 private:
  void enqueue() const;
  void verify() const;

  tax_variant variant_;
  std::size_t bytes_;
  std::uint32_t iterations_;
  std::uint32_t salt_;
  std::shared_ptr<const pipeline_buffers> buffers_;
  stream on_;
};

// ---------------------------------------------------------------- calibration

struct link_rates {
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  double bidir_gbps = 0;  // both directions at once, summed (pageable: the pinned figure)
};

struct regime_kernel {
  std::uint32_t iterations = 1;
  double kernel_gbps = 0;  // measured at these iterations on resident data
};

// Measured once per device and process: each regime's kernel iterations (the work per byte every
// pipeline of the regime then runs), the start-up link rates reported by the calibration cases, and
// the two-way cap of pageable bounds (pageable memory cannot be probed in both directions at once).
struct device_calibration {
  std::size_t probe_bytes = 0;
  link_rates pinned;
  link_rates pageable;
  std::array<regime_kernel, 3> regimes{};  // indexed by regime

  [[nodiscard]] const regime_kernel& kernel(regime r) const { return regimes[static_cast<std::size_t>(r)]; }
};

// On the current device, with copies and kernels of `probe_bytes`: one-way pinned and pageable
// copy rates, the pinned bidirectional rate, and for each regime the iterations per word whose
// kernel time is kernel_to_copy_ratio x the pinned H2D time of the same bytes.
[[nodiscard]] device_calibration calibrate(std::size_t probe_bytes, spin_gate& gate);

}  // namespace hdb::overlap
