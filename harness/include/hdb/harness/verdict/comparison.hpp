#pragma once
// hdbench compare, the model: the baseline runs and the current run matched figure by figure and
// each decided (run_statistics.hpp); against a node's reference set, a difference is then held
// to the figure's tolerance by the one decision (decision.hpp), as check holds it. Rendering
// (text, markdown, junit) reads a comparison_set and decides nothing (compare_render.cpp).
// Two rules (docs/harness.md gives the reasoning):
// - several baseline runs: the current run's median is tested against the spread of the
//   baseline runs' medians (a t test on the log scale, the spread pooled over metrics of one
//   kind and floored by the repetitions, Bonferroni over the headline metrics), and the
//   change must be able to reach the threshold;
// - one baseline run: run-to-run noise is unknown, so the repetitions decide (Mann-Whitney U)
//   together with a median change beyond the threshold.
// SLOWER/FASTER/SAME per metric; only headline metrics whose better direction is not neutral
// affect the exit status, and so does such a headline the current run lost to a failure (MISSING).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/data/run_index.hpp"
#include "hdb/harness/verdict/run_statistics.hpp"
#include "hdb/harness/verdict/what_changed.hpp"

namespace hdb {

struct noise_model;  // noise_model.hpp
class run_judging;   // judging.hpp

// Which metrics a comparison matches: the headlines, or every metric (--all; the others never
// affect the exit).
enum class compared_metrics { headlines, all };

struct comparison {
  metric_key key;
  std::vector<const metric_data*> baselines;  // the baseline runs that measured this metric
  const metric_data* current = nullptr;
  double reference = 0;  // the baseline value the change is relative to
  metric_verdict decision;
  double worse = 0;  // change in the bad direction; sorts the table
  // With a node's rules: the band above as the decision reads it, and the figure's one decision
  // (decision.hpp) on it, the grade check prints; where the comparison holds the node to its
  // tolerance (comparison_set::held_to_node_tolerance), decision.result follows it (compare_verdict).
  std::optional<figure_band> node_band;
  std::optional<figure_decision> node_decision;

  // A metric gates only where both sides declare it a headline and it has a direction: a family
  // that stops (or starts) gating a metric must not fail a comparison against runs made before
  // the change, and a neutral metric describes rather than rates.
  [[nodiscard]] bool gates() const;
};

struct comparison_set {
  double known_threshold = 0, unknown_threshold = 0;  // the thresholds used (options or defaults)
  std::size_t repetitions_only = 0;  // metrics judged by the one-baseline repetition rule
  std::string noise_model_source;    // where the noise model came from; empty when none was used
  bool model_is_baselines = false;   // the baselines are the model's own runs (a reference set): not pooled
  bool held_to_node_tolerance = false;  // SLOWER also needed the change beyond each metric's node tolerance
  std::vector<comparison> compared;  // worst first: SLOWER, SAME, FASTER, each by its bad change
  std::vector<std::string> only_baseline, only_current;  // descriptions
  // Gating headlines of the baselines that the current run lacks because their case or family
  // failed, crashed or timed out there: a failure, as a SLOWER one is (compare fails closed). One
  // the run was not asked to measure (other families, a verdict run's selection, a case skipped
  // where it cannot run) is only_baseline instead.
  struct missing_headline {
    std::string family;
    std::string text;  // its description, with the current run's reason
  };
  std::vector<missing_headline> missing;
  std::vector<std::string> notes;                         // node warnings, failed families
  std::size_t tests = 0;                                  // gating metrics judged against run-to-run spread
  int slower = 0, faster = 0, same = 0;                   // gating metrics only
  int within_tolerance = 0;  // of `same`: outside the set's band, within the node tolerance
  // Where a shown figure is SLOWER or FASTER, the fingerprint fields in which the current run
  // differs from the baselines (compare_runs fills it; empty otherwise).
  std::vector<fingerprint_change> what_changed;
};

// Matches every shown metric (headlines; with options.all every metric) of the baselines with
// the current run and decides it. With a noise model (noise_model.hpp) its spread is used where
// the baselines alone do not give one (one baseline run) and pooled with theirs where they do,
// unless the baselines are the model's own members (a reference set: the same data, once).
// With `node_rules` (the current run's, judging.hpp: check's) each figure with a band gets its one
// decision under its rule; against a whole reference set, with no --threshold naming the change
// that matters, that decision is the verdict: outside the set's band but within the figure's
// tolerance is SAME, with a note. Without node_rules no rule is known.
[[nodiscard]] comparison_set build_comparisons(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                               const statistics_options& statistics, compared_metrics shown,
                                               const noise_model* model = nullptr, const run_judging* node_rules = nullptr);

}  // namespace hdb
