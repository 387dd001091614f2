#include "hdb/harness/verdict/student_t.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hdb {
namespace {

// Continued fraction of the regularized incomplete beta function I_x(a, b), evaluated with
// the modified Lentz method (Numerical Recipes, 3rd ed., section 6.4); converges for
// x < (a + 1) / (a + b + 2).
double incomplete_beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  constexpr double epsilon = 1e-15;
  double c = 1;
  double d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    for (const double numerator : {m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                                   -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + numerator * d;
      d = 1 / (std::abs(d) < tiny ? tiny : d);
      c = 1 + numerator / c;
      if (std::abs(c) < tiny) c = tiny;
      h *= d * c;
    }
    if (std::abs(d * c - 1) < epsilon) break;
  }
  return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * incomplete_beta_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * incomplete_beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf needs df > 0");
  const double tail = regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t)) / 2;  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double probability, double df) {
  if (!(probability > 0 && probability < 1)) throw std::invalid_argument("student_t_quantile needs 0 < probability < 1");
  if (!(df > 0)) throw std::invalid_argument("student_t_quantile needs df > 0");
  // The cdf is monotone: widen a bracket until it holds the answer, then bisect it.
  double lo = -1, hi = 1;
  while (student_t_cdf(lo, df) > probability) lo *= 2;
  while (student_t_cdf(hi, df) < probability) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, df) < probability ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace hdb
