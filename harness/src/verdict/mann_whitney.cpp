#include "hdb/harness/verdict/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

namespace hdb {
namespace {

struct ranked {
  std::vector<double> ranks;  // mid-ranks, in the order x then y
  double tie_term = 0;        // sum of t^3 - t over groups of t tied values
};

ranked rank_pooled(std::span<const double> x, std::span<const double> y) {
  std::vector<std::pair<double, std::size_t>> pooled;
  for (std::size_t i = 0; i < x.size(); ++i) pooled.emplace_back(x[i], i);
  for (std::size_t i = 0; i < y.size(); ++i) pooled.emplace_back(y[i], x.size() + i);
  std::sort(pooled.begin(), pooled.end());
  ranked r{std::vector<double>(pooled.size()), 0};
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mid_rank = (static_cast<double>(i + j) + 1) / 2;  // ranks are 1-based
    for (std::size_t k = i; k < j; ++k) r.ranks[pooled[k].second] = mid_rank;
    const auto t = static_cast<double>(j - i);
    r.tie_term += t * t * t - t;
    i = j;
  }
  return r;
}

// Number of arrangements of n1 x's and n2 y's giving each U = 0..n1*n2, by the recurrence
// f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u) (the largest value is an x, or a y).
std::vector<double> exact_u_counts(std::size_t n1, std::size_t n2) {
  // table[m][n] is the distribution for sizes (m, n); built row by row.
  std::vector<std::vector<std::vector<double>>> table(n1 + 1, std::vector<std::vector<double>>(n2 + 1));
  for (std::size_t m = 0; m <= n1; ++m) {
    for (std::size_t n = 0; n <= n2; ++n) {
      auto& dist = table[m][n];
      dist.assign(m * n + 1, 0.0);
      if (m == 0 || n == 0) {
        dist[0] = 1;
        continue;
      }
      const auto& x_largest = table[m - 1][n];
      const auto& y_largest = table[m][n - 1];
      for (std::size_t u = 0; u < x_largest.size(); ++u) dist[u + n] += x_largest[u];
      for (std::size_t u = 0; u < y_largest.size(); ++u) dist[u] += y_largest[u];
    }
  }
  return table[n1][n2];
}

double exact_p(double u, std::size_t n1, std::size_t n2) {
  const auto counts = exact_u_counts(n1, n2);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const auto k = static_cast<std::size_t>(u);
  const double at_most = std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(k) + 1, 0.0);
  const double at_least = std::accumulate(counts.begin() + static_cast<std::ptrdiff_t>(k), counts.end(), 0.0);
  return std::min(1.0, 2 * std::min(at_most, at_least) / total);
}

double normal_p(double u, std::size_t n1, std::size_t n2, double tie_term) {
  const auto a = static_cast<double>(n1);
  const auto b = static_cast<double>(n2);
  const double n = a + b;
  const double mean = a * b / 2;
  const double variance = a * b / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) return 1;  // every value tied: no evidence of a difference
  const double z = std::max(0.0, std::abs(u - mean) - 0.5) / std::sqrt(variance);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace

mann_whitney_result mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) throw std::invalid_argument("Mann-Whitney U needs two non-empty samples");
  const auto r = rank_pooled(x, y);
  const double rank_sum_x = std::accumulate(r.ranks.begin(), r.ranks.begin() + static_cast<std::ptrdiff_t>(x.size()), 0.0);
  const auto n1 = static_cast<double>(x.size());
  mann_whitney_result result;
  result.u = rank_sum_x - n1 * (n1 + 1) / 2;
  result.exact = r.tie_term == 0 && x.size() <= mann_whitney_exact_limit && y.size() <= mann_whitney_exact_limit;
  result.p_value = result.exact ? exact_p(result.u, x.size(), y.size()) : normal_p(result.u, x.size(), y.size(), r.tie_term);
  return result;
}

double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  // 1 / C(n1+n2, n1), computed as a running product to stay in range.
  double inverse_binomial = 1;
  for (std::size_t i = 1; i <= n1; ++i) {
    inverse_binomial *= static_cast<double>(i) / static_cast<double>(n2 + i);
  }
  return std::min(1.0, 2 * inverse_binomial);
}

}  // namespace hdb
