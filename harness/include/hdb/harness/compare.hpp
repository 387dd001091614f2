#pragma once
// `hdbench compare BASELINE [BASELINE...] CURRENT`: is the current run slower than the
// baseline runs, beyond run-to-run noise? Two rules (docs/harness.md gives the reasoning):
// - several baseline runs: the current run's median is tested against the spread of the
//   baseline runs' medians (a t test on the log scale, the spread pooled over metrics of one
//   kind and floored by the repetitions, Bonferroni over the headline metrics), and the
//   change must be able to reach the threshold;
// - one baseline run: run-to-run noise is unknown, so the repetitions decide (Mann-Whitney U)
//   together with a median change beyond the threshold.
// SLOWER/FASTER/SAME per metric; only headline metrics affect the exit status.
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
  double alpha = 0.05;      // significance level (family-wise over headline metrics with several baselines)
  compare_format format = compare_format::text;
  bool all = false;         // also show non-headline metrics (they never affect the exit)
};

// "5%", "5" -> 0.05. Throws harness_error for anything else or a negative value.
[[nodiscard]] double parse_percent(std::string_view text);
// "text" | "markdown" | "junit"; throws harness_error otherwise.
[[nodiscard]] compare_format parse_compare_format(std::string_view text);

// One side of a comparison: a run directory or a results.csv (meta.json read from beside it).
struct loaded_run {
  std::string name;  // run id
  std::filesystem::path csv_path;
  std::vector<result_row> rows;
  std::optional<nlohmann::json> meta;
};

// Throws harness_error naming the file: missing, malformed, other schema version, or no ok rows.
[[nodiscard]] loaded_run load_run(const std::filesystem::path& path);

// The decision for one metric of one case.
struct metric_decision {
  verdict result = verdict::same;
  double change = 0;                  // (current - baseline) / baseline of the medians
  std::optional<double> p_value;      // when a test was used (two-sided, not adjusted)
  std::optional<double> detectable;   // minimum detectable change (relative) at this noise level
  std::string note;                   // why a test was not used, etc.
};

// One baseline run: Mann-Whitney U on the repetitions (p < alpha) and a median change beyond
// the threshold; the threshold alone when the sample counts cannot reach p < alpha.
// `detectable` comes from the repetitions only and understates run-to-run noise.
[[nodiscard]] metric_decision decide(const std::vector<double>& baseline_samples, double baseline_median,
                                     const std::vector<double>& current_samples, double current_median,
                                     better direction, const compare_options& options);

// One run's view of one metric: its repetitions (may be empty) and their median.
struct run_metric {
  std::vector<double> samples;
  double median = 0;
};

// Run-to-run spread of one kind of metric on the log scale: the variance of ln(run median)
// between runs, pooled over the metrics of that kind, with its degrees of freedom.
struct run_spread {
  double variance = 0;
  double df = 0;  // sum over the pooled metrics of (baseline runs - 1)
  // The same spread relative to what each metric's own repetitions imply for a run's median:
  // how much a new process adds (1 = nothing). Pooled over the metrics that have repetitions.
  double inflation = 0;
  double inflation_df = 0;
};

// Pools the between-run variance of several metrics, each given as its baseline runs.
// Metrics with fewer than 2 runs or a non-positive median contribute nothing.
[[nodiscard]] run_spread pool_run_spread(const std::vector<std::vector<run_metric>>& metrics);

// Several baseline runs: SLOWER when the current median is significantly worse than the
// baseline runs (t test of ln(current median) - mean ln(baseline medians), two-sided, level
// alpha / tests, df of the spread) and the worse end of that interval reaches the threshold.
// The spread used is the metric's own repetition variance of a run's median times
// max(1, spread.inflation) (spread.variance when there are no repetitions). Needs >= 2 baselines, spread.df > 0 and positive medians.
[[nodiscard]] metric_decision decide_against_runs(const std::vector<run_metric>& baselines, const run_metric& current,
                                                  const run_spread& spread, better direction, std::size_t tests,
                                                  const compare_options& options);

struct compare_result {
  int exit_code = 0;   // 0 no headline regression, 1 at least one headline SLOWER, 2 bad input
  std::string output;  // the report in the requested format (stdout)
  std::string error;   // one line when exit_code is 2 (stderr)
};

// Never throws for bad input: that is exit code 2 with `error` set. Needs >= 1 baseline.
[[nodiscard]] compare_result compare_runs(const std::vector<std::filesystem::path>& baselines,
                                          const std::filesystem::path& current, const compare_options& options);

}  // namespace hdb
