// Wake-up latency and CPU cost of waiting, per scheduling mode and per sync call.
//
// Timed: a one-thread kernel spins for --wakeup-kernel-us (1 ms) and writes %globaltimer to
// mapped host memory as its last act; the host calls the sync API right after queueing it and
// reads its clock when the call returns. Wake-up latency = return time - kernel end, the kernel
// end mapped to the host clock by the calibration done before and after each block (offset
// interpolated; its +- bound is reported as clock_uncertainty). CPU time: CLOCK_THREAD_CPUTIME_ID
// (the waiting thread) and CLOCK_PROCESS_CPUTIME_ID (every thread, driver threads included)
// around the call. Each figure is the median of --wakeup-calls waits.
// Excluded: context creation and the launch (the clocks start at the sync call).
// The scheduling mode must be set before the context exists, so each mode runs in a child
// process (this binary with --sched-child=MODE), which reports one block of medians per
// repetition; the parent's repetitions take them in order. The device is never reset.
#include "wakeup.hpp"

#include "sync.hpp"
#include "sync_kernels.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/util/process.hpp"
#include "hdb/util/stopping.hpp"  // repetitions_for
#include "hdb/sizes.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <utility>

namespace hdb::sync {

static_assert(cudaDeviceScheduleAuto == 0x00 && cudaDeviceScheduleSpin == 0x01 && cudaDeviceScheduleYield == 0x02 &&
                  cudaDeviceScheduleBlockingSync == 0x04 && cudaDeviceScheduleMask == schedule_mask,
              "sync_math.cpp's schedule flags must match the CUDA runtime's");

namespace {

wait_sample wait_once(wait_api api, cudaStream_t s, cudaEvent_t plain, cudaEvent_t blocking, const host_buffer& stamp,
                      std::uint64_t spin_ns) {
  auto* end_ns = static_cast<std::uint64_t*>(stamp.data());
  std::atomic_ref<std::uint64_t>(*end_ns).store(0, std::memory_order_release);
  device::delay_then_stamp(spin_ns, static_cast<std::uint64_t*>(stamp.device_ptr()), s);
  const cudaEvent_t event = api == wait_api::event_blocking_sync ? blocking : plain;
  if (api != wait_api::device_sync && api != wait_api::stream_sync) HDB_CUDA_CALL(cudaEventRecord(event, s));

  wait_sample w;
  const double thread_start = thread_cpu_us();
  const double process_start = process_cpu_us();
  w.call_ns = host_now_ns();
  switch (api) {
    case wait_api::device_sync: HDB_CUDA_CALL(cudaDeviceSynchronize()); break;
    case wait_api::stream_sync: HDB_CUDA_CALL(cudaStreamSynchronize(s)); break;
    case wait_api::event_sync:
    case wait_api::event_blocking_sync: HDB_CUDA_CALL(cudaEventSynchronize(event)); break;
    case wait_api::event_query_poll: {
      cudaError_t status = cudaSuccess;
      while ((status = cudaEventQuery(event)) == cudaErrorNotReady) {
      }
      HDB_CUDA_CALL(status);
      break;
    }
  }
  w.return_ns = host_now_ns();
  w.thread_cpu_us = thread_cpu_us() - thread_start;
  w.process_cpu_us = process_cpu_us() - process_start;
  w.kernel_end_device_ns = static_cast<std::int64_t>(std::atomic_ref<std::uint64_t>(*end_ns).load(std::memory_order_acquire));
  if (w.kernel_end_device_ns == 0) {
    throw std::runtime_error(std::string(to_string(api)) + " returned before the kernel's last act was visible");
  }
  return w;
}

}  // namespace

child_report measure_in_child(const child_request& request) {
  // Before any other CUDA call: the flags are fixed when the primary context is created.
  HDB_CUDA_CALL(cudaInitDevice(request.device, schedule_flag(request.mode), cudaInitDeviceFlagsAreValid));
  HDB_CUDA_CALL(cudaSetDevice(request.device));
  child_report report;
  report.mode = request.mode;
  HDB_CUDA_CALL(cudaGetDeviceFlags(&report.device_flags));

  const stream s;
  const event plain(request.device, cudaEventDisableTiming);
  const event blocking(request.device, cudaEventDisableTiming | cudaEventBlockingSync);
  const host_buffer stamp(host_kind::mapped, sizeof(std::uint64_t));
  const auto spin_ns = static_cast<std::uint64_t>(request.kernel_us) * 1000u;
  const auto apis = all_wait_apis();
  const auto once = [&](wait_api api) { return wait_once(api, s.get(), plain.get(), blocking.get(), stamp, spin_ns); };

  for (wait_api api : apis) {
    for (int i = 0; i < 3; ++i) static_cast<void>(once(api));  // first-use costs, clocks up
  }
  for (int b = 0; b < request.blocks; ++b) {
    const clock_offset before = calibrate_device_clock(s.get());
    // Interleaved, so a slow drift of anything on the node spreads over every API alike.
    std::map<wait_api, std::vector<wait_sample>> samples;
    for (int c = 0; c < request.calls; ++c) {
      for (wait_api api : apis) samples[api].push_back(once(api));
    }
    const clock_map clock(before, calibrate_device_clock(s.get()));
    report.clock_uncertainty_us = std::max(report.clock_uncertainty_us, clock.uncertainty_us());
    if (std::abs(clock.drift_ppm()) > std::abs(report.clock_drift_ppm)) report.clock_drift_ppm = clock.drift_ppm();
    for (wait_api api : apis) report.blocks.push_back({api, summarize_waits(samples[api], clock)});
  }
  return report;
}

child_report run_child(const std::string& executable, const child_request& request, int timeout_s) {
  child_spec spec;
  spec.argv = {executable};
  for (std::string& a : child_arguments(request)) spec.argv.push_back(std::move(a));
  spec.stdin_from = child_stream::inherit;
  spec.stderr_to = child_stream::inherit;  // its error message lands where ours do
  spec.die_with_parent = true;             // an interrupted benchmark takes its child along
  spec.timeout = std::chrono::seconds(timeout_s);
  spec.kill_grace = std::chrono::seconds(0);
  const child_result result = run_with_deadline(spec);
  const std::string what = "scheduling-mode child (" + executable + " --sched-child=" + std::string(to_string(request.mode)) + ")";
  if (result.end == child_end::not_started) throw std::runtime_error("cannot start " + what + ": " + result.start_error);
  if (result.end == child_end::timed_out) {
    throw std::runtime_error(what + " did not finish within " + std::to_string(timeout_s) + " s; killed");
  }
  if (!result.succeeded()) {
    throw std::runtime_error(what + " failed (" + result.describe() + "); its error is on stderr above");
  }
  return parse_child_report(result.output);
}

namespace {

// Blocks of medians the children reported, waiting for the repetitions of their cases.
class wakeup_cache {
 public:
  wakeup_cache(int calls, int blocks, int kernel_us) : calls_(calls), blocks_(blocks), kernel_us_(kernel_us) {}

  struct taken {
    wait_summary summary;
    double clock_uncertainty_us;
  };

  taken take(int device_index, sched_mode mode, wait_api api) {
    auto& pending = pending_[{device_index, mode}];
    if (pending.blocks[api].empty()) refill(device_index, mode, pending);
    taken t{pending.blocks[api].front(), pending.clock_uncertainty_us};
    pending.blocks[api].pop_front();
    return t;
  }

 private:
  struct mode_blocks {
    std::map<wait_api, std::deque<wait_summary>> blocks;
    double clock_uncertainty_us = 0;
  };

  void refill(int device_index, sched_mode mode, mode_blocks& pending) const {
    const child_report report = run_child("/proc/self/exe", {mode, device_index, calls_, blocks_, kernel_us_});
    if (!mode_in_force(mode, report.device_flags)) {
      char flags[16];
      std::snprintf(flags, sizeof(flags), "0x%x", report.device_flags);
      throw std::runtime_error("scheduling mode " + std::string(to_string(mode)) +
                               " did not take effect in its child: cudaGetDeviceFlags reports " + flags);
    }
    for (const child_block& b : report.blocks) pending.blocks[b.api].push_back(b.summary);
    pending.clock_uncertainty_us = report.clock_uncertainty_us;
  }

  int calls_;
  int blocks_;
  int kernel_us_;
  std::map<std::pair<int, sched_mode>, mode_blocks> pending_;
};

}  // namespace

std::optional<int> child_entry(const run_options& options, int /*argc*/, char** /*argv*/) {
  const std::string& mode_text = options.value(std::string(child_flag));
  if (mode_text.empty()) return std::nullopt;
  try {
    if (options.devices.all || options.devices.indices.size() != 1) {
      throw usage_error("--sched-child needs exactly one device (--devices=N)");
    }
    child_request request;
    request.mode = *parse_sched_mode(mode_text);  // the flag's check accepted it
    request.device = options.devices.indices.front();
    request.calls = single_int_flag(options, "wakeup-calls");
    request.blocks = single_int_flag(options, "wakeup-blocks");
    request.kernel_us = single_int_flag(options, "wakeup-kernel-us");
    const std::string line = to_json(measure_in_child(request)).dump() + "\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hdbench-sync --sched-child=%s: %s\n", mode_text.c_str(), e.what());
    return 1;
  }
}

void register_wakeup_cases(const run_options& options, family_env& env, case_registry& registry) {
  const int blocks = requested_repetitions(options.benchmark_args, repetitions_for(options.quick).regular);
  auto cache = std::make_shared<wakeup_cache>(single_int_flag(options, "wakeup-calls"), blocks,
                                              single_int_flag(options, "wakeup-kernel-us"));
  for (const device_info& d : env.devices) {
    for (sched_mode mode : parse_sched_modes("sched-modes", options.value("sched-modes"))) {
      for (wait_api api : all_wait_apis()) {
        case_spec spec = make_case("sync", "wakeup", {{"mode", std::string(to_string(mode))}, {"api", std::string(to_string(api))}},
                                   {d.index});
        spec.body = [cache, index = d.index, mode, api](benchmark::State& state) {
          const auto t = cache->take(index, mode, api);
          for (auto _ : state) state.SetIterationTime(t.summary.wait_us / 1e6);
          state.counters["wakeup_latency"] = t.summary.wakeup_us.median;
          state.counters["wakeup_latency_p10"] = t.summary.wakeup_us.p10;
          state.counters["wakeup_latency_p90"] = t.summary.wakeup_us.p90;
          state.counters["wait_time"] = t.summary.wait_us;
          state.counters["waiter_cpu_time"] = t.summary.thread_cpu_us;
          state.counters["process_cpu_time"] = t.summary.process_cpu_us;
          state.counters["cpu_busy"] = t.summary.cpu_busy_percent;
          state.counters["clock_uncertainty"] = t.clock_uncertainty_us;
        };
        registry.add(std::move(spec));
      }
    }
  }
}

}  // namespace hdb::sync
