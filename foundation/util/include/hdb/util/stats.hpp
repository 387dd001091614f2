#pragma once
// Descriptive statistics shared by the bench binaries and the harness: the one median, so a
// figure computed in a family and the same figure recomputed from the CSV agree.
#include <optional>
#include <vector>

namespace hdb {

// Median; an even count gives the mean of the two middle values. Throws std::invalid_argument
// on no values.
[[nodiscard]] double median(std::vector<double> values);

// Linear interpolation between the closest ranks (numpy's default): q = 0 is the minimum,
// q = 0.5 the median, q = 1 the maximum; q outside [0, 1] is clamped. Throws on no values.
[[nodiscard]] double percentile(std::vector<double> values, double q);

struct summary {
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  // Sample standard deviation (n - 1) and cv = stddev / |mean| x 100: undefined below two
  // values, and cv also for a zero mean.
  std::optional<double> stddev;
  std::optional<double> cv_percent;
};

// Throws std::invalid_argument on no values.
[[nodiscard]] summary summarize(const std::vector<double>& values);

}  // namespace hdb
