#pragma once
// A run as the verdicts read it: its results.csv (and meta.json beside it) loaded, and its rows
// indexed by figure (metric_key): the repetitions and the median of every metric, and the cases
// that did not run. compare, check, the reference sets and their noise model all read runs so.
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/metric_key.hpp"
#include "hdb/harness/data/results.hpp"

namespace hdb {

// One side of a comparison: a run directory or a results.csv (meta.json read from beside it).
struct loaded_run {
  std::string name;  // run id
  std::filesystem::path csv_path;
  std::vector<result_row> rows;  // each case's last attempt: what every verdict reads
  // The earlier attempts of the cases `hdbench run` measured again, which check names beside the
  // figure its last attempt decided.
  std::vector<result_row> superseded;
  std::optional<nlohmann::json> meta;
};

// Splits a run's rows into each case's last attempt (kept, in file order) and the earlier
// attempts of the cases measured again. A family's own row (no case: it failed, crashed or timed
// out) is never superseded: a family that failed on any attempt failed.
struct attempt_split {
  std::vector<result_row> last;
  std::vector<result_row> superseded;
};
[[nodiscard]] attempt_split split_attempts(std::vector<result_row> rows);

// Throws harness_error naming the file: missing, malformed, other schema version, or no ok rows.
[[nodiscard]] loaded_run load_run(const std::filesystem::path& path);

// One run's rows of one metric.
struct metric_data {
  std::vector<double> samples;
  std::optional<double> central;  // median (or the fit value of a derived row)
  std::string unit;
  better direction = better::higher;
  bool headline = false;
};

struct side_index {
  std::map<metric_key, metric_data> metrics;
  // Cases that were skipped or failed, and failed families, by their key without a metric.
  std::map<metric_key, std::string> not_ok;
  // Of those, the ones that failed (a crashed or timed-out family included): what the run was
  // asked to measure and did not, unlike a case skipped because it cannot run there.
  std::set<metric_key> failed;
  std::map<int, std::string> gpu_of_device;  // first device -> its gpu_uuid, where rows name both
};

[[nodiscard]] side_index index_rows(const std::vector<result_row>& rows);

struct indexed_run {
  loaded_run run;
  side_index index;
};

[[nodiscard]] indexed_run index_run(loaded_run run);

}  // namespace hdb
