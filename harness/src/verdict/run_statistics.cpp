#include "hdb/harness/verdict/run_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

#include "hdb/harness/verdict/mann_whitney.hpp"
#include "hdb/harness/verdict/student_t.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/stats.hpp"

namespace hdb {
namespace {

constexpr std::size_t min_samples_for_test = 3;
constexpr const char* neutral_note = "neutral: a description, never a verdict";

// Pooled within-run variance of ln(sample), each run's repetitions around their own centre. The
// scale is robust (1.4826 x the median absolute deviation, the normal SD for clean data): what sets
// the noise of a run's median is the bulk of its repetitions, and one stalled repetition must not
// widen it (a graph launch of 100 kernels: nine repetitions at 79.7-80.7 us and one at 136.5 made
// the classical SD 20 x the bulk's). Samples that tie (MAD 0) fall back to the classical variance.
struct log_variance {
  double sum_squares = 0;
  double df = 0;

  void add(const std::vector<double>& samples) {
    std::vector<double> logs;
    for (const double v : samples) {
      if (v > 0) logs.push_back(std::log(v));
    }
    if (logs.size() < 2) return;
    const double n_minus_1 = static_cast<double>(logs.size() - 1);
    const double centre = median(logs);
    std::vector<double> deviations;
    for (const double l : logs) deviations.push_back(std::abs(l - centre));
    const double robust_sd = 1.4826 * median(deviations);
    if (robust_sd > 0) {
      sum_squares += robust_sd * robust_sd * n_minus_1;
    } else {
      const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
      for (const double l : logs) sum_squares += (l - mean) * (l - mean);
    }
    df += n_minus_1;
  }
  [[nodiscard]] double value() const { return df > 0 ? sum_squares / df : 0; }
};

// Variance of the median of n repetitions with per-sample variance v: (pi/2) v / n for normal
// data (the median's asymptotic efficiency is 2/pi); conservative for heavier tails.
double median_variance(double sample_variance, double n) {
  return n > 0 ? std::numbers::pi / 2 * sample_variance / n : 0;
}

}  // namespace

bool positive_medians(const std::vector<run_metric>& runs) {
  return std::all_of(runs.begin(), runs.end(), [](const run_metric& r) { return r.median > 0; });
}

metric_verdict decide(const std::vector<double>& baseline_samples, double baseline_median,
                       const std::vector<double>& current_samples, double current_median, better direction,
                       const statistics_options& options) {
  metric_verdict d;
  if (baseline_median != 0) d.change = (current_median - baseline_median) / baseline_median;
  else if (current_median != 0) d.change = current_median > 0 ? INFINITY : -INFINITY;
  const double worse = direction == better::higher ? -d.change : d.change;
  const double threshold = options.threshold.value_or(unknown_noise_threshold);
  const auto n1 = baseline_samples.size(), n2 = current_samples.size();
  bool significant = true;  // threshold alone unless the test can be used
  if (n1 < min_samples_for_test || n2 < min_samples_for_test) {
    d.note = "n=" + std::to_string(n1) + "/" + std::to_string(n2) + ": threshold only";
  } else if (mann_whitney_min_p(n1, n2) >= options.alpha) {
    d.note = "n=" + std::to_string(n1) + "/" + std::to_string(n2) + " cannot reach p<" + format_figure(options.alpha) +
             ": threshold only";
  } else {
    d.p_value = mann_whitney_u(baseline_samples, current_samples).p_value;
    significant = *d.p_value < options.alpha;
  }
  // What a t test on the same repetitions could tell apart (a guide to the noise, not the rule);
  // nothing below the threshold is ever flagged, so that is the floor.
  log_variance within;
  within.add(baseline_samples);
  within.add(current_samples);
  d.detectable = threshold;
  if (within.df > 0) {
    const double se = std::sqrt(median_variance(within.value(), static_cast<double>(n1)) +
                                median_variance(within.value(), static_cast<double>(n2)));
    d.detectable = std::max(threshold, std::expm1(student_t_quantile(1 - options.alpha / 2, within.df) * se));
  }
  if (direction == better::neutral) {
    d.note = neutral_note;
    return d;
  }
  if (significant && worse > threshold) d.result = verdict::slower;
  else if (significant && worse < -threshold) d.result = verdict::faster;
  return d;
}

double repetition_variance(const std::vector<run_metric>& runs) {
  log_variance within;
  double samples = 0;
  for (const auto& r : runs) {
    within.add(r.samples);
    samples += static_cast<double>(r.samples.size()) / static_cast<double>(runs.size());
  }
  return within.df > 0 ? median_variance(within.value(), samples) : 0;
}

run_spread combine_spreads(const run_spread& a, const run_spread& b) {
  run_spread sum;
  sum.df = a.df + b.df;
  if (sum.df > 0) sum.variance = (a.variance * a.df + b.variance * b.df) / sum.df;
  sum.inflation_df = a.inflation_df + b.inflation_df;
  if (sum.inflation_df > 0) sum.inflation = (a.inflation * a.inflation_df + b.inflation * b.inflation_df) / sum.inflation_df;
  return sum;
}

flag_limits flag_limits_for(double half_width, double threshold) {
  // SLOWER for better=higher (FASTER for lower) needs d < -h and the interval's low end
  // d - h <= ln(1 - threshold); the other side likewise. A threshold of 100 % or more can never
  // be reached downwards.
  const double down = threshold < 1 ? std::log1p(-threshold) + half_width : -INFINITY;
  return {std::min(-half_width, down), std::max(half_width, std::log1p(threshold) - half_width)};
}

run_spread pool_run_spread(const std::vector<std::vector<run_metric>>& metrics) {
  run_spread spread;
  double sum_squares = 0, sum_ratios = 0;
  for (const auto& runs : metrics) {
    if (runs.size() < 2 || !positive_medians(runs)) continue;
    std::vector<double> logs;
    for (const auto& r : runs) logs.push_back(std::log(r.median));
    const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
    double squares = 0;
    for (const double l : logs) squares += (l - mean) * (l - mean);
    sum_squares += squares;
    spread.df += static_cast<double>(runs.size() - 1);
    if (const double floor = repetition_variance(runs); floor > 0) {
      sum_ratios += squares / floor;
      spread.inflation_df += static_cast<double>(runs.size() - 1);
    }
  }
  if (spread.df > 0) spread.variance = sum_squares / spread.df;
  if (spread.inflation_df > 0) spread.inflation = sum_ratios / spread.inflation_df;
  return spread;
}

metric_verdict decide_against_runs(const std::vector<run_metric>& baselines, const run_metric& current,
                                    const run_spread& spread, better direction, std::size_t tests,
                                    const statistics_options& options) {
  if (baselines.empty() || !(spread.df > 0) || tests == 0 || !positive_medians(baselines) || !(current.median > 0)) {
    throw std::invalid_argument("decide_against_runs needs a baseline run, a spread with df > 0 and positive medians");
  }
  const double threshold = options.threshold.value_or(known_noise_threshold);
  const auto runs = static_cast<double>(baselines.size());
  double mean_log = 0;
  for (const auto& r : baselines) mean_log += std::log(r.median) / runs;
  const double d_log = std::log(current.median) - mean_log;

  // Variance components of ln(run median): between runs (sigma_b^2) plus the run's own
  // repetitions (median_variance). The pooled spread estimates their sum for a baseline run;
  // it is never taken below what this metric's repetitions alone imply.
  log_variance cur_within;
  cur_within.add(current.samples);
  const double base_median_var = repetition_variance(baselines);
  // With repetitions, this metric's run-to-run variance is its own repetition variance times the
  // kind's inflation (a steady one-way copy and a noisy bidirectional one keep their own scales
  // and share the degrees of freedom); without, the kind's variance itself.
  const bool scaled = spread.inflation_df > 0 && base_median_var > 0;
  const double run_var = scaled ? std::max(spread.inflation, 1.0) * base_median_var
                                : std::max(spread.variance, base_median_var);
  const double df = scaled ? spread.inflation_df : spread.df;
  const double between = run_var - base_median_var;
  // Without repetitions on either side, the current run's median is as noisy as a baseline's.
  const double cur_median_var = base_median_var > 0 && cur_within.df > 0
                                    ? median_variance(cur_within.value(), static_cast<double>(current.samples.size()))
                                    : base_median_var;
  const double se = std::sqrt(run_var / runs + between + cur_median_var);

  const double level = options.alpha / static_cast<double>(tests);
  const double half_width = student_t_quantile(1 - level / 2, df) * se;
  metric_verdict d;
  d.change = std::expm1(d_log);
  d.p_value = se > 0 ? 2 * student_t_cdf(-std::abs(d_log) / se, df) : (d_log == 0 ? 1.0 : 0.0);
  const auto limits = flag_limits_for(half_width, threshold);
  if (direction == better::neutral) {
    d.detectable = std::expm1(half_width);
    d.band_low = std::exp(mean_log - half_width);
    d.band_high = std::exp(mean_log + half_width);
    d.note = neutral_note;
    return d;
  }
  d.band_low = std::exp(mean_log + limits.low);
  d.band_high = std::exp(mean_log + limits.high);
  d.detectable = direction == better::higher ? -std::expm1(limits.low) : std::expm1(limits.high);
  if (std::abs(d_log) <= half_width) return d;  // within run-to-run noise
  // The interval d_log +- half_width, as relative changes in the bad and the good direction.
  const double worst = direction == better::higher ? -std::expm1(d_log - half_width) : std::expm1(d_log + half_width);
  const double best = direction == better::higher ? std::expm1(d_log + half_width) : -std::expm1(d_log - half_width);
  const bool worse = direction == better::higher ? d_log < 0 : d_log > 0;
  if (worse && worst >= threshold) d.result = verdict::slower;
  else if (!worse && best >= threshold) d.result = verdict::faster;
  else d.note = "real but below the " + percent_text(threshold) + " threshold";
  if (d.result != verdict::same && std::abs(d.change) < threshold) {
    d.note = "below " + percent_text(threshold) + " but within noise of it";
  }
  return d;
}

}  // namespace hdb
