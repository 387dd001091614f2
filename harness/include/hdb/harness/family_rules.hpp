#pragma once
// What a family's numbers mean, owned by the family: the peak each median is graded against,
// the anomalies worth flagging, and any section of its own in report.md (a P2P matrix, a
// scaling table). The generic report knows no family's directions, kinds or methods; it asks
// the family's rules, found by name in harness/src/families/registry.cpp.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/results.hpp"

namespace hdb {

// A theoretical rate a median is compared with: % of peak = value x traffic_factor / peak.
struct peak_ref {
  double value = 0;           // in the row's unit (GB/s)
  double traffic_factor = 1;  // bytes the hardware moves per byte the metric counts
  std::string basis;          // "PCIe Gen5 x16, GPU 1", "NVLink 18 x 26.6 GB/s", ...
};

struct family_rules {
  std::string family;
  // The peak of one median row, or nullopt when the metric has none.
  std::function<std::optional<peak_ref>(const result_row& row, const nlohmann::json& meta)> peak;
  // Anomalies among this family's rows (only its own rows are passed), one line each.
  std::function<void(const std::vector<result_row>& rows, const nlohmann::json& meta, std::vector<std::string>& out)>
      anomalies;
  // Extra markdown under the family's headline table (matrices, tables); may be empty.
  std::function<std::string(const std::vector<result_row>& rows, const nlohmann::json& meta)> section;
  // One paragraph under the family's table: how "% of peak" was derived.
  std::string footnote;
};

// The rules of `family`, or nullptr when it declares none (then no % of peak and no anomalies).
[[nodiscard]] const family_rules* rules_for(const std::string& family);

// Registered rule sets; tests may add a stand-in family's rules.
void register_family_rules(family_rules rules);

// Helpers the rule modules share: the meta.json record of a CUDA device index, and the PCIe
// per-direction peak of a GPU record at its maximum link (current link when max is unknown).
[[nodiscard]] const nlohmann::json& gpu_record(const nlohmann::json& meta, int device_index);
[[nodiscard]] std::optional<double> gpu_pcie_peak_gbps(const nlohmann::json& gpu);
// The device indices a row measured (its `device` column, "0,1"); empty when it names none.
[[nodiscard]] std::vector<int> row_devices(const result_row& row);
// The first of them (the GPU a single-GPU case ran on), or nullopt.
[[nodiscard]] std::optional<int> row_device(const result_row& row);
// "GPU 3: " before an anomaly about the GPU(s) of a `device` column, "" when it names none.
[[nodiscard]] std::string gpu_prefix(const std::string& device);
// The value of `key` in the extra column (k=v;k=v, as families label their own parameters),
// "" when the row has none.
[[nodiscard]] std::string extra_param(const case_params& params, std::string_view key);

// A median that measured fine: the only rows peaks, anomalies and sections judge.
[[nodiscard]] bool is_ok_median(const result_row& row);
// Those medians by (case, metric), each with its row for the parameters.
struct median_entry {
  const result_row* row;
  double value;
};
using median_index = std::multimap<std::pair<std::string, std::string>, median_entry>;
[[nodiscard]] median_index ok_medians(const std::vector<result_row>& rows);

}  // namespace hdb
