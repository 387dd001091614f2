// Report rules of the sync family: no peaks (its figures are times and ratios, not rates), and
// anomalies that say a node waits worse than it should: launches far slower than a healthy host
// manages, a graph that saves nothing, a scheduling mode or an event flag that did not change
// how the host waits, a calibration too loose for wake-up latencies, a fix for the sync trap
// that does not fix it, and a cross-stream wait slower than a host round trip.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hdb/harness/family_rules.hpp"
#include "hdb/harness/tables.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

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

template <class Map>
auto of(const Map& m, const std::string& case_name, const std::string& metric) {
  return m.equal_range(std::pair{case_name, metric});
}

void launch_anomalies(const median_index& m, std::vector<std::string>& out) {
  for (auto [it, end] = of(m, "launch", "launch_time"); it != end; ++it) {
    if (it->second.value > launch_limit_us) {
      out.push_back(gpu_prefix(it->second.row->params.get("device")) + "an empty kernel launch costs " + format_figure(it->second.value) +
                    " us of host time (a healthy host: 2-5 us); look for a profiler or debugger attached, "
                    "CUDA_LAUNCH_BLOCKING, CPU frequency scaling or a host thread far from the GPU's NUMA node");
    }
  }
  for (auto [it, end] = of(m, "launch", "launch_sync_time"); it != end; ++it) {
    if (it->second.value > launch_sync_limit_us) {
      out.push_back(gpu_prefix(it->second.row->params.get("device")) + "launch + cudaStreamSynchronize takes " + format_figure(it->second.value) +
                    " us (a healthy host: 5-15 us); the host wakes up slowly (scheduling mode, CPU idle states)");
    }
  }
}

void graph_anomalies(const median_index& m, std::vector<std::string>& out) {
  // (device, kernels) -> (launches, graph)
  std::map<std::pair<std::string, std::string>, std::pair<std::optional<double>, std::optional<double>>> pairs;
  for (auto [it, end] = of(m, "graph", "total_time"); it != end; ++it) {
    const result_row& row = *it->second.row;
    auto& entry = pairs[{row.params.get("device"), extra_param(row.params, "kernels")}];
    if (row.params.get("api") == "launches") entry.first = it->second.value;
    if (row.params.get("api") == "graph") entry.second = it->second.value;
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
  for (auto [it, end] = of(m, "wakeup", "cpu_busy"); it != end; ++it) {
    const result_row& row = *it->second.row;
    const std::string mode = extra_param(row.params, "mode");
    const std::string& api = row.params.get("api");
    const double busy = it->second.value;
    const std::string where = gpu_prefix(row.params.get("device")) + "mode " + mode + ", " + api + ": the waiting thread was busy " +
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
  std::map<std::string, double> worst;  // device -> worst calibration
  for (auto [it, end] = of(m, "wakeup", "clock_uncertainty"); it != end; ++it) {
    double& w = worst[it->second.row->params.get("device")];
    w = std::max(w, it->second.value);
  }
  for (const auto& [device, uncertainty] : worst) {
    if (uncertainty > clock_uncertainty_limit_us) {
      out.push_back(gpu_prefix(device) + "host <-> %globaltimer calibration is only good to +-" +
                    format_figure(uncertainty) + " us; wake-up latencies below that are noise");
    }
  }
}

void trap_anomalies(const median_index& m, std::vector<std::string>& out) {
  for (auto [it, end] = of(m, "trap", "relative_throughput"); it != end; ++it) {
    const result_row& row = *it->second.row;
    if (row.params.get("api") == "keep_on_gpu" && it->second.value < keep_on_gpu_min_throughput) {
      out.push_back(gpu_prefix(row.params.get("device")) + "sync trap: keeping the value on the GPU reaches only " + format_fixed(it->second.value * 100, 0) +
                    " % of the loop that never reads back; one copy at the end should cost nothing");
    }
  }
}

void dependency_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> gaps;  // device -> (wait event, host)
  for (auto [it, end] = of(m, "dependency", "gap"); it != end; ++it) {
    const result_row& row = *it->second.row;
    auto& entry = gaps[row.params.get("device")];
    if (row.params.get("api") == "cudaStreamWaitEvent") entry.first = it->second.value;
    if (row.params.get("api") == "host_sync_then_launch") entry.second = it->second.value;
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

}  // namespace

family_rules sync_report_rules() {
  family_rules rules;
  rules.family = "sync";
  rules.peak = [](const result_row&, const json&) -> std::optional<peak_ref> { return std::nullopt; };
  rules.anomalies = [](const std::vector<result_row>& rows, const json&, std::vector<std::string>& out) {
    const auto m = ok_medians(rows);
    launch_anomalies(m, out);
    graph_anomalies(m, out);
    wakeup_anomalies(m, out);
    trap_anomalies(m, out);
    dependency_anomalies(m, out);
  };
  rules.footnote =
      "Sync figures are host-clock times (median call) and ratios; none has a theoretical peak. "
      "Wake-up latencies map the kernel's %globaltimer stamp to the host clock (see docs/sync.md).";
  return rules;
}

}  // namespace hdb
