#pragma once
// The one decision of a figure (docs/harness.md, "check"): from its value, the band healthy nodes
// read (a reference set's, or the node's peers'), the band's centre, its direction and the rule
// that judges it (tolerance, host line), a grade. check against a set, compare held to a node's
// set and fleet against a set or against peers all decide here, and nothing else decides; the
// reason a line prints is written here too, so it always says what was decided.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "hdb/harness/verdict/grades.hpp"
#include "hdb/contract/declaration.hpp"  // better

namespace hdb {

// The band a figure is held to: values in [low, high] are what healthy nodes of the kind read.
struct figure_band {
  double low = 0, high = 0;
  double centre = 0;      // the set's centre (geometric mean of its runs) or the peers' median
  std::size_t runs = 0;   // the set's runs, or the peers, that made it
  std::optional<double> detectable;  // the smallest change in the bad direction it flags (a set's band)
};

// What judges a figure beyond its band (judging.hpp finds it): the change that matters for a
// node, and whether the host sets the figure (a host line: faster is a faster host, not news).
struct figure_rule {
  std::optional<double> tolerance;
  bool host_bound = false;
};

// How much worse `value` is than `centre` in the bad direction, as a fraction (0.05: 5 % slower;
// negative when better); 0 for neutral: (1 - v/c) when higher is better, (v/c - 1) when lower is.
[[nodiscard]] double worse_by(double value, double centre, better direction);

// Where `value` lies against [low, high] in the figure's direction: below low is SLOWER when
// higher is better, above high when lower is; neutral is SAME wherever it lies (a description,
// never a verdict).
[[nodiscard]] verdict position_in_band(double value, double low, double high, better direction);

// The rule: SAME: PASS; FASTER: WARN (a host line: PASS, a faster host); SLOWER and worse than the
// centre by more than the tolerance: FAIL, within it: WARN; SLOWER with no tolerance declared: FAIL.
[[nodiscard]] grade grade_of(verdict position, double worse, const figure_rule& rule);

struct figure_decision {
  verdict position = verdict::same;
  double worse = 0;
  grade result = grade::pass;
};

[[nodiscard]] figure_decision decide_figure(double value, const figure_band& band, better direction, const figure_rule& rule);

// What compare prints for a figure the node's rule decided: FAIL is SLOWER; outside the band on
// the bad side but within the tolerance is SAME (with a note); FASTER and SAME as the band says.
[[nodiscard]] verdict compare_verdict(const figure_decision& decision);

// Whose band it was, in the reason's words: "the set's" (its runs) or "its peers'".
enum class band_source { set, peers };

// The line's reason for that decision: "slower than the set's centre 55.4 by 51.9 %: outside the
// band of healthy nodes of this kind and beyond the 3 % that matters for a node", "within its
// peers' band (+0.2 % from their centre 55.4, 11 peers)", ... `unit` picks "slower" (GB/s, us) or
// "worse".
[[nodiscard]] std::string decision_reason(const figure_decision& decision, double value, const figure_band& band,
                                          const figure_rule& rule, band_source source, std::string_view unit);

// The peaks-only grading (no reference set of this node's kind), against data rates: a healthy
// H200 moves 85-90 % of one PCIe direction, 70-81 % of both directions at once (the committed
// runs' lowest: 69.5 %), 77-88 % of its NVLinks; so below 65 % something is wrong or contended,
// and below 50 % it is broken. A loss of 10-20 % needs a reference set to be seen.
inline constexpr double peak_pass_percent = 65;
inline constexpr double peak_warn_percent = 50;
[[nodiscard]] grade grade_by_peak(double percent_of_peak);

}  // namespace hdb
