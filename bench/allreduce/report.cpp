// Report rules of the allreduce family. % of peak comes from the traffic class each case picks
// (bench/allreduce/schema.json lists which a metric may carry): busbw is nccl-tests' bus bandwidth,
// defined so that it compares with one GPU's per-direction link rate whatever n is
// (doc/PERFORMANCE.md), hence nvlink_bus, the slowest GPU's links_active x the per-link rate
// meta.json records; with P2P disabled every byte crosses each GPU's PCIe link, hence
// pcie_per_direction_per_gpu; one GPU's out-of-place all-reduce algbw is a device copy
// (hbm_read_write). On a node without NVLink a default-transport busbw has no peak and no floor.
// Anomalies: wrong values (a failed verification), busbw far below the line rate at the largest size.
// Section: the scaling table (busbw per n, efficiency against n = 2), NVLink vs P2P-disabled, the
// communication/compute overlap, and the straggler: every rank's time per delay, its rise over the
// no-delay row, and the lesson when the largest delay has a baseline (a lesson, not a gate: no
// anomaly comes from these rows).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"  // all_digits

namespace hdb {
namespace {

using json = nlohmann::json;

// NCCL reaches ~70-75 % of the NVLink line rate at GiB sizes on H100/H200; below half is broken.
constexpr double busbw_floor = 0.5;
// The straggler lesson ("every rank waited for the late one") is stated when every rank's time rose
// by at least this share of the delay: a rank that did not wait would rise by ~0, so 90 % leaves
// room for event jitter and the delay kernel's launch without ever calling a non-wait a wait.
constexpr double straggler_wait_share = 0.9;

std::optional<long long> number_param(const result_row& row, std::string_view key) {
  const auto& text = row.param(key);
  if (!all_digits(text)) return std::nullopt;
  return std::stoll(text);
}

std::string describe(const result_row& row) { return "allreduce " + row.case_name + " " + describe_case(row); }

// Largest-size busbw of every (collective, dtype, placement, interconnect, n) curve.
std::map<std::string, const result_row*> largest_busbw(const median_index& m) {
  std::map<std::string, const result_row*> largest;
  for (const auto& [row, value] : medians_of(m, "collective", "busbw")) {
    auto group_row = *row;
    group_row.params.erase("size_bytes");
    const std::string group = describe_case(group_row);
    const auto it = largest.find(group);
    if (it == largest.end() || number_param(*row, "size_bytes") > number_param(*it->second, "size_bytes")) largest[group] = row;
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
  for (const auto& [group, row] : largest_busbw(ok_medians(rows))) {
    const auto peak = row_peak(*row, meta);
    if (!peak || row->param("interconnect") == "p2p_disabled") continue;
    if (*row->value < busbw_floor * peak->value) {
      out.push_back(describe(*row) + ": busbw " + format_figure(*row->value) + " GB/s at the largest size is " +
                    format_fixed(percent_of_peak(*row->value, *peak), 0) + " % of the " + peak->basis +
                    " line rate (" + format_figure(peak->value) + " GB/s); a healthy NCCL reaches about three quarters of it");
    }
  }
}

const result_row* find_median(const median_index& m, const std::string& kind, const std::string& metric,
                              const std::string& api, long long ranks, const std::string& interconnect, bool largest) {
  const result_row* best = nullptr;
  for (const auto& [row, value] : medians_of(m, kind, metric)) {
    if (row->param("api") != api || number_param(*row, "ranks") != ranks || row->param("dtype") != "float" ||
        row->param("placement") != "out_of_place" || row->param("interconnect") != interconnect) {
      continue;
    }
    const auto size = number_param(*row, "size_bytes");
    if (!best || (largest ? size > number_param(*best, "size_bytes") : size < number_param(*best, "size_bytes"))) best = row;
  }
  return best;
}

// The ok median of `metric` in the case of `row` (same parameters and GPUs), or nullptr.
const result_row* sibling(const median_index& m, const result_row& row, const std::string& metric) {
  for (const auto& [other, value] : medians_of(m, row.case_name, metric)) {
    if (other->device == row.device && other->gpus == row.gpus && other->params == row.params) return other;
  }
  return nullptr;
}

// The straggler rows: one table of every rank at every delay, and the lesson at the largest delay
// that has a no-delay row for every rank.
// Whole µs: the straggler's times are hundreds to thousands of µs, and a rise of 1003 against a
// delay of 1000 must read as such (three significant digits would print 1e+03).
std::string format_us(double us) { return format_fixed(us, 0); }

std::string straggler_section(const median_index& m) {
  // (ranks, size, rank) without the delay -> delay -> the rank_time row.
  std::map<std::string, std::map<long long, const result_row*>> by_rank;
  for (const auto& [row, value] : medians_of(m, "straggler", "rank_time")) {
    const auto delay = number_param(*row, "delay_us");
    if (!delay) continue;
    auto key_row = *row;
    key_row.params.erase("delay_us");
    by_rank[describe_case(key_row)][*delay] = row;
  }
  if (by_rank.empty()) return "";

  table_rows table;
  std::vector<std::tuple<long long, long long, const result_row*>> ordered;  // (delay, rank, row)
  for (const auto& [key, delays] : by_rank) {
    for (const auto& [delay, row] : delays) ordered.emplace_back(delay, number_param(*row, "rank").value_or(-1), row);
  }
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  const auto figure = [&](const result_row& row, const std::string& metric) {
    const result_row* other = sibling(m, row, metric);
    return other ? format_us(*other->value) : std::string("-");
  };
  const auto ratio = [&](const result_row& row) {
    const result_row* other = sibling(m, row, "slowest_fastest");
    return other ? format_fixed(*other->value, 2) : std::string("-");
  };
  const auto baseline = [&](const result_row& row) -> const result_row* {
    auto key_row = row;
    key_row.params.erase("delay_us");
    const auto group = by_rank.find(describe_case(key_row));
    if (group == by_rank.end()) return nullptr;
    const auto it = group->second.find(0);
    return it == group->second.end() ? nullptr : it->second;
  };
  for (const auto& [delay, rank, row] : ordered) {
    const bool late = row->param("rank") == row->param("straggler_rank");
    const result_row* zero = baseline(*row);
    table.push_back({std::to_string(delay), row->param("rank") + (late ? " (late)" : ""), format_us(*row->value),
                     figure(*row, "time_in_collective"), zero ? format_us(*row->value - *zero->value) : "-",
                     ratio(*row)});
  }
  std::string text = "#### Straggler: one rank enters every all-reduce late\n\n";
  text += markdown_table({"delay (us)", "rank", "time (us)", "in the collective (us)", "rise over delay 0 (us)",
                          "slowest / fastest in the collective"},
                         table);

  // The lesson, at the largest delay that has a no-delay row to rise from.
  long long largest = 0;
  for (const auto& [delay, rank, row] : ordered) {
    if (delay > largest && baseline(*row)) largest = delay;
  }
  if (largest == 0) return text;
  double least_rise = 0;
  int ranks = 0;
  bool every_rank = true;
  std::optional<double> late_inside;
  std::optional<double> waiting_inside;
  for (const auto& [delay, rank, row] : ordered) {
    if (delay != largest) continue;
    const result_row* zero = baseline(*row);
    if (!zero) {
      every_rank = false;
      continue;
    }
    const double rise = *row->value - *zero->value;
    least_rise = ranks == 0 ? rise : std::min(least_rise, rise);
    ++ranks;
    if (const result_row* inside = sibling(m, *row, "time_in_collective")) {
      if (row->param("rank") == row->param("straggler_rank")) {
        late_inside = *inside->value;
      } else {
        waiting_inside = std::max(waiting_inside.value_or(0.0), *inside->value);
      }
    }
  }
  if (!every_rank || ranks == 0) return text;
  const std::string d = std::to_string(largest);
  text += "\nWith one rank " + d + " us late, every rank took at least " + format_us(least_rise) +
          " us longer per collective than with none (the least rise over " + std::to_string(ranks) + " ranks)";
  if (least_rise >= straggler_wait_share * static_cast<double>(largest)) {
    text += ": the collective waits for its slowest member, so one lagging rank holds up all of them.";
  } else {
    text += ", less than " + format_fixed(straggler_wait_share * 100, 0) + " % of the delay: some rank did not wait "
            "the whole delay; read its row.";
  }
  if (late_inside && waiting_inside) {
    text += " Inside NCCL the late rank spent " + format_us(*late_inside) + " us per collective, the ranks that "
            "waited up to " + format_us(*waiting_inside) + " us: a per-rank profile shows the culprit as the "
            "fastest rank.";
  }
  return text + "\n";
}

std::string allreduce_section(const std::vector<result_row>& rows, const json& meta) {
  const median_index m = ok_medians(rows);
  std::set<long long> ranks;
  for (const auto& [key, median] : m) {
    if (const auto n = number_param(*median.row, "ranks")) ranks.insert(*n);
  }
  if (ranks.empty()) return "";
  std::string text;
  table_rows table;
  const result_row* base = find_median(m, "collective", "busbw", "all_reduce", 2, "default", true);
  for (long long n : ranks) {
    const result_row* bw = find_median(m, "collective", n > 1 ? "busbw" : "algbw", "all_reduce", n, "default", true);
    const result_row* small = find_median(m, "collective", "time", "all_reduce", n, "default", false);
    if (!bw) continue;
    const auto peak = row_peak(*bw, meta);
    const bool comparable = n > 1 && base && number_param(*base, "size_bytes") == number_param(*bw, "size_bytes");
    table.push_back({std::to_string(n), bw->param("size_bytes"), (n > 1 ? "busbw " : "algbw ") + format_fixed(*bw->value, 0),
                     peak ? format_fixed(percent_of_peak(*bw->value, *peak), 0) + " %" : "-",
                     comparable ? format_fixed(*bw->value / *base->value, 2) : "-",
                     small ? format_figure(*small->value) + " us @ " + small->param("size_bytes") + " B" : "-"});
  }
  // A run of only the overlap or straggler cases has no scaling to show: no empty table.
  if (!table.empty()) {
    text += "#### All-reduce scaling (float, out of place, default transports)\n\n";
    text += markdown_table({"n", "largest size (B)", "GB/s", "% of peak", "busbw / busbw(n=2)", "smallest-size time"}, table);
    text += "\nScaling efficiency is busbw(n) / busbw(2) at the largest size: busbw already removes the ring's "
            "2(n-1)/n, so a perfect interconnect keeps it at 1.\n";
  }

  table_rows staged;
  for (long long n : ranks) {
    const result_row* off = find_median(m, "collective", "busbw", "all_reduce", n, "p2p_disabled", true);
    if (!off) continue;
    const result_row* on = nullptr;
    for (const auto& [row, value] : medians_of(m, "collective", "busbw")) {
      if (row->param("api") == "all_reduce" && number_param(*row, "ranks") == n && row->param("dtype") == "float" &&
          row->param("placement") == "out_of_place" && row->param("interconnect") == "default" &&
          row->param("size_bytes") == off->param("size_bytes")) {
        on = row;
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
  for (const auto& [row, comm_hidden] : medians_of(m, "overlap", "comm_hidden")) {
    const auto figure = [&](const std::string& metric) {
      const result_row* other = sibling(m, *row, metric);
      return other ? format_figure(*other->value) : std::string("-");
    };
    overlap.push_back({row->param("ranks"), row->param("size_bytes"), figure("comm_time"), figure("compute_time"),
                       figure("overlapped_time"), figure("comm_slowdown"), figure("compute_slowdown"),
                       format_fixed(comm_hidden, 2)});
  }
  if (!overlap.empty()) {
    text += "\n#### Communication/compute overlap\n\n";
    text += markdown_table({"n", "size (B)", "comm alone (us)", "compute alone (us)", "both (us)", "comm slowdown",
                            "compute slowdown", "comm hidden"},
                           overlap);
  }
  if (const std::string late = straggler_section(m); !late.empty()) text += (text.empty() ? "" : "\n") + late;
  return text;
}

}  // namespace

family_rules allreduce_report_rules() {
  return {
      .family = "allreduce",
      .anomalies = allreduce_anomalies,
      .section = allreduce_section,
      .footnote = "busbw (nccl-tests: algbw x 2(n-1)/n for all-reduce, x (n-1)/n for reduce-scatter and all-gather) is "
                  "graded against one GPU's per-direction interconnect: NVLink links_active x the per-link data rate "
                  "(the rate nvidia-smi reports, less the link's encoding: 450 GB/s for 18 NVLink 4 links), the slowest "
                  "GPU of the case; with NCCL_P2P_DISABLE=1 against the slower GPU's PCIe link per direction (the bytes go "
                  "through host memory). n = 1 out-of-place all-reduce algbw against HBM with twice the bytes (each is "
                  "read and written). A default-transport case on a node without NVLink has no peak.",
  };
}

}  // namespace hdb
