#include "hdb/harness/data/fit.hpp"

#include <algorithm>
#include <set>

namespace hdb {

std::optional<alpha_beta_fit> fit_alpha_beta(std::span<const double> sizes_bytes, std::span<const double> times_us) {
  if (sizes_bytes.size() != times_us.size()) return std::nullopt;
  if (std::set<double>(sizes_bytes.begin(), sizes_bytes.end()).size() < 3) return std::nullopt;
  if (std::any_of(times_us.begin(), times_us.end(), [](double t) { return !(t > 0); })) return std::nullopt;
  // Sizes span many decades; solving in units of the largest size keeps the 2x2 system
  // well conditioned.
  const double scale = *std::max_element(sizes_bytes.begin(), sizes_bytes.end());
  // Weighted normal equations for t = a + g*n with w = 1/t^2:
  // [sw  swn ] [a]   [swt ]
  // [swn swnn] [g] = [swnt]
  double sw = 0, swn = 0, swnn = 0, swt = 0, swnt = 0;
  for (std::size_t i = 0; i < sizes_bytes.size(); ++i) {
    const double n = sizes_bytes[i] / scale;
    const double t = times_us[i];
    const double w = 1 / (t * t);
    sw += w;
    swn += w * n;
    swnn += w * n * n;
    swt += w * t;
    swnt += w * n * t;
  }
  const double det = sw * swnn - swn * swn;
  if (!(det > 0)) return std::nullopt;
  const double alpha = (swnn * swt - swn * swnt) / det;
  const double inverse_beta = (sw * swnt - swn * swt) / det / scale;
  if (!(inverse_beta > 0) || alpha < 0) return std::nullopt;
  return alpha_beta_fit{alpha, 1 / inverse_beta};
}

}  // namespace hdb
