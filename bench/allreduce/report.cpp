// Report rules of the allreduce family. % of peak comes from the traffic class each case picks
// (bench/allreduce/schema.json lists which a metric may carry): busbw is nccl-tests' bus bandwidth,
// defined so that it compares with one GPU's per-direction link rate whatever n is
// (doc/PERFORMANCE.md), hence nvlink_bus, the slowest GPU's links_active x the per-link rate
// meta.json records; with P2P disabled every byte crosses each GPU's PCIe link, hence
// pcie_per_direction_per_gpu; one GPU's out-of-place all-reduce algbw is a device copy
// (hbm_read_write). On a node without NVLink a default-transport busbw has no peak and no floor.
// Anomalies: wrong values (a failed verification), busbw far below the line rate at the largest size.
// Section: the scaling table (busbw per n, efficiency against n = 2), NVLink vs P2P-disabled, and the
// communication/compute overlap.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hdb/harness/family_rules.hpp"
#include "hdb/harness/tables.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// NCCL reaches ~70-75 % of the NVLink line rate at GiB sizes on H100/H200; below half is broken.
constexpr double busbw_floor = 0.5;

std::optional<long long> number_param(const result_row& row, std::string_view key) {
  const auto& text = row.param(key);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

std::string describe(const result_row& row) { return "allreduce " + row.case_name + " " + describe_case(row); }

// Largest-size busbw of every (collective, dtype, placement, interconnect, n) curve.
std::map<std::string, const result_row*> largest_busbw(const std::vector<result_row>& rows) {
  std::map<std::string, const result_row*> largest;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.metric != "busbw" || row.case_name != "collective") continue;
    auto group_row = row;
    group_row.params.erase("size_bytes");
    const std::string group = describe_case(group_row);
    const auto it = largest.find(group);
    if (it == largest.end() || number_param(row, "size_bytes") > number_param(*it->second, "size_bytes")) largest[group] = &row;
  }
  return largest;
}

void allreduce_anomalies(const std::vector<result_row>& rows, const json& meta, std::vector<std::string>& out) {
  std::set<std::string> reported;
  for (const auto& row : rows) {
    const bool failed_check = row.status == row_status::failed && row.reason.find("wrong values") != std::string::npos;
    const bool counted = is_ok_median(row) && row.metric == "wrong_values" && *row.value > 0;
    if ((failed_check || counted) && reported.insert(row.case_name + " " + describe_case(row)).second) {
      out.push_back(describe(row) + ": wrong values: " + (failed_check ? row.reason : format_figure(*row.value) + " wrong"));
    }
  }
  for (const auto& [group, row] : largest_busbw(rows)) {
    const auto peak = row_peak(*row, meta);
    if (!peak || row->param("interconnect") == "p2p_disabled") continue;
    if (*row->value < busbw_floor * peak->value) {
      out.push_back(describe(*row) + ": busbw " + format_figure(*row->value) + " GB/s at the largest size is " +
                    format_fixed(percent_of_peak(*row->value, *peak), 0) + " % of the " + peak->basis +
                    " line rate (" + format_figure(peak->value) + " GB/s); NCCL reaches ~70 % when healthy");
    }
  }
}

const result_row* find_median(const std::vector<result_row>& rows, const std::string& kind, const std::string& metric,
                              const std::string& api, long long ranks, const std::string& interconnect, bool largest) {
  const result_row* best = nullptr;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != kind || row.metric != metric || row.param("api") != api ||
        number_param(row, "ranks") != ranks || row.param("dtype") != "float" ||
        row.param("placement") != "out_of_place" || row.param("interconnect") != interconnect) {
      continue;
    }
    const auto size = number_param(row, "size_bytes");
    if (!best || (largest ? size > number_param(*best, "size_bytes") : size < number_param(*best, "size_bytes"))) best = &row;
  }
  return best;
}

std::string allreduce_section(const std::vector<result_row>& rows, const json& meta) {
  std::set<long long> ranks;
  for (const auto& row : rows) {
    if (const auto n = number_param(row, "ranks"); n && is_ok_median(row)) ranks.insert(*n);
  }
  if (ranks.empty()) return "";
  std::string text = "#### All-reduce scaling (float, out of place, default transports)\n\n";
  table_rows table;
  const result_row* base = find_median(rows, "collective", "busbw", "all_reduce", 2, "default", true);
  for (long long n : ranks) {
    const result_row* bw = find_median(rows, "collective", n > 1 ? "busbw" : "algbw", "all_reduce", n, "default", true);
    const result_row* small = find_median(rows, "collective", "time", "all_reduce", n, "default", false);
    if (!bw) continue;
    const auto peak = row_peak(*bw, meta);
    const bool comparable = n > 1 && base && number_param(*base, "size_bytes") == number_param(*bw, "size_bytes");
    table.push_back({std::to_string(n), bw->param("size_bytes"), (n > 1 ? "busbw " : "algbw ") + format_fixed(*bw->value, 0),
                     peak ? format_fixed(percent_of_peak(*bw->value, *peak), 0) + " %" : "-",
                     comparable ? format_fixed(*bw->value / *base->value, 2) : "-",
                     small ? format_figure(*small->value) + " us @ " + small->param("size_bytes") + " B" : "-"});
  }
  text += markdown_table({"n", "largest size (B)", "GB/s", "% of peak", "busbw / busbw(n=2)", "smallest-size time"}, table);
  text += "\nScaling efficiency is busbw(n) / busbw(2) at the largest size: busbw already removes the ring's "
          "2(n-1)/n, so a perfect interconnect keeps it at 1.\n";

  table_rows staged;
  for (long long n : ranks) {
    const result_row* off = find_median(rows, "collective", "busbw", "all_reduce", n, "p2p_disabled", true);
    if (!off) continue;
    const result_row* on = nullptr;
    for (const auto& row : rows) {
      if (is_ok_median(row) && row.case_name == "collective" && row.metric == "busbw" && row.param("api") == "all_reduce" &&
          number_param(row, "ranks") == n && row.param("dtype") == "float" &&
          row.param("placement") == "out_of_place" && row.param("interconnect") == "default" &&
          row.param("size_bytes") == off->param("size_bytes")) {
        on = &row;
      }
    }
    staged.push_back({std::to_string(n), off->param("size_bytes"), on ? format_figure(*on->value) : "-",
                      format_figure(*off->value), on ? format_fixed(*on->value / *off->value, 1) + "x" : "-"});
  }
  if (!staged.empty()) {
    text += "\n#### NVLink vs NCCL_P2P_DISABLE=1 (all-reduce busbw, GB/s)\n\n";
    text += markdown_table({"n", "size (B)", "default", "P2P disabled", "default / disabled"}, staged);
  }

  table_rows overlap;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != "overlap" || row.metric != "comm_hidden") continue;
    const auto value_of = [&](const std::string& metric) {
      for (const auto& other : rows) {
        if (is_ok_median(other) && other.case_name == "overlap" && other.metric == metric && other.device == row.device &&
            other.gpus == row.gpus && other.params == row.params) {
          return format_figure(*other.value);
        }
      }
      return std::string("-");
    };
    overlap.push_back({row.param("ranks"), row.param("size_bytes"), value_of("comm_time"), value_of("compute_time"),
                       value_of("overlapped_time"), value_of("comm_slowdown"), value_of("compute_slowdown"),
                       format_fixed(*row.value, 2)});
  }
  if (!overlap.empty()) {
    text += "\n#### Communication/compute overlap\n\n";
    text += markdown_table({"n", "size (B)", "comm alone (us)", "compute alone (us)", "both (us)", "comm slowdown",
                            "compute slowdown", "comm hidden"},
                           overlap);
  }
  return text;
}

}  // namespace

family_rules allreduce_report_rules() {
  family_rules rules;
  rules.family = "allreduce";
  rules.anomalies = allreduce_anomalies;
  rules.section = allreduce_section;
  rules.footnote =
      "busbw (nccl-tests: algbw x 2(n-1)/n for all-reduce, x (n-1)/n for reduce-scatter and all-gather) is graded "
      "against one GPU's per-direction interconnect: NVLink links_active x the per-link signalling rate the node "
      "reports (meta.json; NVIDIA's quoted data rate is some 6 % lower), the slowest GPU of the case; with "
      "NCCL_P2P_DISABLE=1 against the slower GPU's PCIe link per direction (the bytes go through host memory). "
      "n = 1 out-of-place all-reduce algbw against HBM with twice the bytes (each is read and written). A "
      "default-transport case on a node without NVLink has no peak.";
  return rules;
}

}  // namespace hdb
