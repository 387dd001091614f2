// hdbench-sync: what waiting costs.
//
// Timed, per case kind (docs/methodology.md summarises them; every metric was derived in git show 47ce745:docs/sync.md):
// - sync_cost: host clock around one sync call on work that already finished (seen only by stream
//   syncs, and after a device sync retired it); median (and p10/p90) of --sync-calls calls after a
//   warm-up; the same calls in three bare child processes beside it (sync_cost.cpp).
// - wait_for_need: work on two streams (200 us, event, 400 us on one; 1000 us on the other); host
//   clock from the sync call to its return, and from the awaited kernel's end (%globaltimer,
//   calibrated to the host clock) to the return.
// - dependency: a producer kernel writes a buffer, a consumer on another stream reads and checks
//   it; the gap between the producer's last act and the consumer's first act, both %globaltimer
//   (one device clock, no calibration needed), per producer stream of 32; the fastest stream's.
// - launch / graph: host clock around launches of an empty kernel (no sync), around launch +
//   cudaStreamSynchronize, and around K launches vs one graph launch of K kernels until the
//   stream is idle; graph instantiation timed on its own; device time of the K kernels from events.
// - trap: host clock around a loop of --trap-steps ~5 us kernels with a 4-byte read-back every k
//   steps (or only a stream sync, or one copy at the end, or asynchronous read-backs), against the
//   loop that never reads back, run alternately in the same repetition; the fastest of each.
// Excluded: stream/event/graph creation, buffer allocation, verification of what was read.
// Bytes: none counted; these are times and ratios.
#include "sync.hpp"

#include "sync_cost.hpp"
#include "sync_kernels.hpp"
#include "wakeup.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/measure.hpp"
#include "hdb/sizes.hpp"
#include "hdb/timing.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace hdb::sync {

std::string_view to_string(dependency d) noexcept {
  switch (d) {
    case dependency::same_stream: return "same_stream";
    case dependency::stream_wait_event: return "cudaStreamWaitEvent";
    case dependency::host_sync: return "host_sync_then_launch";
    case dependency::none: return "none";
  }
  return "?";
}

namespace {
constexpr std::size_t dependency_words = 8192;  // 64 KiB
}  // namespace

dependency_fixture::dependency_fixture(std::uint64_t producer_spin_ns, std::size_t stream_count)
    : producer_spin_ns_(producer_spin_ns),
      streams_(std::max<std::size_t>(stream_count, 2)),
      produced_(current_device(), cudaEventDisableTiming),
      data_(dependency_words * sizeof(std::uint64_t)),
      mismatches_(sizeof(unsigned long long)),
      stamps_(host_kind::mapped, 2 * sizeof(std::uint64_t)) {
  HDB_CUDA_CALL(cudaMemset(data_.data(), 0, data_.size()));
}

dependency_result dependency_fixture::run(dependency how, int pairs) {
  const stream& first = streams_.front();
  HDB_CUDA_CALL(cudaMemsetAsync(mismatches_.data(), 0, mismatches_.size(), first.get()));
  first.synchronize();
  auto* stamps = static_cast<std::uint64_t*>(stamps_.data());
  auto* device_stamps = static_cast<std::uint64_t*>(stamps_.device_ptr());
  auto* data = static_cast<std::uint64_t*>(data_.data());
  auto* mismatches = static_cast<unsigned long long*>(mismatches_.data());
  dependency_result result;
  for (int i = 0; i < pairs; ++i) {
    const std::uint32_t seed = next_seed_++;
    stamps[0] = stamps[1] = 0;
    const std::size_t p = static_cast<std::size_t>(i) % streams_.size();
    const stream& producer = streams_[p];
    const stream& consumer = how == dependency::same_stream ? producer : streams_[(p + 1) % streams_.size()];
    device::produce(data, dependency_words, seed, producer_spin_ns_, device_stamps, producer.get());
    if (how == dependency::stream_wait_event) {
      HDB_CUDA_CALL(cudaEventRecord(produced_.get(), producer.get()));
      HDB_CUDA_CALL(cudaStreamWaitEvent(consumer.get(), produced_.get(), 0));
    } else if (how == dependency::host_sync) {
      producer.synchronize();
    }
    device::consume(data, dependency_words, seed, mismatches, device_stamps + 1, consumer.get());
    producer.synchronize();
    consumer.synchronize();
    const auto end = static_cast<std::int64_t>(std::atomic_ref<std::uint64_t>(stamps[0]).load());
    const auto start = static_cast<std::int64_t>(std::atomic_ref<std::uint64_t>(stamps[1]).load());
    if (end == 0 || start == 0) throw std::runtime_error("dependency: a kernel's timestamp is missing after both streams finished");
    result.gap_us.push_back(static_cast<double>(start - end) / 1e3);
    result.producer_stream.push_back(p);
  }
  HDB_CUDA_CALL(cudaMemcpy(&result.mismatches, mismatches, sizeof(result.mismatches), cudaMemcpyDeviceToHost));
  return result;
}

namespace {

double elapsed_us(std::int64_t from_ns, std::int64_t to_ns) { return static_cast<double>(to_ns - from_ns) / 1e3; }

// ---- sync_cost -----------------------------------------------------------------------------

// The family's figure in both work states, and bare processes' beside it: the cross-check that
// the family's own state (its start-up, its other cases, Google Benchmark) adds nothing to a sync
// call. The bare children run once per GPU, for the first sync_cost case (a process start costs
// ~0.3 s); their figures are a reference, not a repetition.
void measure_sync_cost(benchmark::State& state, sync_call call, int device, int calls, std::optional<bare_figures>& bare) {
  const spread completed = time_sync_calls(call, work_state::completed, calls);
  const spread retired = time_sync_calls(call, work_state::retired, calls);
  if (!bare) bare = bare_call_times("/proc/self/exe", device, calls);
  const bare_figure& b = bare->at(call);
  for (auto _ : state) state.SetIterationTime(completed.median / 1e6);
  state.counters["call_time"] = completed.median;
  state.counters["call_time_p10"] = completed.p10;
  state.counters["call_time_p90"] = completed.p90;
  state.counters["call_time_retired"] = retired.median;
  state.counters["bare_call_time"] = b.median;
  state.counters["bare_call_time_low"] = b.low;
  state.counters["bare_call_time_high"] = b.high;
}

// ---- wait_for_need -------------------------------------------------------------------------

enum class need_wait { event, stream, device };

std::string_view to_string(need_wait w) {
  switch (w) {
    case need_wait::event: return "cudaEventSynchronize";
    case need_wait::stream: return "cudaStreamSynchronize";
    case need_wait::device: return "cudaDeviceSynchronize";
  }
  return "?";
}

// Stream A: needed kernel, event, more work; stream B: unrelated longer work.
constexpr std::uint64_t needed_ns = 200'000;
constexpr std::uint64_t after_needed_ns = 400'000;
constexpr std::uint64_t other_stream_ns = 1'000'000;
constexpr int need_samples = 10;

void measure_wait_for_need(benchmark::State& state, need_wait how) {
  const stream a;
  const stream b;
  const event needed(a.device(), cudaEventDisableTiming);
  const host_buffer stamps(host_kind::mapped, 3 * sizeof(std::uint64_t));
  auto* host_stamps = static_cast<std::uint64_t*>(stamps.data());
  auto* device_stamps = static_cast<std::uint64_t*>(stamps.device_ptr());
  const auto sample = [&] {
    std::memset(host_stamps, 0, 3 * sizeof(std::uint64_t));
    device::delay_then_stamp(needed_ns, device_stamps, a.get());
    HDB_CUDA_CALL(cudaEventRecord(needed.get(), a.get()));
    device::delay_then_stamp(after_needed_ns, device_stamps + 1, a.get());
    device::delay_then_stamp(other_stream_ns, device_stamps + 2, b.get());
    const std::int64_t call = host_now_ns();
    switch (how) {
      case need_wait::event: HDB_CUDA_CALL(cudaEventSynchronize(needed.get())); break;
      case need_wait::stream: HDB_CUDA_CALL(cudaStreamSynchronize(a.get())); break;
      case need_wait::device: HDB_CUDA_CALL(cudaDeviceSynchronize()); break;
    }
    const std::int64_t resumed = host_now_ns();
    HDB_CUDA_CALL(cudaDeviceSynchronize());
    const auto stamp = [&](int i) { return static_cast<std::int64_t>(std::atomic_ref<std::uint64_t>(host_stamps[i]).load()); };
    const std::int64_t awaited = how == need_wait::event    ? stamp(0)
                                 : how == need_wait::stream ? stamp(1)
                                                            : std::max(stamp(1), stamp(2));
    return wait_sample{call, resumed, awaited, 0, 0};
  };
  static_cast<void>(sample());  // warm-up
  const clock_offset before = calibrate_device_clock(a.get());
  std::vector<wait_sample> samples;
  for (int i = 0; i < need_samples; ++i) samples.push_back(sample());
  const clock_map clock(before, calibrate_device_clock(a.get()));
  const wait_summary summary = summarize_waits(samples, clock);
  for (auto _ : state) state.SetIterationTime(summary.wait_us / 1e6);
  state.counters["wait_time"] = summary.wait_us;
  state.counters["resume_delay"] = summary.wakeup_us.median;
  state.counters["clock_uncertainty"] = clock.uncertainty_us();
}

// ---- dependency ----------------------------------------------------------------------------

constexpr int dependency_pairs = 4000;
// An H200 process gave its first 16 streams one gap level and the next 24 the other; 32 streams
// give each level its own streams in every process seen, 125 pairs each per repetition.
constexpr std::size_t dependency_streams = 32;

// The producer spins long enough that the host has queued the consumer before it ends, so the
// gap is the device resolving the dependency, not a launch arriving late. One fixture serves every
// repetition and every dependency case of a GPU, so they all measure the same streams.
void measure_dependency(benchmark::State& state, dependency_fixture& fixture, dependency how) {
  static_cast<void>(fixture.run(how, static_cast<int>(fixture.stream_count())));  // warm-up: each stream once
  const dependency_result result = fixture.run(how, dependency_pairs);
  if (result.mismatches != 0) {
    throw std::runtime_error("dependency " + std::string(to_string(how)) + ": the consumer read " +
                             std::to_string(result.mismatches) + " words the producer had not written yet");
  }
  const spread gap = summarize(result.gap_us);
  // Gaps are a few %globaltimer ticks (32 ns) long: the interquartile mean, not the median, so a
  // repetition does not jump a whole tick.
  const std::vector<double> by_stream =
      interquartile_means_by_group(result.gap_us, result.producer_stream, fixture.stream_count());
  const double fastest = *std::ranges::min_element(by_stream);
  for (auto _ : state) state.SetIterationTime(std::max(fastest, 0.0) / 1e6);
  state.counters["gap"] = fastest;
  state.counters["gap_slowest"] = *std::ranges::max_element(by_stream);
  state.counters["gap_p10"] = gap.p10;
  state.counters["gap_p90"] = gap.p90;
}

// ---- launch --------------------------------------------------------------------------------

constexpr int launches_per_batch = 100;
constexpr int launch_batches = 50;
constexpr int round_trips = 200;

void measure_launch(benchmark::State& state) {
  const stream s;
  for (int i = 0; i < launches_per_batch; ++i) device::empty(s.get());
  s.synchronize();
  std::vector<double> per_launch;
  for (int b = 0; b < launch_batches; ++b) {
    const std::int64_t start = host_now_ns();
    for (int i = 0; i < launches_per_batch; ++i) device::empty(s.get());
    per_launch.push_back(elapsed_us(start, host_now_ns()) / launches_per_batch);
    s.synchronize();
  }
  std::vector<double> round_trip;
  for (int i = 0; i < round_trips; ++i) {
    const std::int64_t start = host_now_ns();
    device::empty(s.get());
    s.synchronize();
    round_trip.push_back(elapsed_us(start, host_now_ns()));
  }
  const spread launch = summarize(per_launch);
  const spread sync = summarize(round_trip);
  for (auto _ : state) state.SetIterationTime(launch.median / 1e6);
  state.counters["launch_time"] = launch.median;
  state.counters["launch_time_p90"] = launch.p90;
  state.counters["launch_sync_time"] = sync.median;
  state.counters["launch_sync_time_p90"] = sync.p90;
}

// ---- graph ---------------------------------------------------------------------------------

enum class issue_api { launches, graph };

std::string_view to_string(issue_api a) { return a == issue_api::launches ? "launches" : "graph"; }

constexpr int graph_samples = 20;

void measure_graph(benchmark::State& state, issue_api api, int kernels) {
  const stream s;
  const int device_index = s.device();
  graph_handle graph;
  graph_exec_handle exec;
  double instantiate_us = 0;
  if (api == issue_api::graph) {
    graph = capture_graph(s.get(), [&] {
      for (int k = 0; k < kernels; ++k) device::empty(s.get());
    });
    const std::int64_t start = host_now_ns();
    exec = instantiate(graph);
    instantiate_us = elapsed_us(start, host_now_ns());
  }
  const auto issue = [&] {
    if (api == issue_api::graph) {
      HDB_CUDA_CALL(cudaGraphLaunch(exec.get(), s.get()));
    } else {
      for (int k = 0; k < kernels; ++k) device::empty(s.get());
    }
  };
  for (int i = 0; i < 3; ++i) issue();  // the graph's upload and first-launch costs
  s.synchronize();
  const event begin(device_index);
  const event end(device_index);
  std::vector<double> host_us, device_us;
  for (int i = 0; i < graph_samples; ++i) {
    const std::int64_t start = host_now_ns();
    begin.record(s.get());
    issue();
    end.record(s.get());
    s.synchronize();
    host_us.push_back(elapsed_us(start, host_now_ns()));
    device_us.push_back(elapsed_ms(begin, end) * 1e3);
  }
  const double total = median(host_us);
  for (auto _ : state) state.SetIterationTime(total / 1e6);
  state.counters["total_time"] = total;
  state.counters["time_per_kernel"] = total / kernels;
  state.counters["device_time"] = median(device_us);
  if (api == issue_api::graph) state.counters["instantiate_time"] = instantiate_us;
}

}  // namespace

// ---- trap ----------------------------------------------------------------------------------

std::string_view to_string(trap_api a) noexcept {
  switch (a) {
    case trap_api::readback_pageable: return "readback_pageable";
    case trap_api::sync_only: return "sync_only";
    case trap_api::keep_on_gpu: return "keep_on_gpu";
    case trap_api::readback_async: return "readback_async";
  }
  return "?";
}

namespace {
constexpr std::size_t async_ring = 8;
constexpr std::size_t async_lag = 4;  // an asynchronous read-back is checked this many read-backs later
}  // namespace

trap_fixture::trap_fixture(std::int64_t target_ns, std::size_t steps, spin_gate& gate)
    : gate_(gate),
      steps_(steps),
      expected_(accumulator_history(steps)),
      accumulator_(sizeof(std::uint32_t)),
      history_(steps * sizeof(std::uint32_t)),
      value_(host_kind::pageable, sizeof(std::uint32_t)),
      history_host_(host_kind::pageable, steps * sizeof(std::uint32_t)),
      ring_(host_kind::pinned, async_ring * sizeof(std::uint32_t)) {
  for (std::size_t i = 0; i < async_ring; ++i) ring_events_.emplace_back(s_.device(), cudaEventDisableTiming);
  spin_ns_ = target_ns;
  for (int round = 0; round < 4; ++round) spin_ns_ = next_spin_ns(target_ns, spin_ns_, measure_step_ns());
  step_kernel_us_ = static_cast<double>(measure_step_ns()) / 1e3;
}

double trap_fixture::run(trap_api api, int every) {
  HDB_CUDA_CALL(cudaMemsetAsync(accumulator_.data(), 0, sizeof(std::uint32_t), s_.get()));
  s_.synchronize();
  auto* accumulator = static_cast<std::uint32_t*>(accumulator_.data());
  auto* history = api == trap_api::keep_on_gpu ? static_cast<std::uint32_t*>(history_.data()) : nullptr;
  auto* value = static_cast<std::uint32_t*>(value_.data());
  auto* ring = static_cast<std::uint32_t*>(ring_.data());
  std::size_t wrong = 0;
  std::size_t readbacks = 0;
  const auto check_async = [&](std::size_t r) {
    const std::size_t slot = r % async_ring;
    HDB_CUDA_CALL(cudaEventSynchronize(ring_events_[slot].get()));
    wrong += ring[slot] != expected_[(r + 1) * static_cast<std::size_t>(every) - 1];
  };

  const std::int64_t start = host_now_ns();
  for (std::size_t i = 0; i < steps_; ++i) {
    device::trap_step(static_cast<std::uint64_t>(spin_ns_), accumulator, history, i, s_.get());
    if (!reads_back_after(i, api == trap_api::keep_on_gpu ? never : every)) continue;
    if (api == trap_api::readback_pageable) {
      // What `.item()` does: copy to pageable memory, wait for it, use the value.
      HDB_CUDA_CALL(cudaMemcpyAsync(value, accumulator, sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s_.get()));
      s_.synchronize();
      wrong += *value != expected_[i];
    } else if (api == trap_api::sync_only) {
      // The wait alone, no copy: what the read-back's round trip costs before any byte moves.
      s_.synchronize();
    } else {
      if (readbacks >= async_lag) check_async(readbacks - async_lag);
      const std::size_t slot = readbacks % async_ring;
      HDB_CUDA_CALL(cudaMemcpyAsync(ring + slot, accumulator, sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s_.get()));
      HDB_CUDA_CALL(cudaEventRecord(ring_events_[slot].get(), s_.get()));
      ++readbacks;
    }
  }
  if (api == trap_api::keep_on_gpu) {
    HDB_CUDA_CALL(cudaMemcpyAsync(history_host_.data(), history, steps_ * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                                  s_.get()));
  }
  for (std::size_t r = readbacks > async_lag ? readbacks - async_lag : 0; r < readbacks; ++r) check_async(r);
  s_.synchronize();
  const double loop_us = elapsed_us(start, host_now_ns());

  HDB_CUDA_CALL(cudaMemcpy(value, accumulator, sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  wrong += *value != expected_.back();
  if (api == trap_api::keep_on_gpu) {
    const auto* copied = static_cast<const std::uint32_t*>(history_host_.data());
    for (std::size_t i = 0; i < steps_; ++i) wrong += copied[i] != expected_[i];
  }
  if (wrong != 0) {
    throw std::runtime_error("sync trap " + std::string(to_string(api)) + ": " + std::to_string(wrong) +
                             " read-back values differ from the expected running sum");
  }
  return loop_us;
}

// Device time per step: the median of 5 batches of 100 steps run back to back behind the gate.
std::int64_t trap_fixture::measure_step_ns() {
  constexpr int steps = 100;  // the gate's limit: a held batch must never fill the queue
  constexpr int batches = 5;
  const cudaStream_t streams[] = {s_.get()};
  std::vector<double> per_step_ns;
  for (int b = 0; b < batches; ++b) {
    const batch_timing t = time_batch(streams, &gate_, [&] {
      for (int i = 0; i < steps; ++i) {
        device::trap_step(static_cast<std::uint64_t>(spin_ns_), static_cast<std::uint32_t*>(accumulator_.data()),
                          nullptr, static_cast<std::uint64_t>(i), s_.get());
      }
    });
    per_step_ns.push_back(t.max_ms * 1e6 / steps);
  }
  return static_cast<std::int64_t>(median(per_step_ns));
}

namespace {

// Every repetition runs the loop that never reads back and the case's loop alternately, 3 times
// each, and keeps the fastest of each. A host interruption only ever slows a loop, so the noise is
// one-sided and the fastest loop is the estimate of what the loop itself costs; alternating keeps
// a slow drift of the node from favouring either. (The best ratio of back-to-back pairs, used
// before, was biased: a disturbed never loop raises the ratio of its pair.)
constexpr int trap_loops = 3;

void measure_trap(benchmark::State& state, trap_fixture& fixture, trap_api api, int every, std::size_t steps) {
  // With a single warm-up loop the first repetition ran ~10 % slow in 2 of 3 runs on an H200.
  for (int w = 0; w < trap_loops; ++w) static_cast<void>(fixture.run(api, every));
  std::vector<double> never_us, loop_us;
  for (int p = 0; p < trap_loops; ++p) {
    never_us.push_back(fixture.run(trap_api::readback_pageable, never));
    loop_us.push_back(fixture.run(api, every));
  }
  const double fastest_never = *std::ranges::min_element(never_us);
  const double fastest_loop = *std::ranges::min_element(loop_us);
  for (auto _ : state) state.SetIterationTime(fastest_loop / 1e6);
  const auto n = static_cast<double>(steps);
  state.counters["time_per_step"] = fastest_loop / n;
  state.counters["baseline_time_per_step"] = fastest_never / n;
  state.counters["relative_throughput"] = relative_throughput(fastest_never, fastest_loop);
  state.counters["step_kernel_time"] = fixture.step_kernel_us();
}

// ---- registration --------------------------------------------------------------------------

void register_device_cases(const run_options& options, const device_info& d, const family_env& env,
                           const std::shared_ptr<fixture_cache<trap_fixture>>& trap_cache, case_registry& registry) {
  const std::vector<int> on = {d.index};
  const int sync_calls = single_int_flag(options, "sync-calls");
  auto bare = std::make_shared<std::optional<bare_figures>>();  // one set of bare processes per GPU
  for (const sync_call call : all_sync_calls) {
    case_spec spec = make_case("sync", "sync_cost", {{"api", std::string(to_string(call))}}, on);
    spec.body = [call, sync_calls, device = d.index, bare](benchmark::State& state) {
      measure_sync_cost(state, call, device, sync_calls, *bare);
    };
    registry.add(std::move(spec));
  }

  case_spec launch = make_case("sync", "launch", {{"api", "empty_kernel"}}, on);
  launch.body = measure_launch;
  registry.add(std::move(launch));

  for (int kernels : parse_positive_int_list("launch-kernels", options.value("launch-kernels"))) {
    for (issue_api api : {issue_api::launches, issue_api::graph}) {
      case_spec spec = make_case("sync", "graph", {{"api", std::string(to_string(api))}, {"kernels", std::to_string(kernels)}}, on);
      spec.body = [api, kernels](benchmark::State& state) { measure_graph(state, api, kernels); };
      registry.add(std::move(spec));
    }
  }

  const auto producer_spin_ns = static_cast<std::uint64_t>(single_int_flag(options, "dependency-spin-us")) * 1000;
  auto dependency_cache = std::make_shared<fixture_cache<dependency_fixture>>();
  for (dependency how : {dependency::same_stream, dependency::stream_wait_event, dependency::host_sync}) {
    case_spec spec = make_case("sync", "dependency",
                               {{"api", std::string(to_string(how))}, {"streams", how == dependency::same_stream ? "1" : "2"}}, on);
    spec.body = [how, producer_spin_ns, dependency_cache, key = "dependency/" + std::to_string(d.index)](benchmark::State& state) {
      measure_dependency(state, dependency_cache->get(key, producer_spin_ns, dependency_streams), how);
    };
    registry.add(std::move(spec));
  }

  for (need_wait how : {need_wait::event, need_wait::stream, need_wait::device}) {
    case_spec spec = make_case("sync", "wait_for_need", {{"api", std::string(to_string(how))}, {"streams", "2"}}, on);
    spec.body = [how](benchmark::State& state) { measure_wait_for_need(state, how); };
    registry.add(std::move(spec));
  }

  const auto steps = static_cast<std::size_t>(single_int_flag(options, "trap-steps"));
  const std::int64_t target_ns = static_cast<std::int64_t>(single_int_flag(options, "trap-kernel-us")) * 1000;
  const std::string fixture_key = "trap/" + std::to_string(d.index);
  const auto add_trap = [&](trap_api api, std::optional<int> every) {
    label_list params = {{"api", std::string(to_string(api))}};
    // `every` is a number of steps: the loop that never reads back has none.
    if (every && *every != never) params.emplace_back("every", std::to_string(*every));
    case_spec spec = make_case("sync", "trap", std::move(params), on);
    spec.body = [=, &env](benchmark::State& state) {
      trap_fixture& fixture = trap_cache->get(fixture_key, target_ns, steps, *env.gate);
      measure_trap(state, fixture, api, every.value_or(never), steps);
    };
    registry.add(std::move(spec));
  };
  const auto every_list = parse_every_list("trap-every", options.value("trap-every"));
  for (int every : every_list) add_trap(trap_api::readback_pageable, every);
  add_trap(trap_api::keep_on_gpu, std::nullopt);
  for (trap_api api : {trap_api::sync_only, trap_api::readback_async}) {
    for (int every : every_list) {
      if (every != never) add_trap(api, every);
    }
  }
}

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  auto trap_cache = std::make_shared<fixture_cache<trap_fixture>>();
  for (const device_info& d : env.devices) register_device_cases(options, d, env, trap_cache, registry);
  // Last: these start one child process per scheduling mode.
  register_wakeup_cases(options, env, registry);
}

void check_sched_child(const std::string& flag, const std::string& value) {
  if (!value.empty() && !parse_sched_mode(value)) {
    throw usage_error("bad value for --" + flag + ": '" + value + "' (expected auto, spin, yield or blocking_sync)");
  }
}

void check_bare_child(const std::string& flag, const std::string& value) {
  if (!value.empty() && value != "all") throw usage_error("bad value for --" + flag + ": '" + value + "' (expected all)");
}

// This binary is also its own children: a scheduling-mode child (wakeup.cpp) or the bare
// sync-cost child (sync_cost.cpp), chosen by an internal flag before any CUDA call.
std::optional<int> run_as_child(const run_options& options, int argc, char** argv) {
  if (const auto code = child_entry(options, argc, argv)) return code;
  if (options.value(std::string(bare_child_flag)).empty()) return std::nullopt;
  if (options.devices.all || options.devices.indices.size() != 1) {
    std::fprintf(stderr, "hdbench-sync: --%s needs exactly one device (--devices=N)\n", std::string(bare_child_flag).c_str());
    return 2;
  }
  return bare_child_main(options.devices.indices.front(), single_int_flag(options, "sync-calls"));
}

void check_every(const std::string& flag, const std::string& value) { static_cast<void>(parse_every_list(flag, value)); }
void check_modes(const std::string& flag, const std::string& value) { static_cast<void>(parse_sched_modes(flag, value)); }

}  // namespace

int single_int_flag(const run_options& options, const char* flag) {
  return parse_positive_int_list(flag, options.value(flag)).front();
}

family_spec family() {
  family_spec f;
  f.name = "sync";
  const auto positive = flag_checks::positive_int_list;
  f.flags = {
      {"sync-calls", "2000", "500", "sync calls timed per repetition of a sync_cost case", positive},
      {"launch-kernels", "10,100,1000", "10,100", "K for K launches vs one graph of K kernels", positive},
      {"trap-steps", "2000", "500", "kernels per sync-trap loop", positive},
      {"trap-every", "1,2,8,64,never", "1,8,64,never", "sync-trap read-back intervals k (steps), 'never' = no read-back",
       check_every},
      {"trap-kernel-us", "5", "", "device time of one sync-trap step (the spin is calibrated to it)", positive},
      {"dependency-spin-us", "20", "", "how long a dependency case's producer spins before it writes", positive},
      {"sched-modes", "auto,spin,yield,blocking_sync", "spin,yield,blocking_sync",
       "scheduling modes measured for wake-up latency, one child process each", check_modes},
      {"wakeup-calls", "20", "10", "waits per sync call per repetition in each scheduling-mode child", positive},
      {"wakeup-kernel-us", "1000", "", "duration of the kernel a wake-up case waits for", positive},
      {"wakeup-blocks", "1", "", "internal (set by the parent for --sched-child): repetitions a child measures",
       positive},
      {std::string(child_flag), "", "",
       "internal: run as the scheduling-mode child for MODE (auto, spin, yield, blocking_sync), print JSON, exit",
       check_sched_child},
      {std::string(bare_child_flag), "", "",
       "internal (value: all): run as a bare sync-cost child (time every sync call on finished work, print JSON, exit)", check_bare_child},
  };
  f.register_cases = register_cases;
  f.before_cuda = run_as_child;
  return f;
}

}  // namespace hdb::sync
