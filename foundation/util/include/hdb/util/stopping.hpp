#pragma once
// When a case has repeated enough (docs/methodology.md, "How many repetitions"). A case that a
// decision reads (a check's figure, a gate's headline) repeats until the confidence interval of
// its median is narrow against the tolerance that decision applies, between a floor and a ceiling
// of repetitions and under a time ceiling; any other case repeats a fixed count. The rule sees only
// numbers, so it is the same for a GPU family and the CPU stand-in of the tests.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// The distribution-free interval of a median from order statistics: [x(k), x(n+1-k)] of the
// sorted values, with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least
// `confidence`. nullopt where even [min, max] covers less (n = 4 at 90 %: 87.5 %).
struct median_interval {
  double low = 0, high = 0;
  double coverage = 0;  // the interval's exact coverage
};
[[nodiscard]] std::optional<median_interval> interval_of_median(std::vector<double> values, double confidence);

// Why a case stopped repeating, as results.csv's `stopped_by` says.
enum class stop_reason {
  fixed,     // no decision reads it (or the user chose --benchmark_repetitions): the fixed count
  precise,   // every decision metric's median interval is narrow enough
  ceiling,   // the repetition ceiling came first
  time,      // the time ceiling came first
  failed,    // a repetition failed or was skipped: repeating it again measures nothing
};
[[nodiscard]] std::string_view to_string(stop_reason reason);
// The reason a word names, or nullopt for any other word.
[[nodiscard]] std::optional<stop_reason> stop_reason_from_string(std::string_view text);

// One metric a decision reads, with how narrow its median's interval must be: the half-width of
// the interval over the median, at most `relative_half_width`.
struct precision_target {
  std::string metric;
  double relative_half_width = 0;
};

// Every figure of the stopping rule is written here once: the code, the --stopping help (which
// formats them into its text) and the tests read them from here, and tests/docs/check_source_docs.py
// holds docs/methodology.md to these definitions.
struct stopping_policy {
  int floor = 5;      // the smallest count whose [min, max] is a 90 % interval of the median
  int ceiling = 20;
  double max_seconds = 4;  // past the floor, no repetition starts once the case's repetitions took this long
  double confidence = 0.9;
  // The interval's half-width against the tolerance: a quarter keeps a median within a quarter of
  // the tolerance of the truth, so only a figure that close to an edge can be graded either way.
  static constexpr double tolerance_fraction = 0.25;
};

// The fixed counts (--stopping=fixed, --quick, and a case no decision reads), injected when the
// user did not pass --benchmark_repetitions; --stopping=precision takes over for what a decision
// reads.
struct repetition_policy {
  int regular = 5;
  int headline = 10;  // a gated case
};
inline constexpr repetition_policy quick_repetitions{3, 5};
[[nodiscard]] constexpr repetition_policy repetitions_for(bool quick) noexcept {
  return quick ? quick_repetitions : repetition_policy{};
}

class repetition_stopper {
 public:
  // A fixed count: `repetitions` of them, whatever they read.
  explicit repetition_stopper(int repetitions);
  // Until the targets are met, within the policy; no targets is a fixed count of policy.floor.
  repetition_stopper(std::vector<precision_target> targets, stopping_policy policy);

  // The most repetitions this case may take (Google Benchmark is asked for this many).
  [[nodiscard]] int ceiling() const noexcept;
  // A repetition that finished: its counters, and how long it took.
  void add(const std::map<std::string, double>& counters, double seconds);
  // A repetition that failed or was skipped: the case stops here.
  void stop_failed();
  [[nodiscard]] bool done() const noexcept { return reason_.has_value(); }
  // Set once done().
  [[nodiscard]] std::optional<stop_reason> reason() const noexcept { return reason_; }
  [[nodiscard]] int taken() const noexcept { return taken_; }

 private:
  [[nodiscard]] bool precise() const;

  std::vector<precision_target> targets_;
  stopping_policy policy_;
  bool adaptive_ = false;
  int taken_ = 0;
  double seconds_ = 0;
  std::map<std::string, std::vector<double>> values_;
  std::optional<stop_reason> reason_;
};

}  // namespace hdb
