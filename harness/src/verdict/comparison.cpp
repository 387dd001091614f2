#include "hdb/harness/verdict/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "hdb/harness/verdict/judging.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/stats.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;


// GPU models and driver, for the "same node?" warning.
std::optional<std::string> node_identity(const std::optional<json>& meta) {
  if (!meta) return std::nullopt;
  const auto node = meta->value("node", json::object());
  std::string gpus;
  for (const auto& gpu : node.value("gpus", json::array())) {
    const auto name = gpu.is_object() ? gpu.value("name", json()) : json();
    gpus += (gpus.empty() ? "" : ", ") + (name.is_string() ? name.get<std::string>() : std::string("?"));
  }
  const auto driver = node.value("driver_release", node.value("driver_version", json()));
  return "GPUs [" + gpus + "], driver " + (driver.is_string() ? driver.get<std::string>() : std::string("?"));
}

run_metric to_run_metric(const metric_data& data) { return {data.samples, *data.central}; }

std::vector<run_metric> to_run_metrics(const std::vector<const metric_data*>& data) {
  std::vector<run_metric> runs;
  for (const auto* d : data) runs.push_back(to_run_metric(*d));
  return runs;
}

std::string one_sided(const metric_key& key, const std::vector<const side_index*>& others) {
  auto case_key = key;
  case_key.metric.clear();
  for (const auto* other : others) {
    const auto it = other->not_ok.find(case_key);
    if (it != other->not_ok.end()) return describe(key) + " (other run: " + it->second + ")";
  }
  return describe(key);
}

// Why the current run lacks `key` where it was asked to measure it: its case failed, or its
// family did (crashed, timed out, exited non-zero) and the case has no row of its own saying it
// was skipped. nullopt where the run simply did not measure it.
std::optional<std::string> failure_behind(const metric_key& key, const side_index& current) {
  auto case_key = key;
  case_key.metric.clear();
  if (current.not_ok.contains(case_key)) {
    if (!current.failed.contains(case_key)) return std::nullopt;
    return current.not_ok.at(case_key);
  }
  const metric_key family_key{key.family, {}, {}, {}, {}, {}};
  if (current.failed.contains(family_key)) return current.not_ok.at(family_key);
  return std::nullopt;
}

void add_node_notes(const std::vector<indexed_run>& baselines, const indexed_run& current, comparison_set& set) {
  const auto cur_node = node_identity(current.run.meta);
  for (const auto& base : baselines) {
    const auto base_node = node_identity(base.run.meta);
    if (!base_node || !cur_node) {
      set.notes.push_back("note: node not checked, no meta.json beside " +
                          (!base_node ? base.run.csv_path : current.run.csv_path).string());
      return;
    }
    if (*base_node != *cur_node) {
      set.notes.push_back("warning: the runs come from different nodes: baseline " + base.run.name + " " + *base_node +
                          "; current " + *cur_node);
    }
  }
}

// Rows are matched by device index; a different gpu_uuid behind one index is another card.
void add_gpu_notes(const std::vector<indexed_run>& baselines, const indexed_run& current, comparison_set& set) {
  std::map<int, std::map<std::string, std::vector<std::string>>> runs_by_uuid;  // device -> uuid -> runs
  std::vector<const indexed_run*> all;
  for (const auto& base : baselines) all.push_back(&base);
  all.push_back(&current);
  for (const auto* run : all) {
    for (const auto& [device, uuid] : run->index.gpu_of_device) runs_by_uuid[device][uuid].push_back(run->run.name);
  }
  for (const auto& [device, uuids] : runs_by_uuid) {
    if (uuids.size() < 2) continue;
    std::vector<std::string> which;
    for (const auto& [uuid, runs] : uuids) which.push_back(uuid + " in " + join_list(runs, ", "));
    set.notes.push_back("warning: device=" + std::to_string(device) + " is a different physical GPU across the runs (" +
                        join_list(which, "; ") +
                        "); compared by device index");
  }
}

// The figure's one decision on the baselines' band under the node's rule: the grade check prints.
void decide_for_node(comparison& cmp, const figure_rule& rule) {
  const auto& d = cmp.decision;
  if (!d.band_low || !d.band_high || !(cmp.reference > 0)) return;
  const auto& band = cmp.node_band.emplace(figure_band{*d.band_low, *d.band_high, cmp.reference, cmp.baselines.size(), d.detectable});
  cmp.node_decision = decide_figure(*cmp.current->central, band, cmp.baselines.front()->direction, rule);
}

// A node against its kind's reference set: compare's verdict is that decision, as check grades it
// (docs/harness.md, "compare against a reference set"): outside the band on the bad side is SLOWER
// only beyond the figure's tolerance.
void hold_to_node_rule(comparison& cmp, const figure_rule& rule) {
  if (!cmp.node_decision) return;
  const auto& d = cmp.decision;
  cmp.decision.result = compare_verdict(*cmp.node_decision);
  if (cmp.decision.result == verdict::same && cmp.node_decision->position == verdict::slower && rule.tolerance) {
    cmp.decision.note = "outside the set's band (" + percent_text(d.change, percent_style::signed_change) + ") but within the " +
                        percent_text(*rule.tolerance) + " that matters for a node";
  }
}

}  // namespace

bool comparison::gates() const {
  const auto rated = [](const metric_data* d) { return d->headline && d->direction != better::neutral; };
  return rated(baselines.front()) && rated(current);
}

comparison_set build_comparisons(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                 const statistics_options& statistics, compared_metrics shown, const noise_model* model,
                                 const run_judging* node_rules) {
  comparison_set set;
  set.known_threshold = statistics.threshold.value_or(known_noise_threshold);
  set.unknown_threshold = statistics.threshold.value_or(unknown_noise_threshold);
  // A reference set's model was learned from the very runs passed as baselines: pooling it with
  // their own spread would count the same runs twice.
  const bool model_is_baselines =
      model && std::all_of(baselines.begin(), baselines.end(), [&](const indexed_run& base) {
        return std::find(model->members.begin(), model->members.end(), base.run.name) != model->members.end();
      });
  set.model_is_baselines = model_is_baselines;
  // A node against its kind: the baselines are the whole set, not one of its members.
  set.held_to_node_tolerance = model_is_baselines && baselines.size() == model->members.size() && !statistics.threshold &&
                               node_rules != nullptr;
  add_node_notes(baselines, current, set);
  // A reference set's members are separate machines by design (and so is a node compared with
  // its kind): other GPUs behind one index are what the set is, not news.
  if (!model_is_baselines) add_gpu_notes(baselines, current, set);
  std::vector<const side_index*> base_indexes;
  for (const auto& base : baselines) base_indexes.push_back(&base.index);
  for (const auto& base : baselines) {
    for (const auto& [key, why] : base.index.not_ok) {
      if (key.case_name.empty()) {
        set.notes.push_back("warning: baseline " + base.run.name + " family " + key.family + " " + why);
      }
    }
  }
  for (const auto& [key, why] : current.index.not_ok) {
    if (key.case_name.empty()) set.notes.push_back("warning: current family " + key.family + " " + why);
  }

  // Every shown metric with the baseline runs that measured it.
  std::map<metric_key, std::vector<const metric_data*>> measured;
  for (const auto* index : base_indexes) {
    for (const auto& [key, data] : index->metrics) {
      if ((data.headline || shown == compared_metrics::all) && data.central) measured[key].push_back(&data);
    }
  }
  const auto across_runs = [](const std::vector<const metric_data*>& runs) {
    return runs.size() >= 2 && positive_medians(to_run_metrics(runs));
  };
  std::map<spread_group, std::vector<std::vector<run_metric>>> kinds;
  for (const auto& [key, runs] : measured) {
    if (across_runs(runs)) kinds[spread_group_of(key, runs.front()->headline)].push_back(to_run_metrics(runs));
  }
  std::map<spread_group, run_spread> spreads;
  for (const auto& [kind, metrics] : kinds) spreads[kind] = pool_run_spread(metrics);
  // The spread a metric is judged with: its baselines' own (several runs), the model's (one run),
  // or both pooled; none when neither has one (the repetition rule decides).
  const auto spread_of = [&](const metric_key& key, const std::vector<const metric_data*>& runs) -> std::optional<run_spread> {
    if (!positive_medians(to_run_metrics(runs))) return std::nullopt;
    const bool headline = runs.front()->headline;
    const run_spread* learned = model ? model->spread_for(key, headline) : nullptr;
    if (learned && !(learned->df > 0)) learned = nullptr;
    if (runs.size() >= 2) {
      const auto& own = spreads.at(spread_group_of(key, headline));
      return learned && !model_is_baselines ? combine_spreads(own, *learned) : own;
    }
    if (learned) return *learned;
    return std::nullopt;
  };
  std::vector<std::pair<metric_key, std::vector<const metric_data*>>> pairs;
  for (const auto& [key, runs] : measured) {
    const auto it = current.index.metrics.find(key);
    if (it == current.index.metrics.end() || !it->second.central) {
      const auto failure = failure_behind(key, current.index);
      const bool gated = runs.front()->headline && runs.front()->direction != better::neutral;
      if (gated && failure) set.missing.push_back({key.family, describe(key) + " (current run: " + *failure + ")"});
      else set.only_baseline.push_back(one_sided(key, {&current.index}));
      continue;
    }
    const comparison probe{key, runs, &it->second, 0, {}, 0, std::nullopt, std::nullopt};
    if (probe.gates() && spread_of(key, runs) && *it->second.central > 0) ++set.tests;
    pairs.emplace_back(key, runs);
  }
  for (const auto& [key, runs] : pairs) {
    const auto& cur = current.index.metrics.at(key);
    const auto& first = *runs.front();
    comparison cmp{key, runs, &cur, 0, {}, 0, std::nullopt, std::nullopt};
    const auto spread = spread_of(key, runs);
    if (spread && *cur.central > 0) {
      const auto base = to_run_metrics(runs);
      cmp.decision = decide_against_runs(base, to_run_metric(cur), *spread, first.direction,
                                         std::max<std::size_t>(set.tests, 1), statistics);
      double mean_log = 0;
      for (const auto& r : base) mean_log += std::log(r.median) / static_cast<double>(base.size());
      cmp.reference = std::exp(mean_log);
    } else {
      // One baseline run (or values that have no log): the repetitions are all there is.
      std::vector<double> samples, medians;
      for (const auto* r : runs) {
        samples.insert(samples.end(), r->samples.begin(), r->samples.end());
        medians.push_back(*r->central);
      }
      cmp.reference = median(medians);
      cmp.decision = decide(samples, cmp.reference, cur.samples, *cur.central, first.direction, statistics);
      ++set.repetitions_only;
      if (baselines.size() > 1 || model) {
        const auto why = runs.size() >= 2 || *cur.central <= 0 ? "non-positive values"
                         : model                               ? "in 1 baseline run only, not in the noise model"
                                                               : "in 1 baseline run only";
        cmp.decision.note = std::string(why) + ": repetitions only" + (cmp.decision.note.empty() ? "" : "; " + cmp.decision.note);
      }
    }
    cmp.worse = first.direction == better::neutral  ? 0
                : first.direction == better::higher ? -cmp.decision.change
                                                    : cmp.decision.change;
    cmp.decision.against_band = cmp.decision.result;
    if (node_rules != nullptr) {
      const auto rule = node_rules->rule_for(key).judged.rule;
      decide_for_node(cmp, rule);
      if (set.held_to_node_tolerance) hold_to_node_rule(cmp, rule);
    }
    if (cmp.gates()) {
      (cmp.decision.result == verdict::slower ? set.slower : cmp.decision.result == verdict::faster ? set.faster : set.same)++;
      if (cmp.decision.result != cmp.decision.against_band) ++set.within_tolerance;
    }
    set.compared.push_back(std::move(cmp));
  }
  for (const auto& [key, c] : current.index.metrics) {
    if ((c.headline || shown == compared_metrics::all) && !measured.contains(key)) set.only_current.push_back(one_sided(key, base_indexes));
  }
  std::stable_sort(set.compared.begin(), set.compared.end(), [](const comparison& a, const comparison& b) {
    return std::tie(a.decision.result, b.worse) < std::tie(b.decision.result, a.worse);
  });
  return set;
}

}  // namespace hdb
