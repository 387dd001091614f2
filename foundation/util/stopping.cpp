#include "hdb/util/stopping.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hdb {
namespace {

// P(Binomial(n, 1/2) < k), exactly enough for the counts a case takes (n <= a few hundred).
double binomial_half_below(int n, int k) {
  double term = std::pow(0.5, n);  // P(X = 0)
  double below = 0;
  for (int i = 0; i < k; ++i) {
    below += term;
    term *= static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return below;
}

}  // namespace

std::optional<median_interval> interval_of_median(std::vector<double> values, double confidence) {
  if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("interval_of_median: confidence must be in (0, 1)");
  const int n = static_cast<int>(values.size());
  int rank = 0;  // k of [x(k), x(n+1-k)]; 0: no interval covers enough
  double coverage = 0;
  for (int k = 1; 2 * k <= n + 1; ++k) {
    const double covers = 1 - 2 * binomial_half_below(n, k);
    if (covers < confidence) break;
    rank = k;
    coverage = covers;
  }
  if (rank == 0) return std::nullopt;
  std::sort(values.begin(), values.end());
  return median_interval{values[static_cast<std::size_t>(rank - 1)], values[static_cast<std::size_t>(n - rank)], coverage};
}

std::string_view to_string(stop_reason reason) {
  switch (reason) {
    case stop_reason::fixed: return "fixed";
    case stop_reason::precise: return "precise";
    case stop_reason::ceiling: return "ceiling";
    case stop_reason::time: return "time";
    case stop_reason::failed: return "failed";
  }
  return "fixed";
}

std::optional<stop_reason> stop_reason_from_string(std::string_view text) {
  for (const auto reason : {stop_reason::fixed, stop_reason::precise, stop_reason::ceiling, stop_reason::time, stop_reason::failed}) {
    if (to_string(reason) == text) return reason;
  }
  return std::nullopt;
}

repetition_stopper::repetition_stopper(int repetitions) {
  if (repetitions < 1) throw std::invalid_argument("repetition_stopper: at least one repetition");
  policy_.floor = policy_.ceiling = repetitions;
}

repetition_stopper::repetition_stopper(std::vector<precision_target> targets, stopping_policy policy)
    : targets_(std::move(targets)), policy_(policy), adaptive_(!targets_.empty()) {
  if (policy_.floor < 1 || policy_.ceiling < policy_.floor) {
    throw std::invalid_argument("repetition_stopper: needs 1 <= floor <= ceiling");
  }
  if (!adaptive_) policy_.ceiling = policy_.floor;
}

int repetition_stopper::ceiling() const noexcept { return policy_.ceiling; }

void repetition_stopper::add(const std::map<std::string, double>& counters, double seconds) {
  if (done()) return;
  ++taken_;
  seconds_ += seconds;
  for (const auto& target : targets_) {
    if (const auto it = counters.find(target.metric); it != counters.end()) values_[target.metric].push_back(it->second);
  }
  if (taken_ < policy_.floor) return;
  if (!adaptive_) reason_ = stop_reason::fixed;
  else if (precise()) reason_ = stop_reason::precise;
  else if (taken_ >= policy_.ceiling) reason_ = stop_reason::ceiling;
  else if (seconds_ >= policy_.max_seconds) reason_ = stop_reason::time;
}

void repetition_stopper::stop_failed() {
  if (!done()) reason_ = stop_reason::failed;
}

bool repetition_stopper::precise() const {
  for (const auto& target : targets_) {
    const auto it = values_.find(target.metric);
    // A metric the case never wrote (a figure this case kind leaves out) constrains nothing.
    if (it == values_.end()) continue;
    const auto interval = interval_of_median(it->second, policy_.confidence);
    if (!interval) return false;
    const double centre = std::abs((interval->low + interval->high) / 2);
    if (centre == 0) {
      if (interval->high != interval->low) return false;
      continue;
    }
    if ((interval->high - interval->low) / 2 > target.relative_half_width * centre) return false;
  }
  return true;
}

}  // namespace hdb
