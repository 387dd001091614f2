#pragma once
// The statistics of a comparison (docs/harness.md, "compare"): one metric of a current run against
// baseline runs, by the repetitions alone (one baseline: Mann-Whitney U) or against the run-to-run
// spread (several baselines or a noise model: a t test on the log scale), and the band of values
// that decision calls SAME. What a difference means for a node is the decision's (decision.hpp).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hdb/harness/verdict/grades.hpp"
#include "hdb/contract/declaration.hpp"  // better

namespace hdb {

// The threshold (smallest relative change that matters) when the noise is known (a reference set,
// a noise model, or >= 2 baselines) and when only one run's repetitions speak.
inline constexpr double known_noise_threshold = 0.01;
inline constexpr double unknown_noise_threshold = 0.05;

// The statistics of a comparison, as the command line sets them (compare, reference validate).
struct statistics_options {
  // Relative change of the median that matters. nullopt: 1 % where the run-to-run noise is known
  // (>= 2 baselines or a noise model), 5 % where only the repetitions speak (reference_set.hpp).
  std::optional<double> threshold;
  double alpha = 0.05;  // significance level (family-wise over headline metrics with several baselines)
};

// compare's verdict on one metric of one case, and its evidence.
struct metric_verdict {
  // The verdict: what compare prints and gates on. Against a node's reference set it follows the
  // figure's one decision (comparison::node_decision), so SLOWER needs the change beyond the
  // figure's tolerance, as check's FAIL does.
  verdict result = verdict::same;
  // The verdict against the baselines' band alone (run-to-run noise and the threshold), before any
  // node rule.
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
[[nodiscard]] metric_verdict decide(const std::vector<double>& baseline_samples, double baseline_median,
                                     const std::vector<double>& current_samples, double current_median,
                                     better direction, const statistics_options& options);

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

// Every run's median is positive (a log-scale test can use them).
[[nodiscard]] bool positive_medians(const std::vector<run_metric>& runs);

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
[[nodiscard]] metric_verdict decide_against_runs(const std::vector<run_metric>& baselines, const run_metric& current,
                                                  const run_spread& spread, better direction, std::size_t tests,
                                                  const statistics_options& options);

// The changes (on the log scale, relative to the baseline centre) at which the rule above turns
// SLOWER or FASTER for a half-width h and a threshold: below `low` and above `high`, whatever the
// direction (it decides which side is SLOWER). Shared with the reference set's expected band.
struct flag_limits {
  double low = 0, high = 0;
};
[[nodiscard]] flag_limits flag_limits_for(double half_width, double threshold);

}  // namespace hdb
