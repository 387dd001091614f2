// The overlap family's pipelines, movement-tax variants and calibration (see pipeline.hpp).
//
// Timed: device time from CUDA events around whole passes (time_batch). Queueable work (pinned
// copies, kernels, graph launches) waits behind the spin gate while it is enqueued, so enqueue
// cost is excluded; work that blocks the host (pageable copies, a host sync per chunk, a CPU loop)
// runs between its events as a program would run it, so host time inside it is included.
// Excluded: allocation, pinning, pattern fill, graph capture and instantiation, verification.
// Bytes: a pass of N bytes copies N in, transforms N, copies N out.
#include "pipeline.hpp"

#include "transform.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/util/stats.hpp"
#include "hdb/util/units.hpp"
#include "hdb/host_pattern.hpp"
#include "hdb/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <span>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace hdb::overlap {

std::string_view to_string(issue_mode mode) noexcept {
  switch (mode) {
    case issue_mode::nonblocking: return "nonblocking";
    case issue_mode::legacy_default: return "legacy_default";
    case issue_mode::per_thread_default: return "per_thread_default";
    case issue_mode::host_sync: return "host_sync";
    case issue_mode::graph: return "graph";
  }
  return "?";
}

std::string_view to_string(tax_variant variant) noexcept {
  switch (variant) {
    case tax_variant::resident: return "resident";
    case tax_variant::round_trip: return "round_trip";
    case tax_variant::host_generated: return "host_generated";
    case tax_variant::device_generated: return "device_generated";
  }
  return "?";
}

std::uint32_t next_salt() noexcept {
  static std::atomic<std::uint32_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

namespace {

std::byte* bytes_of(void* p) { return static_cast<std::byte*>(p); }

// Ordering-only events: no timestamps, so recording them costs the least.
event sync_event(int device) { return event(device, cudaEventDisableTiming); }

double us_of(const batch_timing& t) { return t.max_ms * 1e3; }

}  // namespace

// ---------------------------------------------------------------- buffers

pipeline_buffers::pipeline_buffers(int device_index, host_kind host, std::size_t size)
    : device(device_index), kind(host), bytes(size), input(host, size), output(host, size), data(device_index, size) {
  const device_scope on(device);
  const stream s;
  fill_input(bytes, s.get());
}

void pipeline_buffers::fill_input(std::size_t n, cudaStream_t stream) const {
  if (device_accessible(kind)) {
    kernels::fill_pattern(input.device_ptr(), n, input_seed, stream);
    HDB_CUDA_CALL(cudaStreamSynchronize(stream));
  } else {
    fill_pattern_host(input.data(), n, input_seed);
  }
}

void pipeline_buffers::verify_output(const std::vector<chunk>& chunks, std::size_t n, std::uint32_t iterations,
                                     std::uint32_t salt) const {
  const auto bad = first_mismatch(static_cast<const std::uint32_t*>(output.data()), words_to_check(chunks, n), input_seed,
                                  iterations, salt);
  if (bad) {
    throw std::runtime_error("verification failed: output word " + std::to_string(bad->index) + " (byte " +
                             std::to_string(bad->index * 4) + ") is " + std::to_string(bad->found) + ", expected " +
                             std::to_string(bad->expected) + " (the input transformed " + std::to_string(iterations) +
                             " times)");
  }
}

// ---------------------------------------------------------------- pipeline

struct pipeline::graph_state {
  explicit graph_state(int device) : fork(sync_event(device)) {}
  event fork;
  std::vector<event> joins;
  graph_handle graph;
  graph_exec_handle exec;
};

pipeline::pipeline(const pipeline_config& config, std::shared_ptr<const pipeline_buffers> buffers, spin_gate& gate)
    : config_(config),
      buffers_(std::move(buffers)),
      chunks_(split_into_chunks(buffers_->bytes, config.chunks)),
      salt_(next_salt()) {
  if (config_.streams < 1) throw std::invalid_argument("a pipeline needs at least one stream");
  const bool blocking = config_.mode == issue_mode::legacy_default || config_.mode == issue_mode::per_thread_default;
  const int device = buffers_->device;
  for (int i = 0; i < config_.streams; ++i) lanes_.emplace_back(device, blocking ? cudaStreamDefault : cudaStreamNonBlocking);
  for (const auto& lane : lanes_) batch_streams_.push_back(lane.get());
  if (blocking) {
    separate_kernel_stream_ = true;
    kernel_stream_ = config_.mode == issue_mode::legacy_default ? cudaStreamLegacy : cudaStreamPerThread;
    batch_streams_.push_back(kernel_stream_);
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
      ready_.push_back(sync_event(device));
      done_.push_back(sync_event(device));
    }
  }
  if (config_.mode == issue_mode::graph) {
    if (!device_accessible(buffers_->kind)) throw std::invalid_argument("a CUDA graph cannot capture pageable copies");
    capture_graph();
    batch_streams_.resize(1);  // one launch on the first lane; the graph forks and joins the others
  }
  static_cast<void>(run(gate));  // warm-up: first use of streams, graph upload, page touch
  verify();
}

pipeline::~pipeline() = default;

bool pipeline::queueable() const noexcept {
  return device_accessible(buffers_->kind) && config_.mode != issue_mode::host_sync;
}

void pipeline::enqueue(const std::vector<event>* marks) const {
  const auto mark = [marks](std::size_t slot, cudaStream_t s) {
    if (marks != nullptr) (*marks)[slot].record(s);
  };
  auto* const input = bytes_of(buffers_->input.data());
  auto* const output = bytes_of(buffers_->output.data());
  auto* const device = bytes_of(buffers_->data.data());
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    const chunk& c = chunks_[i];
    const cudaStream_t lane = lanes_[static_cast<std::size_t>(stream_of_chunk(static_cast<int>(i), config_.streams))].get();
    mark(6 * i + 0, lane);
    HDB_CUDA_CALL(cudaMemcpyAsync(device + c.offset, input + c.offset, c.bytes, cudaMemcpyHostToDevice, lane));
    mark(6 * i + 1, lane);
    cudaStream_t compute = lane;
    if (separate_kernel_stream_) {
      // Explicit dependencies make the result right under either default-stream semantics; what
      // differs is only the implicit synchronisation the legacy stream adds on top.
      HDB_CUDA_CALL(cudaEventRecord(ready_[i].get(), lane));
      HDB_CUDA_CALL(cudaStreamWaitEvent(kernel_stream_, ready_[i].get(), 0));
      compute = kernel_stream_;
    }
    mark(6 * i + 2, compute);
    launch_transform(device + c.offset, c.bytes / 4, config_.iterations, salt_, compute);
    mark(6 * i + 3, compute);
    if (separate_kernel_stream_) {
      HDB_CUDA_CALL(cudaEventRecord(done_[i].get(), compute));
      HDB_CUDA_CALL(cudaStreamWaitEvent(lane, done_[i].get(), 0));
    }
    mark(6 * i + 4, lane);
    HDB_CUDA_CALL(cudaMemcpyAsync(output + c.offset, device + c.offset, c.bytes, cudaMemcpyDeviceToHost, lane));
    mark(6 * i + 5, lane);
    if (config_.mode == issue_mode::host_sync) HDB_CUDA_CALL(cudaStreamSynchronize(lane));
  }
}

void pipeline::capture_graph() {
  const int device = buffers_->device;
  graph_ = std::make_unique<graph_state>(device);
  for (std::size_t i = 1; i < lanes_.size(); ++i) graph_->joins.push_back(sync_event(device));
  const cudaStream_t origin = lanes_[0].get();
  graph_->graph = hdb::capture_graph(origin, [&] {
    HDB_CUDA_CALL(cudaEventRecord(graph_->fork.get(), origin));
    for (std::size_t i = 1; i < lanes_.size(); ++i) HDB_CUDA_CALL(cudaStreamWaitEvent(lanes_[i].get(), graph_->fork.get(), 0));
    enqueue(nullptr);
    for (std::size_t i = 1; i < lanes_.size(); ++i) {
      HDB_CUDA_CALL(cudaEventRecord(graph_->joins[i - 1].get(), lanes_[i].get()));
      HDB_CUDA_CALL(cudaStreamWaitEvent(origin, graph_->joins[i - 1].get(), 0));
    }
  });
  graph_->exec = instantiate(graph_->graph);
}

double pipeline::run(spin_gate& gate) const {
  spin_gate* const held_by = queueable() ? &gate : nullptr;
  if (graph_) {
    return us_of(time_batch(batch_streams_, held_by,
                            [this] { HDB_CUDA_CALL(cudaGraphLaunch(graph_->exec.get(), lanes_[0].get())); }));
  }
  return us_of(time_batch(batch_streams_, held_by, [this] { enqueue(nullptr); }));
}

timeline pipeline::run_with_timeline(spin_gate& gate) const {
  if (config_.mode != issue_mode::nonblocking) throw std::logic_error("timelines are recorded for the nonblocking pipeline");
  const event origin;
  const std::vector<event> marks(6 * chunks_.size());
  const cudaStream_t first = lanes_[0].get();
  timeline out;
  // The other lanes wait for time_batch's start event, recorded on the first lane just before the
  // origin, not for the origin itself: an operation on another lane can start up to one event
  // record before the origin, so its start may read a fraction of a microsecond below zero.
  out.total_us = us_of(time_batch(batch_streams_, queueable() ? &gate : nullptr, [&] {
    origin.record(first);
    enqueue(&marks);
  }));
  const auto at = [&](std::size_t slot) { return elapsed_ms(origin, marks[slot]) * 1e3; };
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    out.chunks.push_back({{at(6 * i), at(6 * i + 1)}, {at(6 * i + 2), at(6 * i + 3)}, {at(6 * i + 4), at(6 * i + 5)}});
  }
  return out;
}

void pipeline::verify() const { buffers_->verify_output(chunks_, buffers_->bytes, config_.iterations, salt_); }

// ---------------------------------------------------------------- bound probe

bound_probe::bound_probe(std::shared_ptr<const pipeline_buffers> buffers, const std::vector<chunk>& chunks,
                         std::uint32_t iterations, spin_gate& gate)
    : buffers_(std::move(buffers)),
      plan_(plan_probe(chunks, buffers_->bytes)),
      iterations_(iterations),
      up_(buffers_->device),
      down_(buffers_->device) {
  static_cast<void>(run(gate));  // warm-up: first use of the probe's streams
}

probe_times bound_probe::run(spin_gate& gate) const {
  const bool pinned = device_accessible(buffers_->kind);
  spin_gate* const copies_held_by = pinned ? &gate : nullptr;
  auto* const input = bytes_of(buffers_->input.data());
  auto* const output = bytes_of(buffers_->output.data());
  auto* const device = bytes_of(buffers_->data.data());
  const std::size_t n = plan_.op_bytes;
  const auto h2d = [&](std::size_t j, cudaStream_t s) {
    const std::size_t at = plan_.h2d_offsets[j];
    HDB_CUDA_CALL(cudaMemcpyAsync(device + at, input + at, n, cudaMemcpyHostToDevice, s));
  };
  const auto d2h = [&](std::size_t j, cudaStream_t s) {
    const std::size_t at = plan_.d2h_offsets[j];
    HDB_CUDA_CALL(cudaMemcpyAsync(output + at, device + at, n, cudaMemcpyDeviceToHost, s));
  };
  const auto each_op = [&](const std::function<void(std::size_t)>& op) {
    for (std::size_t j = 0; j < static_cast<std::size_t>(plan_.ops); ++j) op(j);
  };
  const cudaStream_t one[] = {up_.get()};
  const cudaStream_t two[] = {up_.get(), down_.get()};
  probe_times t;
  t.h2d_us = us_of(time_batch(one, copies_held_by, [&] { each_op([&](std::size_t j) { h2d(j, up_.get()); }); }));
  t.d2h_us = us_of(time_batch(one, copies_held_by, [&] { each_op([&](std::size_t j) { d2h(j, up_.get()); }); }));
  if (pinned) {
    t.bidir_us = us_of(time_batch(two, &gate, [&] {
      each_op([&](std::size_t j) {
        h2d(j, up_.get());
        d2h(j, down_.get());
      });
    }));
  }
  t.kernel_us = us_of(time_batch(one, &gate, [&] {
    each_op([&](std::size_t j) { launch_transform(device + plan_.h2d_offsets[j], n / 4, iterations_, 0, up_.get()); });
  }));
  return t;
}

// ---------------------------------------------------------------- movement tax

movement_tax::movement_tax(tax_variant variant, std::size_t bytes, std::uint32_t iterations,
                           std::shared_ptr<const pipeline_buffers> buffers, spin_gate& gate)
    : variant_(variant), bytes_(bytes), iterations_(iterations), salt_(next_salt()), buffers_(std::move(buffers)) {
  if (bytes_ > buffers_->bytes || bytes_ % chunk_alignment != 0 || bytes_ == 0) {
    throw std::invalid_argument("movement tax: " + std::to_string(bytes_) + " bytes do not fit the shared buffers");
  }
  if (!device_accessible(buffers_->kind)) throw std::invalid_argument("movement tax runs on pinned buffers");
  if (variant_ == tax_variant::resident) {
    kernels::fill_pattern(buffers_->data.data(), bytes_, input_seed, on_.get());
  }
  enqueue();
  HDB_CUDA_CALL(cudaStreamSynchronize(on_.get()));
  verify();
  static_cast<void>(run(gate));  // warm-up of the timed form
}

void movement_tax::enqueue() const {
  void* const device = buffers_->data.data();
  const std::size_t words = bytes_ / 4;
  switch (variant_) {
    case tax_variant::resident:
      break;
    case tax_variant::round_trip:
      HDB_CUDA_CALL(cudaMemcpyAsync(device, buffers_->input.data(), bytes_, cudaMemcpyHostToDevice, on_.get()));
      break;
    case tax_variant::host_generated:
      // The CPU writes the input while the device waits: the program that builds its data on the
      // host and ships it pays for both.
      fill_pattern_host(buffers_->input.data(), bytes_, input_seed);
      HDB_CUDA_CALL(cudaMemcpyAsync(device, buffers_->input.data(), bytes_, cudaMemcpyHostToDevice, on_.get()));
      break;
    case tax_variant::device_generated:
      kernels::fill_pattern(device, bytes_, input_seed, on_.get());
      break;
  }
  launch_transform(device, words, iterations_, salt_, on_.get());
  if (variant_ == tax_variant::round_trip) {
    HDB_CUDA_CALL(cudaMemcpyAsync(buffers_->output.data(), device, bytes_, cudaMemcpyDeviceToHost, on_.get()));
  }
}

void movement_tax::verify() const {
  if (variant_ != tax_variant::round_trip) {
    HDB_CUDA_CALL(cudaMemcpyAsync(buffers_->output.data(), buffers_->data.data(), bytes_, cudaMemcpyDeviceToHost, on_.get()));
    HDB_CUDA_CALL(cudaStreamSynchronize(on_.get()));
  }
  buffers_->verify_output(split_into_chunks(bytes_, 1), bytes_, iterations_, salt_);
}

double movement_tax::run(spin_gate& gate) const {
  const cudaStream_t streams[] = {on_.get()};
  const bool blocks_host = variant_ == tax_variant::host_generated;
  return us_of(time_batch(streams, blocks_host ? nullptr : &gate, [this] { enqueue(); }));
}

// ---------------------------------------------------------------- calibration

namespace {

// Median device time (us) of `samples` batches after one warm-up batch.
double median_batch_us(std::span<const cudaStream_t> streams, spin_gate* gate, const std::function<void()>& enqueue,
                       int samples) {
  static_cast<void>(time_batch(streams, gate, enqueue));
  std::vector<double> us;
  for (int i = 0; i < samples; ++i) us.push_back(us_of(time_batch(streams, gate, enqueue)));
  return median(us);
}


}  // namespace

device_calibration calibrate(std::size_t probe_bytes, spin_gate& gate) {
  constexpr int samples = 3;
  constexpr int copies = 4;  // per batch: enough that the gate release and event edges vanish
  device_calibration cal;
  cal.probe_bytes = probe_bytes;
  const double probe = static_cast<double>(probe_bytes);
  const stream s1;
  const stream s2;
  const cudaStream_t one[] = {s1.get()};
  const cudaStream_t two[] = {s1.get(), s2.get()};
  {
    const host_buffer in(host_kind::pinned, probe_bytes);
    const host_buffer out(host_kind::pinned, probe_bytes);
    const device_buffer a(probe_bytes);
    const device_buffer b(probe_bytes);
    kernels::fill_pattern(in.device_ptr(), probe_bytes, input_seed, s1.get());
    kernels::fill_pattern(b.data(), probe_bytes, input_seed, s1.get());
    HDB_CUDA_CALL(cudaStreamSynchronize(s1.get()));
    const auto h2d = [&](cudaStream_t s) { HDB_CUDA_CALL(cudaMemcpyAsync(a.data(), in.data(), probe_bytes, cudaMemcpyHostToDevice, s)); };
    const auto d2h = [&](cudaStream_t s) { HDB_CUDA_CALL(cudaMemcpyAsync(out.data(), b.data(), probe_bytes, cudaMemcpyDeviceToHost, s)); };
    cal.pinned.h2d_gbps = gb_per_s(copies * probe, median_batch_us(one, &gate, [&] { for (int i = 0; i < copies; ++i) h2d(s1.get()); }, samples));
    cal.pinned.d2h_gbps = gb_per_s(copies * probe, median_batch_us(one, &gate, [&] { for (int i = 0; i < copies; ++i) d2h(s1.get()); }, samples));
    cal.pinned.bidir_gbps = gb_per_s(2 * copies * probe, median_batch_us(two, &gate, [&] {
      for (int i = 0; i < copies; ++i) {
        h2d(s1.get());
        d2h(s2.get());
      }
    }, samples));

    // Kernel time is linear in the iterations per word: two points give the line, the line gives
    // each regime's iterations, and a third measurement at those iterations gives its real rate.
    constexpr std::uint32_t low = 64;
    constexpr std::uint32_t high = 1024;
    const auto kernel_us = [&](std::uint32_t iterations) {
      return median_batch_us(one, &gate, [&] { launch_transform(a.data(), probe_bytes / 4, iterations, 0, s1.get()); }, samples);
    };
    const double t_low = kernel_us(low);
    const double t_high = kernel_us(high);
    const double per_iteration = (t_high - t_low) / (high - low);
    const double fixed = t_low - low * per_iteration;
    const double copy_us = probe / (cal.pinned.h2d_gbps * 1e3);
    for (regime r : all_regimes) {
      regime_kernel& k = cal.regimes[static_cast<std::size_t>(r)];
      k.iterations = iterations_for(fixed, per_iteration, kernel_to_copy_ratio(r) * copy_us);
      k.kernel_gbps = gb_per_s(probe, kernel_us(k.iterations));
    }
  }
  {
    const host_buffer in(host_kind::pageable, probe_bytes);
    const host_buffer out(host_kind::pageable, probe_bytes);
    const device_buffer a(probe_bytes);
    fill_pattern_host(in.data(), probe_bytes, input_seed);
    std::memset(out.data(), 0, probe_bytes);  // touch every page: first-touch faults are not the link
    // Pageable copies block the host: no gate, one copy between each event pair.
    cal.pageable.h2d_gbps = gb_per_s(probe, median_batch_us(one, nullptr, [&] {
      HDB_CUDA_CALL(cudaMemcpyAsync(a.data(), in.data(), probe_bytes, cudaMemcpyHostToDevice, s1.get()));
    }, samples));
    cal.pageable.d2h_gbps = gb_per_s(probe, median_batch_us(one, nullptr, [&] {
      HDB_CUDA_CALL(cudaMemcpyAsync(out.data(), a.data(), probe_bytes, cudaMemcpyDeviceToHost, s1.get()));
    }, samples));
    cal.pageable.bidir_gbps = cal.pinned.bidir_gbps;
  }
  return cal;
}

}  // namespace hdb::overlap
