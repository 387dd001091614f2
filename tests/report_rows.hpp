#pragma once
// Rows as the harness reads them from a results.csv, for tests of a family's report rules.
#include "hdb/harness/results.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace hdb_test {

// An ok median row of `family`/`case_name` with the given parameter columns (and `extra`, "k=v;k=v").
inline hdb::result_row median_row(std::string family, std::string case_name,
                                  std::initializer_list<std::pair<std::string_view, std::string>> params,
                                  std::string metric, std::string unit, double value, std::string extra = "") {
  hdb::result_row row;
  row.family = std::move(family);
  row.case_name = std::move(case_name);
  for (const auto& [key, text] : params) row.params.set(key, text);
  row.params.extra = std::move(extra);
  row.metric = std::move(metric);
  row.unit = std::move(unit);
  row.stat = hdb::statistic::median;
  row.value = value;
  return row;
}

}  // namespace hdb_test
