// What only the copy family can say about its numbers: pinned copies that lose to pageable ones
// and h2d/d2h asymmetry are anomalies; both directions at once get a table of their own. % of
// peak comes from each case's traffic class (bench/copy/schema.json), not from here.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/tables.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

constexpr double asymmetry_limit = 0.10;  // h2d vs d2h pinned, largest size
// Below this size both kinds are bound by per-call overhead, so their order says nothing.
constexpr double pageable_check_min_bytes = 64 * 1024;
// Pageable must beat pinned by more than run-to-run noise before it is called an anomaly.
constexpr double pageable_check_margin = 1.05;

using params_map = std::map<std::string, std::string>;
using value_key = std::tuple<std::string, std::optional<int>, std::optional<int>, params_map, std::string>;  // case, device, gpus, params, metric

std::map<value_key, double> medians(const std::vector<result_row>& rows) {
  std::map<value_key, double> values;
  for (const auto& row : rows) {
    if (is_ok_median(row)) values[{row.case_name, row.device, row.gpus, row.params, row.metric}] = *row.value;
  }
  return values;
}

const std::string& param(const params_map& params, const std::string& key) {
  static const std::string none;
  const auto it = params.find(key);
  return it == params.end() ? none : it->second;
}

std::string where(const value_key& key) {
  const auto& [case_name, device, gpus, params, metric] = key;
  result_row shown;
  shown.device = device;
  shown.gpus = gpus;
  shown.params = params;
  return "copy " + case_name + " " + describe_case(shown) + " " + metric;
}

void pageable_vs_pinned(const std::map<value_key, double>& values, std::vector<std::string>& out) {
  for (const auto& [key, pageable] : values) {
    const auto& [case_name, device, gpus, params, metric] = key;
    if (metric != "bandwidth" || param(params, "host_kind") != "pageable") continue;
    if (std::strtod(param(params, "size_bytes").c_str(), nullptr) < pageable_check_min_bytes) continue;
    auto pinned_key = key;
    std::get<3>(pinned_key)["host_kind"] = "pinned";
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
    const auto& [case_name, device, gpus, params, metric] = key;
    if (metric != "bandwidth" || param(params, "host_kind") != "pinned" || param(params, "direction") != "h2d") continue;
    auto d2h_key = key;
    std::get<3>(d2h_key)["direction"] = "d2h";
    const auto d2h = values.find(d2h_key);
    char* end = nullptr;
    const double size = std::strtod(param(params, "size_bytes").c_str(), &end);
    if (d2h == values.end() || end == param(params, "size_bytes").c_str()) continue;
    auto group = key;
    std::get<3>(group).erase("size_bytes");
    std::get<3>(group).erase("direction");
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
  std::map<int, std::pair<double, std::map<std::string, double>>> largest;  // device -> (size, metric -> value)
  for (const auto& [key, value] : medians(rows)) {
    const auto& [case_name, device, gpus, params, metric] = key;
    if (case_name != "bandwidth" || param(params, "direction") != "bidir" || param(params, "host_kind") != "pinned" ||
        param(params, "api") != "async" || !device) {
      continue;
    }
    const double size = std::strtod(param(params, "size_bytes").c_str(), nullptr);
    auto [it, inserted] = largest.try_emplace(*device, size, std::map<std::string, double>{});
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
    table.push_back({std::to_string(device), format_size(static_cast<std::size_t>(entry.first)), cell("bandwidth"), cell("bandwidth_h2d"), cell("bandwidth_d2h")});
  }
  return "\nBoth directions at once (pinned, two streams; medians, reported but not gated: docs/harness.md).\n\n" +
         markdown_table({"GPU", "size", "total", "h2d share", "d2h share"}, table);
}

}  // namespace

family_rules copy_report_rules() {
  return {
      "copy",
      [](const std::vector<result_row>& rows, const json&, std::vector<std::string>& out) {
        const auto values = medians(rows);
        pageable_vs_pinned(values, out);
        direction_asymmetry(values, out);
      },
      [](const std::vector<result_row>& rows, const json&) { return bidir_section(rows); },
      "% of peak: host copies (h2d, d2h) against the PCIe peak per direction of the GPU they ran on, at its maximum "
      "link (GT/s x lanes x encoding / 8); all GPUs at once against the sum of their links; bidir totals against "
      "twice one link; d2d against that GPU's HBM peak, with twice the counted bytes as traffic (each byte is read "
      "and written). Each case names its traffic class in bench/copy/schema.json's terms.",
  };
}

}  // namespace hdb
