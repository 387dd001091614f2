#pragma once
// hdbench compare, the model: which rows of the runs are the same measurement, the statistics
// and the verdicts. Rendering (text, markdown, junit) reads a comparison_set and decides
// nothing (compare_render.cpp). Two rules (docs/harness.md gives the reasoning):
// - several baseline runs: the current run's median is tested against the spread of the
//   baseline runs' medians (a t test on the log scale, the spread pooled over metrics of one
//   kind and floored by the repetitions, Bonferroni over the headline metrics), and the
//   change must be able to reach the threshold;
// - one baseline run: run-to-run noise is unknown, so the repetitions decide (Mann-Whitney U)
//   together with a median change beyond the threshold.
// SLOWER/FASTER/SAME per metric; only headline metrics whose better direction is not neutral
// affect the exit status.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/results.hpp"

namespace hdb {

struct noise_model;  // noise_model.hpp
struct metric_key;

enum class verdict { slower, same, faster };  // severity order

[[nodiscard]] std::string_view to_string(verdict value);

// The threshold (smallest relative change that matters) when the noise is known (a reference set,
// a noise model, or >= 2 baselines) and when only one run's repetitions speak.
inline constexpr double known_noise_threshold = 0.01;
inline constexpr double unknown_noise_threshold = 0.05;

struct judge_options {
  // Relative change of the median that matters. nullopt: 1 % where the run-to-run noise is known
  // (>= 2 baselines or a noise model), 5 % where only the repetitions speak (reference_set.hpp).
  std::optional<double> threshold;
  double alpha = 0.05;      // significance level (family-wise over headline metrics with several baselines)
  bool all = false;         // also judge non-headline metrics (they never affect the exit)
  // Against a reference set (the baselines are its members), the change that matters for a node
  // of the kind (tolerances.hpp, check's): a metric outside the set's band but within it is SAME,
  // with a note, unless --threshold named the change that matters. Unset: none is known.
  std::function<std::optional<double>(const metric_key&)> node_tolerance;
};

// "5%" for 0.05: the figure of a relative change, as the notes and tables print it.
[[nodiscard]] std::string percent_text(double fraction);

// One side of a comparison: a run directory or a results.csv (meta.json read from beside it).
struct loaded_run {
  std::string name;  // run id
  std::filesystem::path csv_path;
  std::vector<result_row> rows;
  std::optional<nlohmann::json> meta;
};

// Throws harness_error naming the file: missing, malformed, other schema version, or no ok rows.
[[nodiscard]] loaded_run load_run(const std::filesystem::path& path);

// --- the statistics ------------------------------------------------------------------------

// The decision for one metric of one case.
struct metric_decision {
  // The verdict: what compare prints and gates on. Against a reference set, SLOWER also needs the
  // change beyond the metric's node tolerance (judge_options::node_tolerance).
  verdict result = verdict::same;
  // The verdict against the baselines' band alone (run-to-run noise and the threshold), before any
  // node tolerance: check grades its WARN and FAIL from this (judge_figure).
  verdict against_band = verdict::same;
  double change = 0;                  // (current - baseline) / baseline of the medians
  std::optional<double> p_value;      // when a test was used (two-sided, not adjusted)
  std::optional<double> detectable;   // minimum detectable change (relative) at this noise level
  // Against run-to-run spread: the current values this decision calls SAME lie in [low, high]
  // (below low is SLOWER for better::higher, above high for lower). What check prints as the band.
  std::optional<double> band_low, band_high;
  std::string note;                   // why a test was not used, etc.
};

// One baseline run: Mann-Whitney U on the repetitions (p < alpha) and a median change beyond
// the threshold (options.threshold, else unknown_noise_threshold); the threshold alone when the
// sample counts cannot reach p < alpha. `detectable` is the larger of the threshold and what the
// repetitions tell apart, which understates run-to-run noise. A neutral
// metric is always SAME (its change is still computed).
[[nodiscard]] metric_decision decide(const std::vector<double>& baseline_samples, double baseline_median,
                                     const std::vector<double>& current_samples, double current_median,
                                     better direction, const judge_options& options);

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

// Two independent estimates of one spread (a user's baselines and a noise model): their sums of
// squares and degrees of freedom add.
[[nodiscard]] run_spread combine_spreads(const run_spread& a, const run_spread& b);

// What the repetitions of these runs imply for the variance of one run's ln(median): the pooled
// within-run variance of ln(sample) times pi/2 over the mean repetition count; 0 without repetitions.
[[nodiscard]] double repetition_variance(const std::vector<run_metric>& runs);

// Against a known run-to-run spread (several baseline runs, or one plus a noise model): SLOWER
// when the current median is significantly worse than the baseline runs (t test of ln(current
// median) - mean ln(baseline medians), two-sided, level alpha / tests, df of the spread) and the
// worse end of that interval reaches the threshold. The spread used is the metric's own
// repetition variance of a run's median times max(1, spread.inflation) (spread.variance when
// there are no repetitions). `detectable` is the smallest change in the bad direction this rule
// flags (significance and threshold together). Needs >= 1 baseline, spread.df > 0 and positive
// medians. The threshold is options.threshold, else known_noise_threshold.
[[nodiscard]] metric_decision decide_against_runs(const std::vector<run_metric>& baselines, const run_metric& current,
                                                  const run_spread& spread, better direction, std::size_t tests,
                                                  const judge_options& options);

// The changes (on the log scale, relative to the baseline centre) at which the rule above turns
// SLOWER or FASTER for a half-width h and a threshold: below `low` and above `high`, whatever the
// direction (it decides which side is SLOWER). Shared with the reference set's expected band.
struct flag_limits {
  double low = 0, high = 0;
};
[[nodiscard]] flag_limits flag_limits_for(double half_width, double threshold);

// --- matching runs -------------------------------------------------------------------------

// The same measurement in two runs: family, case, the first GPU's index and the GPU count, the
// declared parameters and the metric. gpu_uuid is identity, not part of the match, so two nodes
// (or two GPUs swapped in one node) can be compared. A case's key has an empty metric; a failed
// family's an empty case too.
struct metric_key {
  std::string family;
  std::string case_name;
  std::optional<int> device;
  std::optional<int> gpus;
  std::map<std::string, std::string> params;
  std::string metric;

  auto operator<=>(const metric_key&) const = default;
};

// "device=0 direction=h2d host_kind=pinned" (describe_case's words) and the whole key,
// "copy bandwidth [device=0 direction=h2d host_kind=pinned] bandwidth".
[[nodiscard]] std::string describe_parameters(const metric_key& key);
[[nodiscard]] std::string describe(const metric_key& key);

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
  std::map<int, std::string> gpu_of_device;  // first device -> its gpu_uuid, where rows name both
};

[[nodiscard]] side_index index_rows(const std::vector<result_row>& rows);

struct indexed_run {
  loaded_run run;
  side_index index;
};

[[nodiscard]] indexed_run index_run(loaded_run run);

struct comparison {
  metric_key key;
  std::vector<const metric_data*> baselines;  // the baseline runs that measured this metric
  const metric_data* current = nullptr;
  double reference = 0;  // the baseline value the change is relative to
  metric_decision decision;
  double worse = 0;  // change in the bad direction; sorts the table

  // A metric gates only where both sides declare it a headline and it has a direction: a family
  // that stops (or starts) gating a metric must not fail a comparison against runs made before
  // the change, and a neutral metric describes rather than rates.
  [[nodiscard]] bool gates() const;
};

struct comparison_set {
  double known_threshold = 0, unknown_threshold = 0;  // the thresholds used (options or defaults)
  std::size_t repetitions_only = 0;  // metrics judged by the one-baseline repetition rule
  std::string noise_model_source;    // where the noise model came from; empty when none was used
  bool model_is_baselines = false;   // the baselines are the model's own runs (a reference set): not pooled
  bool held_to_node_tolerance = false;  // SLOWER also needed the change beyond each metric's node tolerance
  std::vector<comparison> compared;  // worst first: SLOWER, SAME, FASTER, each by its bad change
  std::vector<std::string> only_baseline, only_current;  // descriptions
  std::vector<std::string> notes;                         // node warnings, failed families
  std::size_t tests = 0;                                  // gating metrics judged against run-to-run spread
  int slower = 0, faster = 0, same = 0;                   // gating metrics only
  int within_tolerance = 0;  // of `same`: outside the set's band, within the node tolerance
};

// Matches every shown metric (headlines; with options.all every metric) of the baselines with
// the current run and decides it. With a noise model (noise_model.hpp) its spread is used where
// the baselines alone do not give one (one baseline run) and pooled with theirs where they do,
// unless the baselines are the model's own members (a reference set: the same data, once).
[[nodiscard]] comparison_set build_comparisons(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                               const judge_options& options, const noise_model* model = nullptr);

}  // namespace hdb
