// What the copy family's numbers mean: host copies against the PCIe link of the GPU they ran on,
// d2d against that GPU's HBM, all GPUs at once against the sum of their links; pinned copies
// that lose to pageable ones, and h2d/d2h asymmetry, are anomalies.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "hdb/harness/family_rules.hpp"
#include "hdb/harness/tables.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

constexpr double asymmetry_limit = 0.10;  // h2d vs d2h pinned, largest size
// Below this size both kinds are bound by per-call overhead, so their order says nothing.
constexpr double pageable_check_min_bytes = 64 * 1024;
// Pageable must beat pinned by more than run-to-run noise before it is called an anomaly.
constexpr double pageable_check_margin = 1.05;

std::optional<peak_ref> copy_peak(const result_row& row, const json& meta) {
  if (row.unit != "GB/s") return std::nullopt;
  const auto devices = row_devices(row);
  if (devices.empty()) return std::nullopt;
  const auto& direction = row.params.get("direction");
  const auto& host_kind = row.params.get("host_kind");
  const bool host_copy = !host_kind.empty() && host_kind != "device";
  const std::string gpu_names = "GPU " + row.params.get("device");
  if (host_copy && (direction == "h2d" || direction == "d2h")) {
    // Several GPUs at once: their links together are the ceiling, unless the host side is narrower.
    double total = 0;
    for (int d : devices) {
      const auto pcie = gpu_pcie_peak_gbps(gpu_record(meta, d));
      if (!pcie) return std::nullopt;
      total += *pcie;
    }
    if (row.metric == "bandwidth") return peak_ref{total, 1, "PCIe per direction, " + gpu_names};
    if (row.metric == "bandwidth_slowest_gpu") return peak_ref{total / static_cast<double>(devices.size()), 1, "PCIe per direction, one GPU"};
    return std::nullopt;
  }
  const auto& gpu = gpu_record(meta, devices.front());
  if (host_copy && direction == "bidir") {
    const auto pcie = gpu_pcie_peak_gbps(gpu);
    if (pcie && row.metric == "bandwidth") return peak_ref{2 * *pcie, 1, "PCIe both directions, " + gpu_names};
    if (pcie && (row.metric == "bandwidth_h2d" || row.metric == "bandwidth_d2h")) {
      return peak_ref{*pcie, 1, "PCIe per direction, " + gpu_names};
    }
  }
  if (direction == "d2d" && row.metric == "bandwidth" && gpu.is_object()) {
    const auto hbm = gpu.find("hbm_peak_GBps");
    // A d2d copy reads and writes every byte: HBM traffic is twice the counted bandwidth.
    if (hbm != gpu.end() && hbm->is_number()) return peak_ref{hbm->get<double>(), 2, "HBM, " + gpu_names};
  }
  return std::nullopt;
}

using value_key = std::tuple<std::string, case_params, std::string>;  // case, params, metric

std::map<value_key, double> medians(const std::vector<result_row>& rows) {
  std::map<value_key, double> values;
  for (const auto& row : rows) {
    if (is_ok_median(row)) values[{row.case_name, row.params, row.metric}] = *row.value;
  }
  return values;
}

std::string where(const value_key& key) {
  const auto& [case_name, params, metric] = key;
  auto shown = params;
  shown.set("gpu_uuid", "");
  return "copy " + case_name + " " + shown.describe() + " " + metric;
}

void pageable_vs_pinned(const std::map<value_key, double>& values, std::vector<std::string>& out) {
  for (const auto& [key, pageable] : values) {
    const auto& [case_name, params, metric] = key;
    if (metric != "bandwidth" || params.get("host_kind") != "pageable") continue;
    if (std::strtod(params.get("size_bytes").c_str(), nullptr) < pageable_check_min_bytes) continue;
    auto pinned_key = key;
    std::get<1>(pinned_key).set("host_kind", "pinned");
    const auto pinned = values.find(pinned_key);
    if (pinned != values.end() && pageable > pinned->second * pageable_check_margin) {
      out.push_back(where(key) + ": pageable (" + format_figure(pageable) + " GB/s) is faster than pinned (" +
                    format_figure(pinned->second) + " GB/s); pinned copies should never lose to the staged path");
    }
  }
}

void direction_asymmetry(const std::map<value_key, double>& values, std::vector<std::string>& out) {
  // For each pinned h2d group (size aside), the largest size that d2h also measured.
  std::map<value_key, std::pair<double, std::pair<double, double>>> largest;  // group -> (size, (h2d, d2h))
  for (const auto& [key, h2d] : values) {
    const auto& [case_name, params, metric] = key;
    if (metric != "bandwidth" || params.get("host_kind") != "pinned" || params.get("direction") != "h2d") continue;
    auto d2h_key = key;
    std::get<1>(d2h_key).set("direction", "d2h");
    const auto d2h = values.find(d2h_key);
    char* end = nullptr;
    const double size = std::strtod(params.get("size_bytes").c_str(), &end);
    if (d2h == values.end() || end == params.get("size_bytes").c_str()) continue;
    auto group = key;
    std::get<1>(group).set("size_bytes", "");
    std::get<1>(group).set("direction", "");
    auto [it, inserted] = largest.try_emplace(group, size, std::pair{h2d, d2h->second});
    if (!inserted && size > it->second.first) it->second = {size, {h2d, d2h->second}};
  }
  for (const auto& [group, entry] : largest) {
    const auto [h2d, d2h] = entry.second;
    const double asymmetry = std::abs(h2d - d2h) / std::max(h2d, d2h);
    if (asymmetry > asymmetry_limit) {
      out.push_back(where(group) + " at " + format_value(entry.first) + " B: h2d " + format_figure(h2d) + " GB/s vs d2h " +
                    format_figure(d2h) + " GB/s differ by " + format_fixed(asymmetry * 100, 0) + " % (> 10 %)");
    }
  }
}

// Both directions at once, at the largest size each GPU measured: reported here because it does not
// gate (docs/harness.md), and because the shares show which direction gives way.
std::string bidir_section(const std::vector<result_row>& rows) {
  std::map<std::string, std::pair<double, std::map<std::string, double>>> largest;  // device -> (size, metric -> value)
  for (const auto& [key, value] : medians(rows)) {
    const auto& [case_name, params, metric] = key;
    if (case_name != "bandwidth" || params.get("direction") != "bidir" || params.get("host_kind") != "pinned" ||
        params.get("api") != "async") {
      continue;
    }
    const double size = std::strtod(params.get("size_bytes").c_str(), nullptr);
    auto [it, inserted] = largest.try_emplace(params.get("device"), size, std::map<std::string, double>{});
    if (size > it->second.first) it->second = {size, {}};
    if (size == it->second.first) it->second.second[metric] = value;
  }
  if (largest.empty()) return "";
  table_rows table;
  for (const auto& [device, entry] : largest) {
    const auto cell = [&](const char* metric) {
      const auto it = entry.second.find(metric);
      return it == entry.second.end() ? std::string() : format_figure(it->second) + " GB/s";
    };
    table.push_back({device, format_size(static_cast<std::size_t>(entry.first)), cell("bandwidth"), cell("bandwidth_h2d"), cell("bandwidth_d2h")});
  }
  return "\nBoth directions at once (pinned, two streams; medians, reported but not gated: docs/harness.md).\n\n" +
         markdown_table({"GPU", "size", "total", "h2d share", "d2h share"}, table);
}

}  // namespace

family_rules copy_report_rules() {
  return {
      "copy",
      copy_peak,
      [](const std::vector<result_row>& rows, const json&, std::vector<std::string>& out) {
        const auto values = medians(rows);
        pageable_vs_pinned(values, out);
        direction_asymmetry(values, out);
      },
      [](const std::vector<result_row>& rows, const json&) { return bidir_section(rows); },
      "% of peak: host copies (h2d, d2h) against the PCIe peak per direction of the GPU they ran on, at its maximum "
      "link (GT/s x lanes x encoding / 8); all GPUs at once against the sum of their links; bidir totals against "
      "twice one link; d2d against that GPU's HBM peak, with twice the counted bytes as traffic (each byte is read "
      "and written).",
  };
}

}  // namespace hdb
