#pragma once
// Helpers shared by the harness tests (contains, temp_dir: test_helpers.hpp).
#include <filesystem>
#include <string>
#include <vector>

#include "hdb/harness/results.hpp"
#include "hdb/host/stats.hpp"

#include "test_helpers.hpp"

namespace hdb_test {

inline std::filesystem::path fixture(const std::string& relative) {
  return std::filesystem::path(HDB_TEST_FIXTURES) / relative;
}

// The hand-written copy-family run: raw/copy.json, meta.json and the golden results.csv.
inline std::filesystem::path golden_run() { return fixture("copy_run/20261129T103122Z-gpu01"); }

// Appends `row` once per sample (statistic sample, index i) and once as their median.
inline void append_samples_and_median(std::vector<hdb::result_row>& rows, hdb::result_row row,
                                      const std::vector<double>& samples) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    row.stat = hdb::statistic::sample;
    row.sample_index = static_cast<int>(i);
    row.value = samples[i];
    rows.push_back(row);
  }
  row.stat = hdb::statistic::median;
  row.sample_index.reset();
  row.value = hdb::median(samples);
  rows.push_back(row);
}

}  // namespace hdb_test
