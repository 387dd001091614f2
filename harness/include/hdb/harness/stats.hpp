#pragma once
// Descriptive statistics of a case's repetitions, as results.csv reports them.
#include <optional>
#include <span>

namespace hdb {

struct sample_summary {
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  // Sample standard deviation (n-1) and cv = stddev/mean x 100; undefined below 2 samples.
  std::optional<double> stddev;
  std::optional<double> cv_percent;
};

// Median of an even count is the mean of the two middle values. Throws on an empty span.
[[nodiscard]] double median(std::span<const double> values);
[[nodiscard]] sample_summary summarize(std::span<const double> values);

// Student's t distribution with `df` > 0 degrees of freedom (not necessarily whole):
// P(T <= t), and its inverse for 0 < probability < 1.
[[nodiscard]] double student_t_cdf(double t, double df);
[[nodiscard]] double student_t_quantile(double probability, double df);

}  // namespace hdb
