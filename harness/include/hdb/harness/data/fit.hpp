#pragma once
// The alpha-beta model of a transfer: t(n) = alpha + n / beta (latency plus size over
// bandwidth), fitted by least squares on relative error so that small and large sizes
// weigh alike (weights 1/t^2; see docs/csv-schema.md).
#include <optional>
#include <span>

namespace hdb {

struct alpha_beta_fit {
  double alpha_us = 0;            // fixed cost per operation
  double beta_bytes_per_us = 0;   // asymptotic rate
  [[nodiscard]] double bandwidth_gbps() const { return beta_bytes_per_us * 1e6 / 1e9; }
  // Size at which half of beta is reached: alpha * beta.
  [[nodiscard]] double n_half_bytes() const { return alpha_us * beta_bytes_per_us; }
};

// sizes in bytes, times in microseconds, same length. nullopt below 3 distinct sizes,
// for non-positive times, or when the fit is not physical (beta <= 0 or alpha < 0).
[[nodiscard]] std::optional<alpha_beta_fit> fit_alpha_beta(std::span<const double> sizes_bytes,
                                                           std::span<const double> times_us);

}  // namespace hdb
