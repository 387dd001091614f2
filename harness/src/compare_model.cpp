#include "hdb/harness/compare_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/mann_whitney.hpp"
#include "hdb/harness/meta.hpp"
#include "hdb/harness/noise_model.hpp"
#include "hdb/harness/student_t.hpp"
#include "hdb/harness/tables.hpp"
#include "hdb/host/lists.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::size_t min_samples_for_test = 3;
constexpr const char* neutral_note = "neutral: a description, never a verdict";

metric_key case_of(const result_row& row) { return {row.family, row.case_name, row.device, row.gpus, row.params, {}}; }

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

// Pooled within-run variance of ln(sample), each run's repetitions around their own centre. The
// scale is robust (1.4826 x the median absolute deviation, the normal SD for clean data): what sets
// the noise of a run's median is the bulk of its repetitions, and one stalled repetition must not
// widen it (a graph launch of 100 kernels: nine repetitions at 79.7-80.7 us and one at 136.5 made
// the classical SD 20 x the bulk's). Samples that tie (MAD 0) fall back to the classical variance.
struct log_variance {
  double sum_squares = 0;
  double df = 0;

  void add(const std::vector<double>& samples) {
    std::vector<double> logs;
    for (const double v : samples) {
      if (v > 0) logs.push_back(std::log(v));
    }
    if (logs.size() < 2) return;
    const double n_minus_1 = static_cast<double>(logs.size() - 1);
    const double centre = median(logs);
    std::vector<double> deviations;
    for (const double l : logs) deviations.push_back(std::abs(l - centre));
    const double robust_sd = 1.4826 * median(deviations);
    if (robust_sd > 0) {
      sum_squares += robust_sd * robust_sd * n_minus_1;
    } else {
      const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
      for (const double l : logs) sum_squares += (l - mean) * (l - mean);
    }
    df += n_minus_1;
  }
  [[nodiscard]] double value() const { return df > 0 ? sum_squares / df : 0; }
};

// Variance of the median of n repetitions with per-sample variance v: (pi/2) v / n for normal
// data (the median's asymptotic efficiency is 2/pi); conservative for heavier tails.
double median_variance(double sample_variance, double n) {
  return n > 0 ? std::numbers::pi / 2 * sample_variance / n : 0;
}

bool positive_medians(const std::vector<run_metric>& runs) {
  return std::all_of(runs.begin(), runs.end(), [](const run_metric& r) { return r.median > 0; });
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


}  // namespace

std::string_view to_string(verdict value) {
  switch (value) {
    case verdict::slower: return "SLOWER";
    case verdict::faster: return "FASTER";
    case verdict::same: return "SAME";
  }
  return "?";
}

std::string percent_text(double fraction) { return format_figure(fraction * 100) + "%"; }

std::string describe_parameters(const metric_key& key) {
  result_row row;
  row.device = key.device;
  row.gpus = key.gpus;
  row.params = key.params;
  return describe_case(row);
}

std::string describe(const metric_key& key) {
  const auto parameters = describe_parameters(key);
  return key.family + " " + key.case_name + (parameters.empty() ? "" : " [" + parameters + "]") + " " + key.metric;
}

bool comparison::gates() const {
  const auto rated = [](const metric_data* d) { return d->headline && d->direction != better::neutral; };
  return rated(baselines.front()) && rated(current);
}

side_index index_rows(const std::vector<result_row>& rows) {
  side_index index;
  for (const auto& row : rows) {
    if (row.device && !row.gpu_uuid.empty()) index.gpu_of_device[*row.device] = split_list(row.gpu_uuid).front();
    if (row.status != row_status::ok) {
      index.not_ok[case_of(row)] = std::string(to_string(row.status)) + ": " + row.reason;
      continue;
    }
    if (row.metric.empty() || !row.value || !row.stat) continue;
    auto key = case_of(row);
    key.metric = row.metric;
    auto& data = index.metrics[key];
    data.headline = data.headline || row.headline;
    if (row.better_direction) data.direction = *row.better_direction;
    if (row.stat == statistic::sample) {
      data.samples.push_back(*row.value);
    } else if (row.stat == statistic::median || row.stat == statistic::fit) {
      data.central = *row.value;
      data.unit = row.unit;
    }
  }
  return index;
}

indexed_run index_run(loaded_run run) {
  auto index = index_rows(run.rows);
  return {std::move(run), std::move(index)};
}

loaded_run load_run(const fs::path& path) {
  loaded_run run;
  run.csv_path = fs::is_directory(path) ? path / "results.csv" : path;
  if (!fs::exists(run.csv_path)) throw harness_error(run.csv_path.string() + ": no such file");
  try {
    run.rows = read_results_csv(read_text_file(run.csv_path)).rows;
  } catch (const harness_error& e) {
    throw harness_error(run.csv_path.string() + ": " + e.what());
  }
  const bool any_ok = std::any_of(run.rows.begin(), run.rows.end(),
                                  [](const result_row& r) { return r.status == row_status::ok && r.value; });
  if (!any_ok) throw harness_error(run.csv_path.string() + ": empty run (no ok results)");
  run.name = run.rows.front().run_id;
  run.meta = read_meta(run.csv_path.parent_path() / "meta.json");
  return run;
}

namespace {

// A node against its kind's reference set: outside the set's band is a difference; SLOWER is a
// difference beyond the change that matters for a node, the rule check FAILs by (docs/harness.md,
// "compare against a reference set").
void hold_to_node_tolerance(comparison& cmp, const judge_options& options) {
  if (cmp.decision.result != verdict::slower) return;
  const auto tolerance = options.node_tolerance(cmp.key);
  if (!tolerance || cmp.worse > *tolerance) return;
  cmp.decision.result = verdict::same;
  cmp.decision.note = "outside the set's band (" + std::string(cmp.decision.change >= 0 ? "+" : "") +
                      percent_text(cmp.decision.change) + ") but within the " +
                      percent_text(*tolerance) + " that matters for a node";
}

}  // namespace

comparison_set build_comparisons(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                 const judge_options& options, const noise_model* model) {
  comparison_set set;
  set.known_threshold = options.threshold.value_or(known_noise_threshold);
  set.unknown_threshold = options.threshold.value_or(unknown_noise_threshold);
  // A reference set's model was learned from the very runs passed as baselines: pooling it with
  // their own spread would count the same runs twice.
  const bool model_is_baselines =
      model && std::all_of(baselines.begin(), baselines.end(), [&](const indexed_run& base) {
        return std::find(model->members.begin(), model->members.end(), base.run.name) != model->members.end();
      });
  set.model_is_baselines = model_is_baselines;
  // A node against its kind: the baselines are the whole set, not one of its members.
  set.held_to_node_tolerance = model_is_baselines && baselines.size() == model->members.size() && !options.threshold &&
                               options.node_tolerance;
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
      if ((data.headline || options.all) && data.central) measured[key].push_back(&data);
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
      set.only_baseline.push_back(one_sided(key, {&current.index}));
      continue;
    }
    const comparison probe{key, runs, &it->second, 0, {}, 0};
    if (probe.gates() && spread_of(key, runs) && *it->second.central > 0) ++set.tests;
    pairs.emplace_back(key, runs);
  }
  for (const auto& [key, runs] : pairs) {
    const auto& cur = current.index.metrics.at(key);
    const auto& first = *runs.front();
    comparison cmp{key, runs, &cur, 0, {}, 0};
    const auto spread = spread_of(key, runs);
    if (spread && *cur.central > 0) {
      const auto base = to_run_metrics(runs);
      cmp.decision = decide_against_runs(base, to_run_metric(cur), *spread, first.direction,
                                         std::max<std::size_t>(set.tests, 1), options);
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
      cmp.decision = decide(samples, cmp.reference, cur.samples, *cur.central, first.direction, options);
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
    if (set.held_to_node_tolerance) hold_to_node_tolerance(cmp, options);
    if (cmp.gates()) {
      (cmp.decision.result == verdict::slower ? set.slower : cmp.decision.result == verdict::faster ? set.faster : set.same)++;
      if (cmp.decision.result != cmp.decision.against_band) ++set.within_tolerance;
    }
    set.compared.push_back(std::move(cmp));
  }
  for (const auto& [key, c] : current.index.metrics) {
    if ((c.headline || options.all) && !measured.contains(key)) set.only_current.push_back(one_sided(key, base_indexes));
  }
  std::stable_sort(set.compared.begin(), set.compared.end(), [](const comparison& a, const comparison& b) {
    return std::tie(a.decision.result, b.worse) < std::tie(b.decision.result, a.worse);
  });
  return set;
}

metric_decision decide(const std::vector<double>& baseline_samples, double baseline_median,
                       const std::vector<double>& current_samples, double current_median, better direction,
                       const judge_options& options) {
  metric_decision d;
  if (baseline_median != 0) d.change = (current_median - baseline_median) / baseline_median;
  else if (current_median != 0) d.change = current_median > 0 ? INFINITY : -INFINITY;
  const double worse = direction == better::higher ? -d.change : d.change;
  const double threshold = options.threshold.value_or(unknown_noise_threshold);
  const auto n1 = baseline_samples.size(), n2 = current_samples.size();
  bool significant = true;  // threshold alone unless the test can be used
  if (n1 < min_samples_for_test || n2 < min_samples_for_test) {
    d.note = "n=" + std::to_string(n1) + "/" + std::to_string(n2) + ": threshold only";
  } else if (mann_whitney_min_p(n1, n2) >= options.alpha) {
    d.note = "n=" + std::to_string(n1) + "/" + std::to_string(n2) + " cannot reach p<" + format_figure(options.alpha) +
             ": threshold only";
  } else {
    d.p_value = mann_whitney_u(baseline_samples, current_samples).p_value;
    significant = *d.p_value < options.alpha;
  }
  // What a t test on the same repetitions could tell apart (a guide to the noise, not the rule);
  // nothing below the threshold is ever flagged, so that is the floor.
  log_variance within;
  within.add(baseline_samples);
  within.add(current_samples);
  d.detectable = threshold;
  if (within.df > 0) {
    const double se = std::sqrt(median_variance(within.value(), static_cast<double>(n1)) +
                                median_variance(within.value(), static_cast<double>(n2)));
    d.detectable = std::max(threshold, std::expm1(student_t_quantile(1 - options.alpha / 2, within.df) * se));
  }
  if (direction == better::neutral) {
    d.note = neutral_note;
    return d;
  }
  if (significant && worse > threshold) d.result = verdict::slower;
  else if (significant && worse < -threshold) d.result = verdict::faster;
  return d;
}

double repetition_variance(const std::vector<run_metric>& runs) {
  log_variance within;
  double samples = 0;
  for (const auto& r : runs) {
    within.add(r.samples);
    samples += static_cast<double>(r.samples.size()) / static_cast<double>(runs.size());
  }
  return within.df > 0 ? median_variance(within.value(), samples) : 0;
}

run_spread combine_spreads(const run_spread& a, const run_spread& b) {
  run_spread sum;
  sum.df = a.df + b.df;
  if (sum.df > 0) sum.variance = (a.variance * a.df + b.variance * b.df) / sum.df;
  sum.inflation_df = a.inflation_df + b.inflation_df;
  if (sum.inflation_df > 0) sum.inflation = (a.inflation * a.inflation_df + b.inflation * b.inflation_df) / sum.inflation_df;
  return sum;
}

flag_limits flag_limits_for(double half_width, double threshold) {
  // SLOWER for better=higher (FASTER for lower) needs d < -h and the interval's low end
  // d - h <= ln(1 - threshold); the other side likewise. A threshold of 100 % or more can never
  // be reached downwards.
  const double down = threshold < 1 ? std::log1p(-threshold) + half_width : -INFINITY;
  return {std::min(-half_width, down), std::max(half_width, std::log1p(threshold) - half_width)};
}

run_spread pool_run_spread(const std::vector<std::vector<run_metric>>& metrics) {
  run_spread spread;
  double sum_squares = 0, sum_ratios = 0;
  for (const auto& runs : metrics) {
    if (runs.size() < 2 || !positive_medians(runs)) continue;
    std::vector<double> logs;
    for (const auto& r : runs) logs.push_back(std::log(r.median));
    const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
    double squares = 0;
    for (const double l : logs) squares += (l - mean) * (l - mean);
    sum_squares += squares;
    spread.df += static_cast<double>(runs.size() - 1);
    if (const double floor = repetition_variance(runs); floor > 0) {
      sum_ratios += squares / floor;
      spread.inflation_df += static_cast<double>(runs.size() - 1);
    }
  }
  if (spread.df > 0) spread.variance = sum_squares / spread.df;
  if (spread.inflation_df > 0) spread.inflation = sum_ratios / spread.inflation_df;
  return spread;
}

metric_decision decide_against_runs(const std::vector<run_metric>& baselines, const run_metric& current,
                                    const run_spread& spread, better direction, std::size_t tests,
                                    const judge_options& options) {
  if (baselines.empty() || !(spread.df > 0) || tests == 0 || !positive_medians(baselines) || !(current.median > 0)) {
    throw std::invalid_argument("decide_against_runs needs a baseline run, a spread with df > 0 and positive medians");
  }
  const double threshold = options.threshold.value_or(known_noise_threshold);
  const auto runs = static_cast<double>(baselines.size());
  double mean_log = 0;
  for (const auto& r : baselines) mean_log += std::log(r.median) / runs;
  const double d_log = std::log(current.median) - mean_log;

  // Variance components of ln(run median): between runs (sigma_b^2) plus the run's own
  // repetitions (median_variance). The pooled spread estimates their sum for a baseline run;
  // it is never taken below what this metric's repetitions alone imply.
  log_variance cur_within;
  cur_within.add(current.samples);
  const double base_median_var = repetition_variance(baselines);
  // With repetitions, this metric's run-to-run variance is its own repetition variance times the
  // kind's inflation (a steady one-way copy and a noisy bidirectional one keep their own scales
  // and share the degrees of freedom); without, the kind's variance itself.
  const bool scaled = spread.inflation_df > 0 && base_median_var > 0;
  const double run_var = scaled ? std::max(spread.inflation, 1.0) * base_median_var
                                : std::max(spread.variance, base_median_var);
  const double df = scaled ? spread.inflation_df : spread.df;
  const double between = run_var - base_median_var;
  // Without repetitions on either side, the current run's median is as noisy as a baseline's.
  const double cur_median_var = base_median_var > 0 && cur_within.df > 0
                                    ? median_variance(cur_within.value(), static_cast<double>(current.samples.size()))
                                    : base_median_var;
  const double se = std::sqrt(run_var / runs + between + cur_median_var);

  const double level = options.alpha / static_cast<double>(tests);
  const double half_width = student_t_quantile(1 - level / 2, df) * se;
  metric_decision d;
  d.change = std::expm1(d_log);
  d.p_value = se > 0 ? 2 * student_t_cdf(-std::abs(d_log) / se, df) : (d_log == 0 ? 1.0 : 0.0);
  const auto limits = flag_limits_for(half_width, threshold);
  if (direction == better::neutral) {
    d.detectable = std::expm1(half_width);
    d.band_low = std::exp(mean_log - half_width);
    d.band_high = std::exp(mean_log + half_width);
    d.note = neutral_note;
    return d;
  }
  d.band_low = std::exp(mean_log + limits.low);
  d.band_high = std::exp(mean_log + limits.high);
  d.detectable = direction == better::higher ? -std::expm1(limits.low) : std::expm1(limits.high);
  if (std::abs(d_log) <= half_width) return d;  // within run-to-run noise
  // The interval d_log +- half_width, as relative changes in the bad and the good direction.
  const double worst = direction == better::higher ? -std::expm1(d_log - half_width) : std::expm1(d_log + half_width);
  const double best = direction == better::higher ? std::expm1(d_log + half_width) : -std::expm1(d_log - half_width);
  const bool worse = direction == better::higher ? d_log < 0 : d_log > 0;
  if (worse && worst >= threshold) d.result = verdict::slower;
  else if (!worse && best >= threshold) d.result = verdict::faster;
  else d.note = "real but below the " + percent_text(threshold) + " threshold";
  if (d.result != verdict::same && std::abs(d.change) < threshold) {
    d.note = "below " + percent_text(threshold) + " but within noise of it";
  }
  return d;
}

}  // namespace hdb
