#include "hdb/warmup.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/kernels.hpp"
#include "hdb/stream.hpp"

#include <cstdio>
#include <memory>

namespace hdb {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::size_t copy_bytes = std::size_t{1} << 20;
constexpr int empty_launches = 8;
constexpr int probe_blocks_per_sm = 2;

std::string mhz_text(double mhz) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", mhz);
  return text;
}

// What one device needs for the warm-up; built on that device.
struct device_warmup {
  int device;
  int probe_blocks = 0;
  stream work;
  device_buffer sample;
  std::vector<double> slice_mhz;
  warmup_report report;
  bool done = false;

  explicit device_warmup(int index)
      : device(index), work(index), sample(index, sizeof(kernels::clock_sample)) {
    int sm_count = 0;
    int clock_khz = 0;
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, index));
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index));
    probe_blocks = probe_blocks_per_sm * sm_count;
    report.device = index;
    report.max_sm_mhz = clock_khz / 1000.0;
  }
};

// One small copy of each kind the families time, so that the first timed copy does not pay for
// the driver's first-use set-up (staging buffers for pageable memory, copy-engine channels).
// The bytes are whatever the buffers hold: nothing reads them.
void exercise_copies(const device_warmup& w) {
  const device_scope scope(w.device);
  const host_buffer pinned(host_kind::pinned, copy_bytes);
  const host_buffer pageable(host_kind::pageable, copy_bytes);
  const device_buffer first(w.device, copy_bytes);
  const device_buffer second(w.device, copy_bytes);
  const cudaStream_t s = w.work.get();
  HDB_CUDA_CALL(cudaMemcpyAsync(first.data(), pinned.data(), copy_bytes, cudaMemcpyHostToDevice, s));
  HDB_CUDA_CALL(cudaMemcpyAsync(second.data(), first.data(), copy_bytes, cudaMemcpyDeviceToDevice, s));
  HDB_CUDA_CALL(cudaMemcpyAsync(pinned.data(), second.data(), copy_bytes, cudaMemcpyDeviceToHost, s));
  HDB_CUDA_CALL(cudaMemcpyAsync(first.data(), pageable.data(), copy_bytes, cudaMemcpyHostToDevice, s));
  HDB_CUDA_CALL(cudaMemcpyAsync(pageable.data(), first.data(), copy_bytes, cudaMemcpyDeviceToHost, s));
  w.work.synchronize();
}

// Launch, then wait: the path a latency case times.
void exercise_launches(const device_warmup& w) {
  const device_scope scope(w.device);
  for (int i = 0; i < empty_launches; ++i) {
    kernels::launch_empty(w.work.get());
    w.work.synchronize();
  }
}

void launch_slice(device_warmup& w) {
  const device_scope scope(w.device);
  const auto busy_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(warmup_slice).count();
  kernels::launch_clock_probe(static_cast<kernels::clock_sample*>(w.sample.data()), static_cast<std::uint64_t>(busy_ns),
                              w.probe_blocks, w.work.get());
}

double finish_slice(const device_warmup& w) {
  kernels::clock_sample result{};
  const device_scope scope(w.device);
  HDB_CUDA_CALL(cudaMemcpyAsync(&result, w.sample.data(), sizeof result, cudaMemcpyDeviceToHost, w.work.get()));
  w.work.synchronize();
  // ticks per nanosecond is GHz.
  return result.elapsed_ns == 0 ? 0.0 : 1e3 * static_cast<double>(result.sm_cycles) / static_cast<double>(result.elapsed_ns);
}

}  // namespace

std::string_view to_string(warmup_stop stop) noexcept {
  switch (stop) {
    case warmup_stop::max_clock: return "max_clock";
    case warmup_stop::clock_plateau: return "clock_plateau";
    case warmup_stop::time_cap: return "time_cap";
  }
  return "unknown";
}

std::optional<warmup_stop> warmup_decision(const std::vector<double>& slice_mhz, double max_sm_mhz,
                                           std::chrono::duration<double, std::milli> elapsed,
                                           std::chrono::milliseconds cap) {
  if (slice_mhz.empty()) return elapsed >= cap ? std::optional(warmup_stop::time_cap) : std::nullopt;
  const double last = slice_mhz.back();
  if (max_sm_mhz > 0 && last >= warmup_target_fraction * max_sm_mhz) return warmup_stop::max_clock;
  if (max_sm_mhz <= 0 && slice_mhz.size() >= 3) {
    const double before = slice_mhz[slice_mhz.size() - 2];
    const double earlier = slice_mhz[slice_mhz.size() - 3];
    const bool rising = last > before * (1 + warmup_plateau_rise) || before > earlier * (1 + warmup_plateau_rise);
    if (!rising) return warmup_stop::clock_plateau;
  }
  if (elapsed >= cap) return warmup_stop::time_cap;
  return std::nullopt;
}

std::vector<warmup_report> warm_start(const std::vector<int>& devices, std::chrono::milliseconds cap) {
  const auto started = clock_type::now();
  std::vector<std::unique_ptr<device_warmup>> warmups;
  for (const int device : devices) {
    warmups.push_back(std::make_unique<device_warmup>(device));
    exercise_copies(*warmups.back());
    exercise_launches(*warmups.back());
  }
  bool any_running = !warmups.empty();
  while (any_running) {
    for (auto& w : warmups) {
      if (!w->done) launch_slice(*w);
    }
    any_running = false;
    for (auto& w : warmups) {
      if (w->done) continue;
      w->slice_mhz.push_back(finish_slice(*w));
      const std::chrono::duration<double, std::milli> elapsed = clock_type::now() - started;
      if (const auto stop = warmup_decision(w->slice_mhz, w->report.max_sm_mhz, elapsed, cap)) {
        w->done = true;
        w->report.stop = *stop;
        w->report.elapsed_ms = elapsed.count();
      } else {
        any_running = true;
      }
    }
  }
  std::vector<warmup_report> reports;
  for (auto& w : warmups) {
    w->report.slices = static_cast<int>(w->slice_mhz.size());
    w->report.first_sm_mhz = w->slice_mhz.front();
    w->report.sm_mhz = w->slice_mhz.back();
    reports.push_back(w->report);
  }
  return reports;
}

warmup_report warm_start(int device, std::chrono::milliseconds cap) {
  return warm_start(std::vector<int>{device}, cap).front();
}

std::vector<std::pair<std::string, std::string>> warmup_context(const warmup_report& report) {
  const std::string prefix = "warmup.gpu" + std::to_string(report.device) + ".";
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", report.elapsed_ms);
  return {{prefix + "sm_mhz", mhz_text(report.sm_mhz)},
          {prefix + "first_sm_mhz", mhz_text(report.first_sm_mhz)},
          {prefix + "max_sm_mhz", report.max_sm_mhz > 0 ? mhz_text(report.max_sm_mhz) : "unknown"},
          {prefix + "ms", ms},
          {prefix + "slices", std::to_string(report.slices)},
          {prefix + "stop", std::string(to_string(report.stop))}};
}

}  // namespace hdb
