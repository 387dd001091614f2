#pragma once
// raw/ -> results.csv. Everything is rebuilt from the files a run left in raw/
// (<family>.json and <family>.status.json), so `hdbench collect` needs no live run and
// gives the same bytes every time.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hdb/harness/family_status.hpp"
#include "hdb/harness/raw_json.hpp"
#include "hdb/harness/results.hpp"

namespace hdb {

// What raw/ holds for one family.
struct family_raw {
  std::optional<raw_family_output> output;
  std::string output_error;  // why output is missing
  family_status status;
};

// Makes a status agree with the JSON the family left: counts its cases, and marks a family
// that "succeeded" without a readable JSON as failed.
void reconcile_status(family_status& status, const family_raw& raw);

// Reads raw/<family>.json and raw/<family>.status.json (either may be missing).
[[nodiscard]] family_raw load_family_raw(const std::filesystem::path& raw_dir, const std::string& family);

// The rows of one family, in schema order: a failed-family row, then each case in benchmark
// order (metrics sorted, statistics in schema order), then the alpha-beta fit rows.
[[nodiscard]] std::vector<result_row> family_rows(std::string_view run_id, const family_raw& raw);

struct collected_run {
  std::string run_id;                  // the directory name
  std::vector<family_status> statuses; // one per family, sorted by family
  std::vector<result_row> rows;
};

// Reads every family under <run_dir>/raw (families sorted by name). Pure: writes nothing.
[[nodiscard]] collected_run collect_run(const std::filesystem::path& run_dir);

// `hdbench collect`: writes results.csv and refreshes the family statuses in meta.json.
collected_run collect_and_write(const std::filesystem::path& run_dir);

}  // namespace hdb
