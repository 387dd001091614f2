#include "sync_math.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/sizes.hpp"

#include <algorithm>
#include <numeric>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace hdb::sync {

std::string_view to_string(sched_mode mode) noexcept {
  switch (mode) {
    case sched_mode::automatic: return "auto";
    case sched_mode::spin: return "spin";
    case sched_mode::yield: return "yield";
    case sched_mode::blocking_sync: return "blocking_sync";
  }
  return "?";
}

std::optional<sched_mode> parse_sched_mode(std::string_view text) {
  for (sched_mode mode : {sched_mode::automatic, sched_mode::spin, sched_mode::yield, sched_mode::blocking_sync}) {
    if (text == to_string(mode)) return mode;
  }
  return std::nullopt;
}

unsigned schedule_flag(sched_mode mode) noexcept {
  switch (mode) {
    case sched_mode::automatic: return 0x00;
    case sched_mode::spin: return 0x01;
    case sched_mode::yield: return 0x02;
    case sched_mode::blocking_sync: return 0x04;
  }
  return 0x00;
}

bool mode_in_force(sched_mode mode, unsigned device_flags) noexcept {
  return mode == sched_mode::automatic || (device_flags & schedule_mask) == schedule_flag(mode);
}

std::vector<sched_mode> parse_sched_modes(const std::string& flag, const std::string& text) {
  std::vector<sched_mode> modes;
  for (const std::string& item : split_list(text)) {
    const auto mode = parse_sched_mode(item);
    if (!mode) {
      throw usage_error("bad value for --" + flag + ": '" + item + "' (expected auto, spin, yield or blocking_sync)");
    }
    if (std::find(modes.begin(), modes.end(), *mode) == modes.end()) modes.push_back(*mode);
  }
  return modes;
}

std::string_view to_string(wait_api api) noexcept {
  switch (api) {
    case wait_api::device_sync: return "cudaDeviceSynchronize";
    case wait_api::stream_sync: return "cudaStreamSynchronize";
    case wait_api::event_sync: return "cudaEventSynchronize";
    case wait_api::event_blocking_sync: return "cudaEventSynchronize_BlockingSync";
    case wait_api::event_query_poll: return "cudaEventQuery_poll";
  }
  return "?";
}

std::vector<wait_api> all_wait_apis() {
  return {wait_api::device_sync, wait_api::stream_sync, wait_api::event_sync, wait_api::event_blocking_sync,
          wait_api::event_query_poll};
}

std::optional<wait_api> parse_wait_api(std::string_view text) {
  for (wait_api api : all_wait_apis()) {
    if (text == to_string(api)) return api;
  }
  return std::nullopt;
}

double interquartile_mean(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("interquartile mean of no values");
  std::sort(values.begin(), values.end());
  const std::size_t cut = values.size() / 4;
  const auto first = values.begin() + static_cast<std::ptrdiff_t>(cut);
  const auto last = values.end() - static_cast<std::ptrdiff_t>(cut);
  return std::accumulate(first, last, 0.0) / static_cast<double>(last - first);
}

std::vector<double> interquartile_means_by_group(std::span<const double> values, std::span<const std::size_t> group_of,
                                                std::size_t groups) {
  if (values.size() != group_of.size()) throw std::invalid_argument("every value needs its group");
  std::vector<std::vector<double>> grouped(groups);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (group_of[i] >= groups) throw std::invalid_argument("group index out of range");
    grouped[group_of[i]].push_back(values[i]);
  }
  std::vector<double> means;
  for (auto& g : grouped) means.push_back(interquartile_mean(std::move(g)));
  return means;
}

spread summarize(const std::vector<double>& values) {
  return {median(values), percentile(values, 0.1), percentile(values, 0.9)};
}

clock_offset calibrate(std::span<const round_trip> trips) {
  if (trips.empty()) throw std::invalid_argument("clock calibration needs at least one round trip");
  const round_trip* best = nullptr;
  for (const round_trip& t : trips) {
    if (t.host_receive_ns < t.host_send_ns) throw std::invalid_argument("clock calibration: a round trip ends before it starts");
    if (best == nullptr || t.host_receive_ns - t.host_send_ns < best->host_receive_ns - best->host_send_ns) best = &t;
  }
  const std::int64_t rtt = best->host_receive_ns - best->host_send_ns;
  const std::int64_t midpoint = best->host_send_ns + rtt / 2;
  return {midpoint, best->device_ns - midpoint, (rtt + 1) / 2};
}

clock_map::clock_map(const clock_offset& before, const clock_offset& after) : before_(before), after_(after) {}

double clock_map::offset_at(double host_ns) const noexcept {
  const double span = static_cast<double>(after_.host_ns - before_.host_ns);
  if (span <= 0) return static_cast<double>(before_.offset_ns);
  const double fraction = (host_ns - static_cast<double>(before_.host_ns)) / span;
  return static_cast<double>(before_.offset_ns) + fraction * static_cast<double>(after_.offset_ns - before_.offset_ns);
}

std::int64_t clock_map::to_host_ns(std::int64_t device_ns) const noexcept {
  // The offset depends on host time, which is what we solve for: one refinement step is exact
  // to well under a nanosecond at ppm drift.
  const double first = static_cast<double>(device_ns) - offset_at(static_cast<double>(device_ns - before_.offset_ns));
  return static_cast<std::int64_t>(std::llround(static_cast<double>(device_ns) - offset_at(first)));
}

double clock_map::uncertainty_us() const noexcept {
  return static_cast<double>(std::max(before_.uncertainty_ns, after_.uncertainty_ns)) / 1e3;
}

double clock_map::drift_ppm() const noexcept {
  const double span = static_cast<double>(after_.host_ns - before_.host_ns);
  if (span <= 0) return 0;
  return static_cast<double>(after_.offset_ns - before_.offset_ns) / span * 1e6;
}

double wakeup_us(const wait_sample& sample, const clock_map& clock) noexcept {
  return static_cast<double>(sample.return_ns - clock.to_host_ns(sample.kernel_end_device_ns)) / 1e3;
}

wait_summary summarize_waits(std::span<const wait_sample> samples, const clock_map& clock) {
  std::vector<double> wakeup, wait, thread_cpu, process_cpu, busy;
  for (const wait_sample& s : samples) {
    const double wait_us = static_cast<double>(s.return_ns - s.call_ns) / 1e3;
    wakeup.push_back(wakeup_us(s, clock));
    wait.push_back(wait_us);
    thread_cpu.push_back(s.thread_cpu_us);
    process_cpu.push_back(s.process_cpu_us);
    busy.push_back(wait_us > 0 ? 100.0 * s.thread_cpu_us / wait_us : 0.0);
  }
  return {summarize(wakeup), median(wait), median(thread_cpu), median(process_cpu), median(busy)};
}

nlohmann::json to_json(const child_report& report) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const child_block& b : report.blocks) {
    const wait_summary& s = b.summary;
    blocks.push_back({{"api", std::string(to_string(b.api))},
                      {"wakeup_us", {s.wakeup_us.median, s.wakeup_us.p10, s.wakeup_us.p90}},
                      {"wait_us", s.wait_us},
                      {"thread_cpu_us", s.thread_cpu_us},
                      {"process_cpu_us", s.process_cpu_us},
                      {"cpu_busy_percent", s.cpu_busy_percent}});
  }
  return {{"mode", std::string(to_string(report.mode))},
          {"device_flags", report.device_flags},
          {"clock_uncertainty_us", report.clock_uncertainty_us},
          {"clock_drift_ppm", report.clock_drift_ppm},
          {"blocks", blocks}};
}

child_report parse_child_report(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    throw std::runtime_error("scheduling-mode child: output is not a JSON object: '" + std::string(text.substr(0, 200)) + "'");
  }
  try {
    child_report report;
    const auto mode = parse_sched_mode(json.at("mode").get<std::string>());
    if (!mode) throw std::runtime_error("unknown mode " + json.at("mode").dump());
    report.mode = *mode;
    report.device_flags = json.at("device_flags").get<unsigned>();
    report.clock_uncertainty_us = json.at("clock_uncertainty_us").get<double>();
    report.clock_drift_ppm = json.at("clock_drift_ppm").get<double>();
    for (const auto& b : json.at("blocks")) {
      const auto api = parse_wait_api(b.at("api").get<std::string>());
      if (!api) throw std::runtime_error("unknown api " + b.at("api").dump());
      const auto& wake = b.at("wakeup_us");
      report.blocks.push_back({*api,
                               {{wake.at(0).get<double>(), wake.at(1).get<double>(), wake.at(2).get<double>()},
                                b.at("wait_us").get<double>(),
                                b.at("thread_cpu_us").get<double>(),
                                b.at("process_cpu_us").get<double>(),
                                b.at("cpu_busy_percent").get<double>()}});
    }
    return report;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("scheduling-mode child: malformed report: ") + e.what());
  }
}

std::vector<std::string> child_arguments(const child_request& request) {
  return {"--" + std::string(child_flag) + "=" + std::string(to_string(request.mode)),
          "--devices=" + std::to_string(request.device),
          "--wakeup-calls=" + std::to_string(request.calls),
          "--wakeup-blocks=" + std::to_string(request.blocks),
          "--wakeup-kernel-us=" + std::to_string(request.kernel_us),
          // The parent already placed itself; the child inherits its CPU and memory affinity.
          "--numa=none"};
}

int requested_repetitions(const std::vector<std::string>& benchmark_args, int fallback) {
  static constexpr std::string_view prefix = "--benchmark_repetitions=";
  for (const std::string& arg : benchmark_args) {
    if (arg.rfind(prefix, 0) != 0) continue;
    int value = 0;
    const char* first = arg.data() + prefix.size();
    const char* last = arg.data() + arg.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (ec == std::errc() && end == last && value > 0) return value;
  }
  return fallback;
}

std::vector<int> parse_every_list(const std::string& flag, const std::string& text) {
  std::vector<int> list;
  for (const std::string& item : split_list(text)) {
    int value = 0;
    if (item == "never") {
      value = never;
    } else {
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 1) {
        throw usage_error("bad value for --" + flag + ": '" + item + "' (expected a whole number >= 1 or 'never')");
      }
    }
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
  }
  return list;
}

bool reads_back_after(std::size_t step, int every) noexcept {
  return every != never && (step + 1) % static_cast<std::size_t>(every) == 0;
}

std::size_t readback_count(std::size_t steps, int every) noexcept {
  return every == never ? 0 : steps / static_cast<std::size_t>(every);
}

std::uint32_t accumulated(std::size_t steps) noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < steps; ++i) sum += step_value(i);
  return sum;
}

std::vector<std::uint32_t> accumulator_history(std::size_t steps) {
  std::vector<std::uint32_t> history(steps);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < steps; ++i) history[i] = sum += step_value(i);
  return history;
}

double relative_throughput(double never_us, double loop_us) {
  if (!(never_us > 0) || !(loop_us > 0)) throw std::invalid_argument("relative throughput needs positive times");
  return never_us / loop_us;
}

std::int64_t next_spin_ns(std::int64_t target_ns, std::int64_t spin_ns, std::int64_t measured_ns) noexcept {
  return std::max<std::int64_t>(0, spin_ns + (target_ns - measured_ns));
}

}  // namespace hdb::sync
