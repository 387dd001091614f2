#pragma once
// Helpers shared by the harness tests (contains, temp_dir: test_helpers.hpp).
#include <sys/stat.h>

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

// The GPU tools a stand-in run meets, for one scope: an `nvidia-smi` in dir/smi, first on PATH,
// answering as `answers` says (branches of a shell `case "$1"`, after `prelude`; `$d` is its
// directory; any other query exits 6, as nvidia-smi does on a flag it lacks), and no /proc (a GPU test beside this one
// holds the GPU's device file, which the run would see as another process).
class fake_nvidia_smi {
 public:
  fake_nvidia_smi(const std::filesystem::path& dir, const std::string& answers, const std::string& prelude = "")
      : dir_(write(dir / "smi", prelude, answers)),
        path_("PATH", dir_.string() + ":/usr/bin:/bin"),
        no_proc_("HDBENCH_PROC", (dir / "no-proc").string()) {}
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

 private:
  static std::filesystem::path write(const std::filesystem::path& dir, const std::string& prelude, const std::string& answers) {
    std::filesystem::create_directories(dir);
    const auto script = dir / "nvidia-smi";
    hdb::atomic_write_file(script, "#!/bin/sh\nd=$(dirname \"$0\")\n" + prelude + "case \"$1\" in\n" + answers + "  *) exit 6 ;;\nesac\n");
    ::chmod(script.c_str(), 0755);
    return dir;
  }
  std::filesystem::path dir_;
  scoped_env path_, no_proc_;
};

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
