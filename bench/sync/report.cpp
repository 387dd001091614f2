// Report rules of the sync family (its figures are times and ratios, not rates: no traffic), and
// anomalies that say a node waits worse than it should: launches far slower than a healthy host
// manages, a graph that saves nothing, a scheduling mode or an event flag that did not change
// how the host waits, a calibration too loose for wake-up latencies, a fix for the sync trap
// that does not fix it, a never-read-back loop that is not bound by its kernels (clocks that
// disagree, or launches slower than the kernels), and a cross-stream wait slower than a host
// round trip.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/tables.hpp"

namespace hdb {
namespace {

// A healthy x86 host with a current driver launches an empty kernel in 2-5 us and completes a
// launch + cudaStreamSynchronize round trip in 5-15 us; 10 us / 40 us mean something is in the way
// (a profiler or debugger hooked in, CUDA_LAUNCH_BLOCKING, deep CPU idle states, a far NUMA node).
constexpr double launch_limit_us = 10.0;
constexpr double launch_sync_limit_us = 40.0;
// A waiting thread counts as busy above this share of the wait in CPU time, as asleep below it.
constexpr double busy_percent = 50.0;
// Wake-up latencies of spin mode are 1-5 us; a calibration looser than this swamps them.
constexpr double clock_uncertainty_limit_us = 5.0;
// Keeping the value on the GPU should cost nothing against the loop that never reads back.
constexpr double keep_on_gpu_min_throughput = 0.9;
// The never-read-back loop's step against its kernel: within 1 % on a healthy H200.
constexpr double clock_agreement_low = 0.95;
constexpr double launch_bound_high = 1.10;
// The family's sync cost against the same calls in bare processes: within 20 % of their range.
constexpr double bare_agreement = 0.20;

void launch_anomalies(const median_index& m, std::vector<std::string>& out) {
  for (const auto& [row, value] : medians_of(m, "launch", "launch_time")) {
    if (value > launch_limit_us) {
      out.push_back(gpu_prefix(row->device) + "an empty kernel launch costs " + format_figure(value) +
                    " us of host time (a healthy host: 2-5 us); look for a profiler or debugger attached, "
                    "CUDA_LAUNCH_BLOCKING, CPU frequency scaling or a host thread far from the GPU's NUMA node");
    }
  }
  for (const auto& [row, value] : medians_of(m, "launch", "launch_sync_time")) {
    if (value > launch_sync_limit_us) {
      out.push_back(gpu_prefix(row->device) + "launch + cudaStreamSynchronize takes " + format_figure(value) +
                    " us (a healthy host: 5-15 us); the host wakes up slowly (scheduling mode, CPU idle states)");
    }
  }
}

// The family's figure outside the bare processes' range, widened by bare_agreement on each side.
void bare_process_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::map<std::pair<std::optional<int>, std::string>, std::pair<double, double>> bare;  // (device, api) -> low, high
  for (const auto& [row, value] : medians_of(m, "sync_cost", "bare_call_time_low")) {
    bare[{row->device, row->param("api")}].first = value;
  }
  for (const auto& [row, value] : medians_of(m, "sync_cost", "bare_call_time_high")) {
    bare[{row->device, row->param("api")}].second = value;
  }
  for (const auto& [row, value] : medians_of(m, "sync_cost", "call_time")) {
    // cudaDeviceSynchronize takes one of two levels per process, family and bare alike (0.43-0.47
    // or 0.67-0.77 us on H200s): three bare processes need not meet the family's level.
    if (row->param("api") == "cudaDeviceSynchronize") continue;
    const auto found = bare.find({row->device, row->param("api")});
    if (found == bare.end() || found->second.first <= 0) continue;
    const auto [low, high] = found->second;
    if (value < low * (1 - bare_agreement) || value > high * (1 + bare_agreement)) {
      out.push_back(gpu_prefix(row->device) + row->param("api") + " on finished work costs " + format_figure(value) +
                    " us in the family process but " + format_figure(low) + "-" + format_figure(high) +
                    " us in bare processes: something in the family's state changes what the call costs");
    }
  }
}

void graph_anomalies(const median_index& m, std::vector<std::string>& out) {
  // (device, kernels) -> (launches, graph)
  std::map<std::pair<std::optional<int>, std::string>, std::pair<std::optional<double>, std::optional<double>>> pairs;
  for (const auto& [row, value] : medians_of(m, "graph", "total_time")) {
    auto& entry = pairs[{row->device, row->param("kernels")}];
    if (row->param("api") == "launches") entry.first = value;
    if (row->param("api") == "graph") entry.second = value;
  }
  for (const auto& [key, times] : pairs) {
    const auto& [launches, graph] = times;
    if (launches && graph && *graph >= *launches && std::strtol(key.second.c_str(), nullptr, 10) >= 100) {
      out.push_back(gpu_prefix(key.first) + "one graph of " + key.second +
                    " empty kernels (" + format_figure(*graph) + " us) is no faster than " + key.second + " launches (" +
                    format_figure(*launches) + " us); graphs should amortise the launch cost");
    }
  }
}

void wakeup_anomalies(const median_index& m, std::vector<std::string>& out) {
  for (const auto& [row, busy] : medians_of(m, "wakeup", "cpu_busy")) {
    const std::string mode = row->param("mode");
    const std::string& api = row->param("api");
    const std::string where = gpu_prefix(row->device) + "mode " + mode + ", " + api + ": the waiting thread was busy " +
                              format_fixed(busy, 0) + " % of the wait";
    // cudaEventSynchronize on an event created without cudaEventBlockingSync spins in every
    // mode: the device flag governs device and stream waits only (measured on H200, CUDA 13).
    if (mode == "blocking_sync" && (api == "cudaDeviceSynchronize" || api == "cudaStreamSynchronize") &&
        busy > busy_percent) {
      out.push_back(where + "; blocking-sync should sleep, so the mode did not take effect");
    } else if (mode == "spin" && api == "cudaEventSynchronize_BlockingSync" && busy > busy_percent) {
      out.push_back(where + "; an event created with cudaEventBlockingSync should sleep in any mode");
    } else if (mode == "spin" && api == "cudaStreamSynchronize" && busy < busy_percent) {
      out.push_back(where + "; spin mode should spin, so the mode did not take effect");
    }
  }
  std::map<std::optional<int>, double> worst;  // device -> worst calibration
  for (const auto& [row, value] : medians_of(m, "wakeup", "clock_uncertainty")) {
    double& w = worst[row->device];
    w = std::max(w, value);
  }
  for (const auto& [device, uncertainty] : worst) {
    if (uncertainty > clock_uncertainty_limit_us) {
      out.push_back(gpu_prefix(device) + "host <-> %globaltimer calibration is only good to +-" +
                    format_figure(uncertainty) + " us; wake-up latencies below that are noise");
    }
  }
}

void trap_anomalies(const median_index& m, std::vector<std::string>& out) {
  for (const auto& [row, value] : medians_of(m, "trap", "relative_throughput")) {
    if (row->param("api") == "keep_on_gpu" && value < keep_on_gpu_min_throughput) {
      out.push_back(gpu_prefix(row->device) + "sync trap: keeping the value on the GPU reaches only " + format_fixed(value * 100, 0) +
                    " % of the loop that never reads back; one copy at the end should cost nothing");
    }
  }
}

// The loop that never reads back queues its kernels, so by the host clock a step should take one
// kernel as the GPU timed it behind the spin gate (4.96-4.97 against 4.97-4.98 us on an H200).
// Faster means the host clock and the GPU's timer disagree; slower means the host cannot launch
// as fast as the kernels run, and the trap is then measured against the launch rate.
void never_loop_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::map<std::optional<int>, std::pair<double, double>> by_device;  // device -> (fastest never step, kernel)
  for (const auto& [row, value] : medians_of(m, "trap", "baseline_time_per_step")) {
    auto [entry, inserted] = by_device.try_emplace(row->device, value, 0.0);
    if (!inserted) entry->second.first = std::min(entry->second.first, value);
  }
  for (const auto& [row, value] : medians_of(m, "trap", "step_kernel_time")) {
    const auto entry = by_device.find(row->device);
    if (entry != by_device.end()) entry->second.second = value;
  }
  for (const auto& [device, times] : by_device) {
    const auto [host_step, kernel] = times;
    if (!(kernel > 0)) continue;
    const std::string figures = format_figure(host_step) + " us per step by the host clock against " +
                                format_figure(kernel) + " us per kernel by the GPU's clock";
    if (host_step < clock_agreement_low * kernel) {
      out.push_back(gpu_prefix(device) + "sync trap: the loop that never reads back ran faster than its kernels (" +
                    figures + "): the GPU's timer (%globaltimer, CUDA events) and the host clock disagree, so this "
                    "run's device-timed sync figures are suspect");
    } else if (host_step > launch_bound_high * kernel) {
      out.push_back(gpu_prefix(device) + "sync trap: the loop that never reads back is slower than its kernels (" +
                    figures + "): the host launches slower than the kernels run, so the trap is measured against "
                    "the launch rate; a longer --trap-kernel-us restores a kernel-bound baseline");
    }
  }
}

void dependency_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::map<std::optional<int>, std::pair<std::optional<double>, std::optional<double>>> gaps;  // device -> (wait event, host)
  for (const auto& [row, value] : medians_of(m, "dependency", "gap")) {
    auto& entry = gaps[row->device];
    if (row->param("api") == "cudaStreamWaitEvent") entry.first = value;
    if (row->param("api") == "host_sync_then_launch") entry.second = value;
  }
  for (const auto& [device, pair] : gaps) {
    const auto& [wait_event, host] = pair;
    if (wait_event && host && *wait_event >= *host) {
      out.push_back(gpu_prefix(device) + "a cudaStreamWaitEvent dependency (" +
                    format_figure(*wait_event) + " us gap) is no faster than a host round trip (" + format_figure(*host) +
                    " us); the device should release the consumer itself");
    }
  }
}

std::string device_cell(std::optional<int> device) { return device ? std::to_string(*device) : "?"; }

// The teaching figures, gating or not: what a launch, a graph and the sync trap cost per GPU.
std::string sync_section(const median_index& m) {
  const auto value_of = [&](const std::string& case_name, const std::string& metric, std::optional<int> device,
                            const std::string& api, const std::string& extra_key,
                            const std::string& extra_value) -> std::optional<double> {
    for (const auto& [row, value] : medians_of(m, case_name, metric)) {
      if (row->device == device && row->param("api") == api &&
          (extra_key.empty() || row->param(extra_key) == extra_value)) {
        return value;
      }
    }
    return std::nullopt;
  };
  std::set<std::optional<int>> devices;
  std::set<int> kernel_counts;
  for (const auto& [key, entry] : m) {
    if (key.first == "launch" || key.first == "graph" || key.first == "trap") devices.insert(entry.row->device);
    if (key.first == "graph") kernel_counts.insert(static_cast<int>(std::strtol(entry.row->param("kernels").c_str(), nullptr, 10)));
  }
  if (devices.empty()) return "";
  const auto us = [](std::optional<double> v) { return v ? format_figure(*v) + " us" : std::string(); };
  const auto slower = [](std::optional<double> throughput) {
    return throughput && *throughput > 0 ? format_figure(1 / *throughput) + "x" : std::string();
  };

  std::vector<std::string> launch_header = {"GPU", "empty launch", "launch + sync"};
  for (int k : kernel_counts) launch_header.push_back(std::to_string(k) + " launches vs 1 graph");
  table_rows launches;
  table_rows trap;
  for (const auto& device : devices) {
    std::vector<std::string> line = {device_cell(device), us(value_of("launch", "launch_time", device, "empty_kernel", "", "")),
                                     us(value_of("launch", "launch_sync_time", device, "empty_kernel", "", ""))};
    for (int k : kernel_counts) {
      const auto many = value_of("graph", "total_time", device, "launches", "kernels", std::to_string(k));
      const auto one = value_of("graph", "total_time", device, "graph", "kernels", std::to_string(k));
      line.push_back(many && one && *one > 0 ? format_figure(*many) + " vs " + format_figure(*one) + " us (" +
                                                   format_figure(*many / *one) + "x)"
                                             : "");
    }
    launches.push_back(std::move(line));
    std::vector<std::string> trap_line = {
        device_cell(device), slower(value_of("trap", "relative_throughput", device, "readback_pageable", "every", "1")),
        slower(value_of("trap", "relative_throughput", device, "sync_only", "every", "1")),
        slower(value_of("trap", "relative_throughput", device, "readback_async", "every", "1")),
        slower(value_of("trap", "relative_throughput", device, "keep_on_gpu", "", ""))};
    if (std::any_of(trap_line.begin() + 1, trap_line.end(), [](const std::string& cell) { return !cell.empty(); })) {
      trap.push_back(std::move(trap_line));
    }
  }
  std::string out = "\nLaunch cost, host clock (medians; reported, not gated: docs/methodology.md).\n\n" +
                    markdown_table(launch_header, launches);
  if (!trap.empty()) {
    out += "\nSync trap: how much slower a loop of small kernels runs than the same loop that never reads back.\n\n" +
           markdown_table({"GPU", "4-byte read-back every kernel (.item())", "stream sync only, every kernel",
                           "async read-back every kernel", "kept on the GPU, one copy at the end"},
                          trap);
  }
  return out;
}

}  // namespace

family_rules sync_report_rules() {
  return rules_from_medians("sync",
                            {launch_anomalies, graph_anomalies, bare_process_anomalies, wakeup_anomalies, trap_anomalies,
                             never_loop_anomalies, dependency_anomalies},
                            sync_section,
                            "Sync figures are host-clock times (median call) and ratios; none has a theoretical peak. "
                            "Wake-up latencies map the kernel's %globaltimer stamp to the host clock (see docs/methodology.md).");
}

}  // namespace hdb
