#pragma once
// `hdbench compare BASELINE CURRENT`: is the current run slower than the baseline, beyond
// noise? A headline metric is SLOWER when the repetitions differ significantly
// (Mann-Whitney U, two-sided, p < alpha) AND the median moved beyond the threshold in the bad
// direction; FASTER symmetrically; else SAME. Why both: docs/harness.md.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/results.hpp"

namespace hdb {

enum class compare_format { text, markdown, junit };
enum class verdict { slower, same, faster };  // severity order

[[nodiscard]] std::string_view to_string(verdict value);

struct compare_options {
  double threshold = 0.05;  // relative change of the median
  double alpha = 0.05;      // significance level
  compare_format format = compare_format::text;
  bool all = false;         // also show non-headline metrics (they never affect the exit)
};

// "5%", "5" -> 0.05. Throws harness_error for anything else or a negative value.
[[nodiscard]] double parse_percent(std::string_view text);
// "text" | "markdown" | "junit"; throws harness_error otherwise.
[[nodiscard]] compare_format parse_compare_format(std::string_view text);

// One side of a comparison: a run directory or a results.csv (meta.json read from beside it).
struct loaded_run {
  std::string name;  // run id (or the path when the CSV has no rows)
  std::filesystem::path csv_path;
  std::vector<result_row> rows;
  std::optional<nlohmann::json> meta;
};

// Throws harness_error naming the file: missing, malformed, other schema version, or no ok rows.
[[nodiscard]] loaded_run load_run(const std::filesystem::path& path);

// The decision for one metric of one case, from the two sides' samples and medians.
struct metric_decision {
  verdict result = verdict::same;
  double change = 0;                 // (current - baseline) / baseline of the medians
  std::optional<double> p_value;     // when the test was used
  std::string note;                  // why the test was not used, etc.
};

[[nodiscard]] metric_decision decide(const std::vector<double>& baseline_samples, double baseline_median,
                                     const std::vector<double>& current_samples, double current_median,
                                     better direction, const compare_options& options);

struct compare_result {
  int exit_code = 0;   // 0 no headline regression, 1 at least one headline SLOWER, 2 bad input
  std::string output;  // the report in the requested format (stdout)
  std::string error;   // one line when exit_code is 2 (stderr)
};

// Never throws for bad input: that is exit code 2 with `error` set.
[[nodiscard]] compare_result compare_runs(const std::filesystem::path& baseline, const std::filesystem::path& current,
                                          const compare_options& options);

}  // namespace hdb
