// The registry of family report rules and the helpers the rule modules share. The rules
// themselves live in each family's folder (bench/<family>/report.cpp); the list of them is
// generated from the manifest by the top-level CMakeLists.txt (manifest_family_rules).
#include "hdb/harness/report/family_rules.hpp"

#include <algorithm>
#include <utility>

namespace hdb {
namespace {

std::vector<family_rules>& registered() {
  static std::vector<family_rules> rules = manifest_family_rules();
  return rules;
}

}  // namespace

const family_rules* rules_for(const std::string& family) {
  const auto& rules = registered();
  const auto it = std::find_if(rules.begin(), rules.end(), [&](const family_rules& r) { return r.family == family; });
  return it == rules.end() ? nullptr : &*it;
}

void register_family_rules(family_rules rules) {
  auto& all = registered();
  std::erase_if(all, [&](const family_rules& r) { return r.family == rules.family; });
  all.push_back(std::move(rules));
}

std::string gpu_prefix(std::optional<int> device) { return device ? "GPU " + std::to_string(*device) + ": " : ""; }

bool is_ok_median(const result_row& row) { return row.stat == statistic::median && row.value && row.status == row_status::ok; }

median_index ok_medians(const std::vector<result_row>& rows) {
  median_index out;
  for (const auto& row : rows) {
    if (is_ok_median(row)) out.emplace(std::pair{row.case_name, row.metric}, median_entry{&row, *row.value});
  }
  return out;
}

median_range medians_of(const median_index& index, const std::string& case_name, const std::string& metric) {
  const auto [first, last] = index.equal_range(std::pair{case_name, metric});
  return median_range(std::ranges::subrange(first, last));
}

family_rules rules_from_medians(std::string family, std::vector<median_check> checks, median_section section,
                                std::string footnote) {
  return {
      .family = std::move(family),
      .anomalies = [checks = std::move(checks)](const std::vector<result_row>& rows, const nlohmann::json&,
                                                std::vector<std::string>& out) {
        const median_index medians = ok_medians(rows);
        for (const auto& check : checks) check(medians, out);
      },
      .section = [section = std::move(section)](const std::vector<result_row>& rows, const nlohmann::json&) {
        return section(ok_medians(rows));
      },
      .footnote = std::move(footnote),
  };
}

}  // namespace hdb
