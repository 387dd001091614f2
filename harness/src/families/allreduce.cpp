// Report rules of the allreduce family.
// Peak of busbw (n >= 2, default transports): the NVLink line rate per direction of the slowest GPU
// in the case, links_active (meta.json node.gpus[i].nvlink) x 26.5625 GB/s. That per-link figure is
// NVLink 4's signalling rate (H100/H200: 2 lanes x 106.25 Gb/s PAM4 per direction = 26.5625 GB/s;
// NVIDIA quotes 25 GB/s of data per link per direction, 450 GB/s for 18 links). busbw is
// nccl-tests' bus bandwidth, defined so that it compares with one GPU's per-direction link rate
// whatever n is (doc/PERFORMANCE.md). A node without NVLink is graded against PCIe per direction,
// and so are NCCL_P2P_DISABLE=1 cases, whose traffic crosses each GPU's PCIe link through host
// memory. n = 1 all-reduce out of place is a local copy: its algbw against HBM (read + write).
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

constexpr double nvlink_link_gbps = 26.5625;  // per link, per direction (NVLink 4)
// NCCL reaches ~70-75 % of the NVLink line rate at GiB sizes on H100/H200; below half is broken.
constexpr double busbw_floor = 0.5;

std::optional<long long> number_param(const result_row& row, std::string_view key) {
  const auto& text = row.params.get(key);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

std::optional<double> nvlink_peak(const json& gpu) {
  if (!gpu.is_object() || !gpu.contains("nvlink") || !gpu["nvlink"].is_object()) return std::nullopt;
  const auto& links = gpu["nvlink"].value("links_active", json());
  if (!links.is_number() || links.get<double>() <= 0) return std::nullopt;
  return links.get<double>() * nvlink_link_gbps;
}

// The interconnect peak of the case's GPUs: the slowest GPU's NVLink (or PCIe when it has none, or
// when P2P is disabled). nullopt when a GPU is unknown or the case spans GPUs not on this node.
std::optional<peak_ref> interconnect_peak(const result_row& row, const json& meta) {
  const auto devices = row_devices(row);
  const auto ranks = number_param(row, "gpus");
  if (devices.empty() || !ranks || static_cast<long long>(devices.size()) != *ranks) return std::nullopt;
  const bool staged = extra_param(row.params, "interconnect") == "p2p_disabled";
  std::optional<double> nvlink_min;
  std::optional<double> pcie_min;
  bool all_nvlink = true;
  for (int d : devices) {
    const auto& gpu = gpu_record(meta, d);
    const auto nv = nvlink_peak(gpu);
    const auto pcie = gpu_pcie_peak_gbps(gpu);
    all_nvlink = all_nvlink && nv.has_value();
    if (nv) nvlink_min = nvlink_min ? std::min(*nvlink_min, *nv) : *nv;
    if (pcie) pcie_min = pcie_min ? std::min(*pcie_min, *pcie) : *pcie;
  }
  const std::string gpus = "GPUs " + row.params.get("device");
  if (!staged && all_nvlink && nvlink_min) {
    return peak_ref{*nvlink_min, 1,
                    "NVLink " + format_figure(*nvlink_min / nvlink_link_gbps) + " links x 26.5625 GB/s per direction, " + gpus};
  }
  if (pcie_min) {
    return peak_ref{*pcie_min, 1, std::string(staged ? "host-staged (P2P disabled): " : "") + "PCIe per direction, " + gpus};
  }
  return std::nullopt;
}

std::optional<peak_ref> allreduce_peak(const result_row& row, const json& meta) {
  if (row.metric == "busbw") return interconnect_peak(row, meta);
  const auto ranks = number_param(row, "gpus");
  if (row.metric == "algbw" && ranks == 1 && row.params.get("api") == "all_reduce" &&
      extra_param(row.params, "placement") == "out_of_place") {
    const auto device = row_device(row);
    if (!device) return std::nullopt;
    const auto& gpu = gpu_record(meta, *device);
    if (gpu.is_object() && gpu.contains("hbm_peak_GBps") && gpu["hbm_peak_GBps"].is_number()) {
      // One rank's all-reduce copies its buffer: every byte is read and written once.
      return peak_ref{gpu["hbm_peak_GBps"].get<double>(), 2, "HBM read + write, GPU " + std::to_string(*device)};
    }
  }
  return std::nullopt;
}

std::string describe(const result_row& row) {
  auto shown = row.params;
  shown.set("gpu_uuid", "");
  return "allreduce " + row.case_name + " " + shown.describe();
}

// Largest-size busbw of every (collective, dtype, placement, interconnect, n) curve.
std::map<std::string, const result_row*> largest_busbw(const std::vector<result_row>& rows) {
  std::map<std::string, const result_row*> largest;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.metric != "busbw" || row.case_name != "collective") continue;
    auto group_params = row.params;
    group_params.set("size_bytes", "");
    group_params.set("gpu_uuid", "");
    const std::string group = group_params.describe();
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
    if ((failed_check || counted) && reported.insert(row.benchmark + row.case_name + row.params.describe()).second) {
      out.push_back(describe(row) + ": wrong values: " + (failed_check ? row.reason : format_figure(*row.value) + " wrong"));
    }
  }
  for (const auto& [group, row] : largest_busbw(rows)) {
    const auto peak = interconnect_peak(*row, meta);
    if (!peak || extra_param(row->params, "interconnect") == "p2p_disabled") continue;
    if (*row->value < busbw_floor * peak->value) {
      out.push_back(describe(*row) + ": busbw " + format_figure(*row->value) + " GB/s at the largest size is " +
                    format_fixed(*row->value / peak->value * 100, 0) + " % of the " + peak->basis +
                    " line rate (" + format_figure(peak->value) + " GB/s); NCCL reaches ~70 % when healthy");
    }
  }
}

const result_row* find_median(const std::vector<result_row>& rows, const std::string& kind, const std::string& metric,
                              const std::string& api, long long ranks, const std::string& interconnect, bool largest) {
  const result_row* best = nullptr;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != kind || row.metric != metric || row.params.get("api") != api ||
        number_param(row, "gpus") != ranks || row.params.get("dtype") != "float" ||
        extra_param(row.params, "placement") != "out_of_place" || extra_param(row.params, "interconnect") != interconnect) {
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
    if (const auto n = number_param(row, "gpus"); n && is_ok_median(row)) ranks.insert(*n);
  }
  if (ranks.empty()) return "";
  std::string text = "#### All-reduce scaling (float, out of place, default transports)\n\n";
  table_rows table;
  const result_row* base = find_median(rows, "collective", "busbw", "all_reduce", 2, "default", true);
  for (long long n : ranks) {
    const result_row* bw = find_median(rows, "collective", n > 1 ? "busbw" : "algbw", "all_reduce", n, "default", true);
    const result_row* small = find_median(rows, "collective", "time", "all_reduce", n, "default", false);
    if (!bw) continue;
    const auto peak = allreduce_peak(*bw, meta);
    const bool comparable = n > 1 && base && number_param(*base, "size_bytes") == number_param(*bw, "size_bytes");
    table.push_back({std::to_string(n), bw->params.get("size_bytes"), (n > 1 ? "busbw " : "algbw ") + format_fixed(*bw->value, 0),
                     peak ? format_fixed(*bw->value * peak->traffic_factor / peak->value * 100, 0) + " %" : "-",
                     comparable ? format_fixed(*bw->value / *base->value, 2) : "-",
                     small ? format_figure(*small->value) + " us @ " + small->params.get("size_bytes") + " B" : "-"});
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
      if (is_ok_median(row) && row.case_name == "collective" && row.metric == "busbw" && row.params.get("api") == "all_reduce" &&
          number_param(row, "gpus") == n && row.params.get("dtype") == "float" &&
          extra_param(row.params, "placement") == "out_of_place" && extra_param(row.params, "interconnect") == "default" &&
          row.params.get("size_bytes") == off->params.get("size_bytes")) {
        on = &row;
      }
    }
    staged.push_back({std::to_string(n), off->params.get("size_bytes"), on ? format_figure(*on->value) : "-",
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
        if (is_ok_median(other) && other.case_name == "overlap" && other.metric == metric && other.params == row.params) {
          return format_figure(*other.value);
        }
      }
      return std::string("-");
    };
    overlap.push_back({row.params.get("gpus"), row.params.get("size_bytes"), value_of("comm_time"), value_of("compute_time"),
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
  rules.peak = allreduce_peak;
  rules.anomalies = allreduce_anomalies;
  rules.section = allreduce_section;
  rules.footnote =
      "busbw (nccl-tests: algbw x 2(n-1)/n for all-reduce, x (n-1)/n for reduce-scatter and all-gather) is graded "
      "against one GPU's per-direction interconnect: NVLink links_active x 26.5625 GB/s (NVLink 4 signalling rate; "
      "NVIDIA's 25 GB/s data rate is 6 % lower), the slowest GPU of the case; PCIe per direction without NVLink or "
      "with NCCL_P2P_DISABLE=1 (host-staged). n = 1 all-reduce algbw: HBM, read + write.";
  return rules;
}

}  // namespace hdb
