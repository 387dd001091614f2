#include "hdb/harness/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace hdb {

double median(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const auto mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

sample_summary summarize(std::span<const double> values) {
  sample_summary s;
  s.median = median(values);
  const auto n = static_cast<double>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  if (values.size() >= 2) {
    double squares = 0;
    for (const double v : values) squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / (n - 1));
    if (s.mean != 0) s.cv_percent = *s.stddev / std::abs(s.mean) * 100;
  }
  return s;
}

}  // namespace hdb
