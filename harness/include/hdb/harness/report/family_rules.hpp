#pragma once
// What only a family can say about its numbers: the anomalies worth flagging and any section of
// its own in report.md (a P2P matrix, a scaling table). % of peak is not here: it is generic
// (traffic.hpp, from each row's traffic class). A family's rules live in bench/<family>/report.cpp
// and are found through the registry the build generates from the manifest.
#include <functional>
#include <map>
#include <optional>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/results.hpp"
#include "hdb/harness/data/traffic.hpp"

namespace hdb {

struct family_rules {
  std::string family;
  // Anomalies among this family's rows (only its own rows are passed), one line each.
  std::function<void(const std::vector<result_row>& rows, const nlohmann::json& meta, std::vector<std::string>& out)>
      anomalies;
  // Extra markdown under the family's headline table (matrices, tables); may be empty.
  std::function<std::string(const std::vector<result_row>& rows, const nlohmann::json& meta)> section;
  // One paragraph under the family's table: what its figures are measured against.
  std::string footnote;
};

// The rules of `family`, or nullptr when it has none (then no anomalies and no section).
[[nodiscard]] const family_rules* rules_for(const std::string& family);

// Registered rule sets; tests may add a stand-in family's rules.
void register_family_rules(family_rules rules);

// The rules of every manifest family whose folder holds report.cpp, in manifest order. Defined in
// a file the top-level CMakeLists.txt generates from harness/suite.json.
[[nodiscard]] std::vector<family_rules> manifest_family_rules();

// "GPU 3: " before an anomaly about one GPU, "" when the row names none.
[[nodiscard]] std::string gpu_prefix(std::optional<int> device);

// A median that measured fine: the only rows anomalies and sections judge.
[[nodiscard]] bool is_ok_median(const result_row& row);
// Those medians by (case, metric), each with its row for the parameters.
struct median_entry {
  const result_row* row;
  double value;
};
using median_index = std::multimap<std::pair<std::string, std::string>, median_entry>;
[[nodiscard]] median_index ok_medians(const std::vector<result_row>& rows);

// The ok medians of one case's metric, in the order of the rows:
//   for (const auto& [row, value] : medians_of(index, "launch", "launch_time")) ...
using median_range = std::ranges::values_view<std::ranges::subrange<median_index::const_iterator>>;
[[nodiscard]] median_range medians_of(const median_index& index, const std::string& case_name, const std::string& metric);
// The range points into the index: a temporary one would be destroyed before the loop's first pass.
median_range medians_of(median_index&& index, const std::string& case_name, const std::string& metric) = delete;

// The rules of a family whose anomalies and section read only its ok medians, not meta.json: each
// call builds the index once and hands it to every check in turn, or to the section.
using median_check = std::function<void(const median_index& medians, std::vector<std::string>& out)>;
using median_section = std::function<std::string(const median_index& medians)>;
[[nodiscard]] family_rules rules_from_medians(std::string family, std::vector<median_check> checks, median_section section,
                                              std::string footnote);

}  // namespace hdb
