#pragma once
// Statistics the harness needs beyond the shared descriptive ones (median, percentile, summary
// live in hdb_util, included here, so a figure and its recomputation agree): the t distribution
// of compare's run-to-run test.
#include "hdb/util/stats.hpp"

namespace hdb {

// Student's t distribution with `df` > 0 degrees of freedom (not necessarily whole):
// P(T <= t), and its inverse for 0 < probability < 1.
[[nodiscard]] double student_t_cdf(double t, double df);
[[nodiscard]] double student_t_quantile(double probability, double df);

}  // namespace hdb
