#pragma once
// Helpers shared by the harness tests (contains, temp_dir: test_helpers.hpp).
#include <filesystem>
#include <string>
#include <vector>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/run/runner.hpp"
#include "hdb/util/stats.hpp"

#include "test_helpers.hpp"

namespace hdb_test {

inline std::filesystem::path fixture(const std::string& relative) {
  return std::filesystem::path(HDB_TEST_FIXTURES) / relative;
}

// The hand-written copy-family run: raw/copy.json, meta.json and the golden results.csv.
inline std::filesystem::path golden_run() { return fixture("copy_run/20261129T103122Z-gpu01"); }

// `hdbench run` of the one stand-in family "good" (in `standin_dir`) into out/results: its
// manifest is written to out/suite.json; plots are someone else's test.
inline hdb::suite_run_options standin_run_options(const std::filesystem::path& out,
                                                  const std::filesystem::path& standin_dir) {
  hdb::atomic_write_file(out / "suite.json", R"({"schema_version": 2, "families": [
      {"name": "good", "folder": "tests/harness/standins", "binary": "standin-good", "plots": "standin", "timeout_s": 30}]})");
  hdb::suite_run_options options;
  options.out_base = out / "results";
  options.manifest = out / "suite.json";
  options.bin_dir = standin_dir;
  options.command_line = {"hdbench", "run"};
  options.plots.plots_dir = out / "no-plots";
  return options;
}

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
