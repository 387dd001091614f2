// Report rules of the overlap family. Only the calibration copy rates carry a traffic class (the
// GPU's PCIe link, in bench/overlap/schema.json); pipeline figures are times, ratios and efficiencies against the family's own
// bound, measured beside each pass. Anomalies: streams that do not overlap, efficiency far from the bound (or past
// it: a probe that undersold the link or kernel), stream-semantics pitfalls that did not show, a CUDA
// graph slower than stream launches, pageable pipelines beating pinned ones, a regime whose
// kernel missed its calibrated ratio. Section: speedup and efficiency per regime and stream
// count, the movement tax, the stream-semantics variants.
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

// Two streams can at most halve a balanced pass; anything below this is no overlap at all.
constexpr double min_multi_stream_speedup = 1.1;
// Pinned pipelines on >= 3 streams should come close to the bound; below this fraction of the
// room between serial and ideal, overlap is being lost (small chunks, copy engines, a busy host).
constexpr double min_efficiency_percent = 70.0;
// Above this the pipeline beat the bound: the probe beside its passes measured the link or kernel too slow.
constexpr double max_efficiency_percent = 115.0;
// The legacy default stream must serialise: at least this much slower than non-blocking streams.
constexpr double min_serialisation_slowdown = 1.15;
// Per-thread default streams restore overlap: at most this much slower than non-blocking streams.
constexpr double max_per_thread_slowdown = 1.15;
constexpr double max_graph_slowdown = 1.10;
// A calibrated regime's kernel/copy ratio may miss its target by this factor before it is named.
constexpr double ratio_tolerance = 1.3;

int int_of(const std::string& text) { return static_cast<int>(std::strtol(text.c_str(), nullptr, 10)); }

// Best median of `metric` over chunk counts for each (device, regime, host kind, streams) of the
// sweep (case pipeline, api nonblocking), with the chunk count that reached it.
struct best_value {
  double value = 0;
  int chunks = 0;
};
using device_id = std::optional<int>;
using sweep_key = std::tuple<device_id, std::string, std::string, int>;  // device, regime, host kind, streams

std::map<sweep_key, best_value> best_over_chunks(const median_index& m, const std::string& metric) {
  std::map<sweep_key, best_value> best;
  for (const auto& [row, value] : medians_of(m, "pipeline", metric)) {
    if (row->param("api") != "nonblocking") continue;
    const sweep_key key{row->device, row->param("regime"), row->param("host_kind"),
                        int_of(row->param("streams"))};
    auto [it, inserted] = best.try_emplace(key, best_value{value, int_of(row->param("chunks"))});
    if (!inserted && value > it->second.value) it->second = {value, int_of(row->param("chunks"))};
  }
  return best;
}

void overlap_anomalies(const median_index& m, std::vector<std::string>& out) {
  // Multi-stream pinned no faster than one stream.
  std::map<std::tuple<device_id, std::string>, double> best_multi;  // (device, regime) -> best speedup, S >= 2
  for (const auto& [key, best] : best_over_chunks(m, "speedup")) {
    const auto& [device, regime, host, streams] = key;
    if (host != "pinned" || streams < 2) continue;
    double& b = best_multi[{device, regime}];
    b = std::max(b, best.value);
  }
  for (const auto& [key, speedup] : best_multi) {
    if (speedup < min_multi_stream_speedup) {
      out.push_back(gpu_prefix(std::get<0>(key)) + std::get<1>(key) + " pipeline, pinned: the best multi-stream pass is only " +
                    format_figure(speedup) + "x faster than one stream; copies and kernels are not overlapping "
                    "(one copy engine? CUDA_LAUNCH_BLOCKING? a profiler serialising streams?)");
    }
  }
  // Efficiency far from the bound, or past it. One line per (device, regime): the worst / best.
  std::map<std::tuple<device_id, std::string>, std::pair<const result_row*, double>> worst, highest;
  for (const auto& [row, value] : medians_of(m, "pipeline", "efficiency")) {
    if (row->param("api") != "nonblocking" || row->param("host_kind") != "pinned") continue;
    if (int_of(row->param("streams")) < 3) continue;
    const std::tuple<device_id, std::string> key{row->device, row->param("regime")};
    auto [w, w_new] = worst.try_emplace(key, row, value);
    if (!w_new && value < w->second.second) w->second = {row, value};
    auto [h, h_new] = highest.try_emplace(key, row, value);
    if (!h_new && value > h->second.second) h->second = {row, value};
  }
  const auto where = [](const result_row& row) {
    return row.param("regime") + " pipeline, pinned, " + row.param("streams") + " streams x " +
           row.param("chunks") + " chunks";
  };
  for (const auto& [key, entry] : worst) {
    if (entry.second < min_efficiency_percent) {
      out.push_back(gpu_prefix(std::get<0>(key)) + where(*entry.first) + ": overlap efficiency " +
                    format_fixed(entry.second, 0) + " %, far from the ideal bound (expected >= " +
                    format_fixed(min_efficiency_percent, 0) + " % on >= 3 streams)");
    }
  }
  for (const auto& [key, entry] : highest) {
    if (entry.second > max_efficiency_percent) {
      out.push_back(gpu_prefix(std::get<0>(key)) + where(*entry.first) + ": overlap efficiency " +
                    format_fixed(entry.second, 0) + " % beats the ideal bound; the probe beside its passes measured the "
                    "link or the kernel slower than the pipeline ran them");
    }
  }
  // Pageable faster than pinned at the same stream count.
  const auto best_time = best_over_chunks(m, "throughput");
  for (const auto& [key, pageable] : best_time) {
    const auto& [device, regime, host, streams] = key;
    if (host != "pageable") continue;
    const auto pinned = best_time.find({device, regime, "pinned", streams});
    if (pinned != best_time.end() && pageable.value > pinned->second.value * 1.05) {
      out.push_back(gpu_prefix(device) + regime + " pipeline on " + std::to_string(streams) + " streams: pageable (" +
                    format_figure(pageable.value) + " GB/s) is faster than pinned (" + format_figure(pinned->second.value) +
                    " GB/s)");
    }
  }
}

void semantics_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::map<device_id, std::map<std::string, double>> by_device;  // device -> api -> pipeline time
  for (const auto& [row, value] : medians_of(m, "stream_semantics", "pipeline_time")) {
    by_device[row->device][row->param("api")] = value;
  }
  for (const auto& [device, times] : by_device) {
    const auto reference = times.find("nonblocking");
    if (reference == times.end()) continue;
    const auto ratio = [&](const char* api) -> std::optional<double> {
      const auto it = times.find(api);
      return it == times.end() ? std::nullopt : std::optional<double>(it->second / reference->second);
    };
    if (const auto legacy = ratio("legacy_default"); legacy && *legacy < min_serialisation_slowdown) {
      out.push_back(gpu_prefix(device) + "a kernel stage on the legacy default stream costs only " + format_figure(*legacy) +
                    "x the non-blocking pipeline; its implicit synchronisation should serialise the streams "
                    "(was the binary built with --default-stream per-thread?)");
    }
    if (const auto per_thread = ratio("per_thread_default"); per_thread && *per_thread > max_per_thread_slowdown) {
      out.push_back(gpu_prefix(device) + "the per-thread default stream pipeline is " + format_figure(*per_thread) +
                    "x slower than non-blocking streams; it should overlap like them");
    }
    if (const auto host_sync = ratio("host_sync"); host_sync && *host_sync < min_serialisation_slowdown) {
      out.push_back(gpu_prefix(device) + "a host sync after every chunk costs only " + format_figure(*host_sync) +
                    "x the non-blocking pipeline; it should serialise the chunks");
    }
  }
  std::map<device_id, std::map<std::string, double>> graphs;
  for (const auto& [row, value] : medians_of(m, "graph", "pipeline_time")) {
    graphs[row->device][row->param("api")] = value;
  }
  for (const auto& [device, times] : graphs) {
    const auto streams = times.find("nonblocking");
    const auto graph = times.find("graph");
    if (streams != times.end() && graph != times.end() && graph->second > streams->second * max_graph_slowdown) {
      out.push_back(gpu_prefix(device) + "the CUDA-graph pipeline (" + format_figure(graph->second) +
                    " us) is slower than launching it stream by stream (" + format_figure(streams->second) + " us)");
    }
  }
}

void calibration_anomalies(const median_index& m, std::vector<std::string>& out) {
  const std::map<std::string, double> targets = {{"balanced", 1.0}, {"compute_heavy", 4.0}, {"copy_heavy", 0.25}};
  for (const auto& [row, value] : medians_of(m, "calibration", "kernel_copy_ratio")) {
    const auto target = targets.find(row->param("regime"));
    if (target == targets.end()) continue;
    if (value > target->second * ratio_tolerance || value < target->second / ratio_tolerance) {
      out.push_back(gpu_prefix(row->device) + target->first + " regime: the kernel takes " + format_figure(value) +
                    "x the copy time of the same bytes (target " + format_figure(target->second) +
                    "x); the kernel's clock changed between calibration points");
    }
  }
}

std::string device_cell(device_id device) { return device ? std::to_string(*device) : "?"; }

std::string section(const median_index& m) {
  const auto speedups = best_over_chunks(m, "speedup");
  if (speedups.empty()) return "";
  std::map<sweep_key, double> efficiency;  // at the chunk count of the best speedup
  for (const auto& [row, value] : medians_of(m, "pipeline", "efficiency")) {
    if (row->param("api") != "nonblocking") continue;
    const sweep_key key{row->device, row->param("regime"), row->param("host_kind"),
                        int_of(row->param("streams"))};
    const auto best = speedups.find(key);
    if (best != speedups.end() && best->second.chunks == int_of(row->param("chunks"))) efficiency[key] = value;
  }
  std::set<int> stream_counts;
  std::map<std::tuple<device_id, std::string, std::string>, std::map<int, std::string>> cells;
  for (const auto& [key, best] : speedups) {
    const auto& [device, regime, host, streams] = key;
    stream_counts.insert(streams);
    std::string cell = format_figure(best.value) + "x";
    if (const auto e = efficiency.find(key); e != efficiency.end()) cell += " (" + format_fixed(e->second, 0) + " %)";
    cell += " @" + std::to_string(best.chunks);
    cells[{device, regime, host}][streams] = cell;
  }
  std::vector<std::string> header = {"GPU", "regime", "memory"};
  for (int s : stream_counts) header.push_back(std::to_string(s) + (s == 1 ? " stream" : " streams"));
  table_rows table;
  for (const auto& [key, by_streams] : cells) {
    std::vector<std::string> line = {device_cell(std::get<0>(key)), std::get<1>(key), std::get<2>(key)};
    for (int s : stream_counts) {
      const auto it = by_streams.find(s);
      line.push_back(it == by_streams.end() ? "" : it->second);
    }
    table.push_back(std::move(line));
  }
  std::string out =
      "\nOverlap: median speedup over one stream in one chunk, best chunk count (@C), overlap efficiency in "
      "parentheses (docs/methodology.md).\n\n" +
      markdown_table(header, table);

  table_rows tax;
  std::map<std::tuple<device_id, std::string>, std::map<std::string, double>> tax_cells;
  for (const auto& [row, value] : medians_of(m, "movement_tax", "tax_ratio")) {
    tax_cells[{row->device, row->param("regime")}][row->param("api")] = value;
  }
  for (const auto& [key, by_api] : tax_cells) {
    std::vector<std::string> line = {device_cell(std::get<0>(key)), std::get<1>(key)};
    for (const char* api : {"round_trip", "host_generated", "device_generated"}) {
      const auto it = by_api.find(api);
      line.push_back(it == by_api.end() ? "" : format_figure(it->second) + "x");
    }
    tax.push_back(std::move(line));
  }
  if (!tax.empty()) {
    out += "\nMovement tax: one call's time over the kernel alone on resident data.\n\n" +
           markdown_table({"GPU", "regime", "H2D + kernel + D2H", "CPU-generated + H2D + kernel", "device-generated + kernel"}, tax);
  }

  table_rows semantics;
  for (const auto& [row, value] : medians_of(m, "stream_semantics", "speedup")) {
    semantics.push_back({device_cell(row->device), row->param("api"), format_figure(value) + "x"});
  }
  for (const auto& [row, value] : medians_of(m, "graph", "speedup")) {
    semantics.push_back({device_cell(row->device), "4 streams, " + row->param("api"), format_figure(value) + "x"});
  }
  if (!semantics.empty()) {
    out += "\nStream semantics (balanced, pinned; 2 streams x 8 chunks unless named) and the CUDA-graph pipeline.\n\n" +
           markdown_table({"GPU", "variant", "speedup"}, semantics);
  }
  return out;
}

}  // namespace

family_rules overlap_report_rules() {
  return rules_from_medians(
      "overlap", {overlap_anomalies, semantics_anomalies, calibration_anomalies}, section,
      "Only the start-up calibration's copy rates have a peak (traffic: the GPU's PCIe link per direction, twice "
      "that for both at once). Pipeline speedup and efficiency are measured against the family's own bound, from link "
      "and kernel rates probed right after each pass in the same repetition (docs/methodology.md).");
}

}  // namespace hdb
