#include "straggler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hdb::allreduce {

straggler_figures straggler_row(const std::vector<std::array<double, 5>>& times, int late_rank, int rank) {
  const auto n = static_cast<int>(times.size());
  if (late_rank < 0 || late_rank >= n || rank < 0 || rank >= n) {
    throw std::invalid_argument("straggler: rank " + std::to_string(rank) + " or late rank " +
                                std::to_string(late_rank) + " is not among the " + std::to_string(n) + " ranks that answered");
  }
  const auto in_collective = [&](int r) {
    return times[static_cast<std::size_t>(r)][0] - (r == late_rank ? times[static_cast<std::size_t>(r)][1] : 0.0);
  };
  double slowest = in_collective(0);
  double fastest = slowest;
  for (int r = 1; r < n; ++r) {
    slowest = std::max(slowest, in_collective(r));
    fastest = std::min(fastest, in_collective(r));
  }
  if (fastest <= 0) throw std::invalid_argument("straggler: a rank's time in the collective is not positive");
  straggler_figures f;
  f.rank_time_us = times[static_cast<std::size_t>(rank)][0];
  f.time_in_collective_us = in_collective(rank);
  f.delay_us = times[static_cast<std::size_t>(late_rank)][1];
  f.slowest_fastest = slowest / fastest;
  return f;
}

}  // namespace hdb::allreduce
