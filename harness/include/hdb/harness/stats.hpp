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

}  // namespace hdb
