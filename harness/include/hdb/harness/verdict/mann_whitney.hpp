#pragma once
// Mann-Whitney U test (Wilcoxon rank-sum), two-sided, as Google Benchmark's compare.py
// uses it to tell a real change from noise: it assumes no distribution, only that the
// repetitions of each side are independent.
#include <cstddef>
#include <span>

namespace hdb {

struct mann_whitney_result {
  double u = 0;          // U of the first sample: pairs (x, y) with x > y, ties count 1/2
  double p_value = 1;    // two-sided
  bool exact = false;    // exact null distribution (else normal approximation)
};

// Largest sample size for which the exact distribution is used (when there are no ties);
// above it, or with ties, the normal approximation with tie and continuity correction.
inline constexpr std::size_t mann_whitney_exact_limit = 20;

// Both samples must be non-empty.
[[nodiscard]] mann_whitney_result mann_whitney_u(std::span<const double> x, std::span<const double> y);

// The smallest two-sided p-value the exact test can produce for these sizes
// (2 / C(n1+n2, n1)): with 3 vs 3 repetitions it is 0.1, so alpha = 0.05 can never be met.
[[nodiscard]] double mann_whitney_min_p(std::size_t n1, std::size_t n2);

}  // namespace hdb
