#pragma once
// The sync family: what waiting costs. Shared by the benchmark binary and its GPU tests (which
// check that dependent kernels really order their work and that each scheduling mode takes
// effect in its child). See sync.cpp and wakeup.cpp for what is timed.
#include "sync_math.hpp"

#include "hdb/buffers.hpp"
#include "hdb/family.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::sync {

// ---- clocks ------------------------------------------------------------------------------

// steady_clock (CLOCK_MONOTONIC) in ns: the host clock every host-side figure uses.
[[nodiscard]] std::int64_t host_now_ns() noexcept;
// CPU time consumed so far by the calling thread / by the whole process (all threads), in us.
[[nodiscard]] double thread_cpu_us();
[[nodiscard]] double process_cpu_us();

// Ping-pongs with a one-thread kernel on `stream` through mapped host memory and returns the
// offset of %globaltimer against host_now_ns() from the round trip with the smallest RTT.
[[nodiscard]] clock_offset calibrate_device_clock(cudaStream_t stream, int rounds = 64);

// ---- scheduling modes (wakeup.cpp) -------------------------------------------------------

// In the child: initialise `request.device` with the mode's flag (before any other CUDA call of
// the process), measure every wait_api and return the report.
[[nodiscard]] child_report measure_in_child(const child_request& request);
// In the parent: run `executable` with child_arguments(request), inheriting the environment
// (NCCL_NVLS_ENABLE=0 and friends stay set), and parse what it prints. Throws with the child's
// exit status when it fails; kills it (by its pid) after `timeout_s`.
[[nodiscard]] child_report run_child(const std::string& executable, const child_request& request, int timeout_s = 120);

// ---- dependent kernels (sync.cpp) --------------------------------------------------------

// How a consumer kernel is made to wait for its producer.
enum class dependency {
  same_stream,        // stream order
  stream_wait_event,  // cudaStreamWaitEvent on another stream: no host involvement
  host_sync,          // cudaStreamSynchronize(producer's stream), then launch on another stream
  none,               // no ordering at all: the control that shows the check can fail (tests only)
};
[[nodiscard]] std::string_view to_string(dependency d) noexcept;

struct dependency_result {
  std::vector<double> gap_us;                 // consumer start - producer end, device clock, per pair
  std::vector<std::size_t> producer_stream;   // per pair: which of the fixture's streams produced
  unsigned long long mismatches = 0;  // words the consumers read that were not what the producer wrote
};

// `stream_count` streams, a 64 KiB device buffer, and mapped slots for the producer's end and the
// consumer's start, on the current device. Pair i produces on stream i % stream_count and, across
// streams, consumes on the next one: the gap depends on the stream (an H200 resolves it in 1.78-1.84
// us on some streams and 1.91-1.96 us on others), so one pair of streams would measure whichever
// level it happened to get.
class dependency_fixture {
 public:
  dependency_fixture(std::uint64_t producer_spin_ns, std::size_t stream_count);
  [[nodiscard]] std::size_t stream_count() const noexcept { return streams_.size(); }
  // `pairs` producer/consumer pairs, each with a fresh seed, each pair finished before the next.
  [[nodiscard]] dependency_result run(dependency how, int pairs);

 private:
  std::uint64_t producer_spin_ns_;
  std::vector<stream> streams_;
  event produced_;
  device_buffer data_;
  device_buffer mismatches_;
  host_buffer stamps_;  // [0] producer end, [1] consumer start
  std::uint32_t next_seed_ = 1;
};

// ---- the sync trap (sync.cpp) -------------------------------------------------------------

// What a trap loop does every k-th step: copy the value to pageable memory and wait (`.item()`),
// only wait, keep it on the GPU and copy the whole history once at the end (k ignored), or copy
// it asynchronously to a pinned ring and check it a few read-backs later.
enum class trap_api { readback_pageable, sync_only, keep_on_gpu, readback_async };
[[nodiscard]] std::string_view to_string(trap_api a) noexcept;

// One stream and every buffer the loop variants need, with the step kernel's spin calibrated
// so one step takes the target time on the device, back to back. The calibration times steps
// queued behind the spin gate: timed as they are launched, a step can never look shorter than
// one launch, and on a VM whose launches cost about as much as the target (4.7 us against 5 us)
// the correction drove the spin towards zero while the events still read the launch rate.
class trap_fixture {
 public:
  trap_fixture(std::int64_t target_ns, std::size_t steps, spin_gate& gate);
  // Device time of one step as calibrated (events, behind the gate).
  [[nodiscard]] double step_kernel_us() const { return step_kernel_us_; }
  // Host time (us) of a loop of `steps` steps reading back every `every` steps (`never`: none),
  // launch of the first step to the last result in host memory; verifies every value it read.
  [[nodiscard]] double run(trap_api api, int every);

 private:
  [[nodiscard]] std::int64_t measure_step_ns();

  spin_gate& gate_;
  stream s_;
  std::size_t steps_;
  std::vector<std::uint32_t> expected_;
  device_buffer accumulator_;
  device_buffer history_;
  host_buffer value_;
  host_buffer history_host_;
  host_buffer ring_;
  std::vector<event> ring_events_;
  std::int64_t spin_ns_ = 0;
  double step_kernel_us_ = 0;
};

// The value of a family flag that holds one whole number >= 1 (checked before any CUDA call).
[[nodiscard]] int single_int_flag(const run_options& options, const char* flag);

[[nodiscard]] family_spec family();

}  // namespace hdb::sync
