// `hdbench reference validate`: does the set keep quiet on its own healthy runs, and does it see
// a planted change? Leave-one-out inside the set, extra runs against the whole set, planted copies.
#include <algorithm>
#include <cmath>
#include <map>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/verdict/comparison.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/common/tables.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

// The same run with every gating headline made worse by `fraction` in its own direction, samples
// and median alike (so the repetitions keep their spread and only the level moves).
loaded_run planted_copy(const loaded_run& run, double fraction) {
  loaded_run copy = run;
  copy.name += "+planted";
  for (auto& row : copy.rows) {
    if (!row.headline || !row.value || row.status != row_status::ok || !row.better_direction) continue;
    if (*row.better_direction == better::higher) *row.value *= 1 - fraction;
    else if (*row.better_direction == better::lower) *row.value *= 1 + fraction;
  }
  return copy;
}

struct tally {
  std::map<metric_key, headline_validation> by_key;
  std::vector<false_verdict> false_by_run;

  headline_validation& at(const comparison& c) {
    auto& entry = by_key[c.key];
    entry.key = c.key;
    entry.unit = c.current->unit;
    entry.direction = c.current->direction;
    return entry;
  }
  void healthy(const std::string& run, const comparison_set& set) {
    for (const auto& c : set.compared) {
      if (!c.gates()) continue;
      auto& entry = at(c);
      // compare's verdict against the set, the one a user acts on: a healthy run outside the band
      // but within the figure's tolerance is SAME there (check's WARN), counted apart as information.
      const auto v = c.decision.result;
      (v == verdict::slower ? entry.false_slower : v == verdict::faster ? entry.false_faster : entry.same)++;
      if (v == verdict::same && c.decision.against_band != verdict::same) ++entry.outside_band;
      if (v != verdict::same) false_by_run.push_back({run, c.key, v, c.decision.change});
    }
  }
  void planted(const comparison_set& set) {
    for (const auto& c : set.compared) {
      if (!c.gates()) continue;
      auto& entry = at(c);
      (c.decision.against_band == verdict::slower ? entry.caught : entry.missed)++;
    }
  }
};

std::vector<indexed_run> all_but(const std::vector<indexed_run>& runs, std::size_t left_out) {
  std::vector<indexed_run> others;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i != left_out) others.push_back(runs[i]);
  }
  return others;
}

// `hdbench check` of `run` against `set`: its figures, then its health lines.
std::vector<graded_line> checked(const loaded_run& run, const reference_set& set, const validate_options& options) {
  auto lines = grade_figures(run.rows, *run.meta, &set, options.statistics.alpha, options.schema_dir);
  weigh_attempts(lines, run.rows, run.superseded);
  auto health = health_lines(*run.meta, &set.model.kind, lines);
  lines.insert(lines.end(), std::make_move_iterator(health.begin()), std::make_move_iterator(health.end()));
  return lines;
}

std::string line_text(const graded_line& line) {
  return std::string(to_string(line.result)) + " " + gpu_text(line.gpus) + " " + line.family + " " + line.figure + ": " + line.reason;
}

check_validation summarise(const std::string& run, const std::vector<graded_line>& lines) {
  check_validation v{run, 0, 0, {}};
  for (const auto& line : lines) {
    if (line.result == grade::fail) ++v.failed;
    if (line.result == grade::warn) ++v.warned;
    if (line.result == grade::fail || line.result == grade::warn) v.lines.push_back(line_text(line));
  }
  return v;
}

reference_set without(const reference_set& set, const std::vector<indexed_run>& others, const noise_model& model) {
  reference_set rest{set.dir, {}, model};
  for (const auto& other : others) rest.runs.push_back(other.run);
  return rest;
}

// Check's rule against faults planted in a healthy run (validate_reference_set says which).
std::vector<planted_check> check_planted_faults(const loaded_run& run, const reference_set& set,
                                                const validate_options& options) {
  std::vector<planted_check> out;
  const auto healthy = checked(run, set, options);
  // Every figure with a tolerance, worse by its planted amount, samples and median alike.
  std::map<metric_key, std::pair<double, const graded_line*>> planted;  // key -> relative change (signed)
  for (const auto& line : healthy) {
    if (!line.key || !line.rule.tolerance || !line.value || !line.band || !line.direction) continue;
    const double worse = line.rule.host_bound ? 0.6 * *line.rule.tolerance : *line.rule.tolerance + 0.02;
    if (!(worse < 1)) continue;
    planted[*line.key] = {worse, &line};
  }
  loaded_run copy = run;
  copy.name += "+faults";
  for (auto& row : copy.rows) {
    if (!row.value || row.status != row_status::ok || !row.better_direction) continue;
    const auto it = planted.find({row.family, row.case_name, row.device, row.gpus, row.params, row.metric});
    if (it == planted.end()) continue;
    *row.value *= *row.better_direction == better::lower ? 1 + it->second.first : 1 - it->second.first;
  }
  const auto faulty = checked(copy, set, options);
  for (const auto& line : faulty) {
    if (!line.key || !planted.contains(*line.key)) continue;
    const auto& [worse, before] = planted.at(*line.key);
    planted_check p;
    p.fault = (line.rule.host_bound ? "host line " : "") + percent_text(worse, percent_style::change) + " worse (tolerance " +
              percent_text(*line.rule.tolerance) + ")";
    p.figure = line.family + " " + line.figure + " GPU " + (line.gpus.empty() ? "-" : std::to_string(line.gpus.front()));
    // What the one decision says of the planted value against the healthy run's band: a fault
    // beyond the tolerance FAILs where it leaves that band.
    const bool fails = decide_figure(*line.value, *before->band, *before->direction, before->rule).result == grade::fail;
    p.expected = fails ? "FAIL" : "not FAIL";
    p.got = std::string(to_string(line.result));
    p.as_expected = (line.result == grade::fail) == (p.expected == "FAIL");
    out.push_back(std::move(p));
  }
  // A link one generation below the kind's maximum: the health line FAILs whatever the figures say.
  if (run.meta && !set.model.kind.pcie.empty() && set.model.kind.pcie.front().gen_max) {
    auto meta = *run.meta;
    auto& pcie = meta["node"]["gpus"][0]["pcie"];
    pcie["gen_max"] = pcie["gen_current"] = *set.model.kind.pcie.front().gen_max - 1;
    if (!pcie.contains("width_current") && pcie.contains("width_max")) pcie["width_current"] = pcie["width_max"];
    const auto lines = health_lines(meta, &set.model.kind, {});
    const auto link = std::find_if(lines.begin(), lines.end(), [](const graded_line& l) { return l.figure == "PCIe link"; });
    planted_check p{"PCIe link at Gen" + std::to_string(*set.model.kind.pcie.front().gen_max - 1), "health PCIe link GPU 0",
                    "FAIL", link == lines.end() ? "none" : std::string(to_string(link->result)), false};
    p.as_expected = p.got == "FAIL";
    out.push_back(std::move(p));
  }
  return out;
}

// The name a user finds a run by: its run id, and the directory it was read from where that is
// named otherwise (holdouts are kept as <run id>-<what was done>).
std::string run_label(const loaded_run& run) {
  const auto dir = run.csv_path.parent_path();
  return dir.filename() == run.name ? run.name : run.name + " (" + dir.string() + ")";
}

std::string percent_or_dash(const std::optional<double>& fraction) { return fraction ? percent_text(*fraction) : "-"; }

}  // namespace

validation validate_reference_set(const fs::path& set_dir, const std::vector<fs::path>& extra_runs,
                                  const validate_options& options) {
  const auto set = load_reference_set(set_dir);
  if (set.runs.size() < 2) throw harness_error(set_dir.string() + ": leave-one-out needs at least 2 member runs");
  validation result;
  result.set_name = set_dir.filename().empty() ? set_dir.parent_path().filename().string() : set_dir.filename().string();
  result.members = set.runs.size();
  result.extra_runs = extra_runs.size();
  result.plant = options.plant;

  std::vector<indexed_run> members;
  for (const auto& run : set.runs) members.push_back(index_run(run));
  tally counts;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto others = all_but(members, i);
    const auto model = learn_noise_model(others, set.model.kind);
    counts.healthy(run_label(members[i].run), compare_held_to_node_rule(others, members[i], options.statistics,
                                                                  compared_metrics::headlines, options.schema_dir, &model));
    if (options.plant && extra_runs.empty()) {
      counts.planted(build_comparisons(others, index_run(planted_copy(members[i].run, *options.plant)), options.statistics,
                                       compared_metrics::headlines, &model));
    }
    if (members[i].run.meta) {
      const auto rest = without(set, others, model);
      result.checks.push_back(summarise(run_label(members[i].run), checked(members[i].run, rest, options)));
      if (options.plant && extra_runs.empty() && i == 0) result.planted_checks = check_planted_faults(members[i].run, rest, options);
    }
  }
  for (const auto& path : extra_runs) {
    auto run = load_run(path);
    if (!run.meta || kind_of(*run.meta) != set.model.kind) {
      throw harness_error(path.string() + ": not a run of the set's kind (" + describe(set.model.kind) + ")");
    }
    counts.healthy(run_label(run), compare_held_to_node_rule(members, index_run(run), options.statistics, compared_metrics::headlines,
                                                       options.schema_dir, &set.model));
    if (options.plant) {
      counts.planted(build_comparisons(members, index_run(planted_copy(run, *options.plant)), options.statistics,
                                       compared_metrics::headlines, &set.model));
    }
    result.checks.push_back(summarise(run_label(run), checked(run, set, options)));
    if (options.plant && result.planted_checks.empty()) result.planted_checks = check_planted_faults(run, set, options);
  }
  for (const auto& c : result.checks) result.false_verdicts += c.failed;
  for (const auto& p : result.planted_checks) result.missed += p.as_expected ? 0 : 1;

  // The figures against the whole set, for every gating headline the model knows.
  for (const auto& [key, noise] : set.model.metrics) {
    if (noise.headline && noise.direction != better::neutral) ++result.tests;
  }
  for (const auto& [key, noise] : set.model.metrics) {
    if (!noise.headline || noise.direction == better::neutral) continue;
    auto& entry = counts.by_key[key];
    entry.key = key;
    entry.unit = noise.unit;
    entry.direction = noise.direction;
  }
  for (auto& [key, entry] : counts.by_key) {
    if (const auto* noise = set.model.find(key)) {
      entry.runs = noise->runs;
      entry.spread = std::sqrt(noise->between_variance);
      if (const auto* spread = set.model.spread_for(key, noise->headline); spread && spread->inflation_df > 0) {
        entry.inflation = spread->inflation;
      }
      if (const auto band = band_for(set, key, entry.direction, std::max<std::size_t>(result.tests, 1), options.statistics.alpha,
                                     options.statistics.threshold.value_or(known_noise_threshold))) {
        entry.detectable = band->detectable;
      }
    } else {
      result.notes.push_back("note: " + describe(key) + " gates but is in fewer than 2 members: no spread, repetitions only");
    }
    result.false_verdicts += entry.false_slower + entry.false_faster;
    result.missed += entry.missed;
    result.headlines.push_back(entry);
  }
  result.false_by_run = std::move(counts.false_by_run);
  return result;
}

std::string render_validation(const validation& result) {
  std::string out = "hdbench reference validate: " + result.set_name + ", " + std::to_string(result.members) +
                    " member runs (leave-one-out: each against the other " + std::to_string(result.members - 1) +
                    " with the model re-learned without it)";
  if (result.extra_runs > 0) out += ", " + std::to_string(result.extra_runs) + " extra run(s) against the whole set";
  if (result.plant) {
    out += "; planted " + format_figure(*result.plant * 100) + "% worse in every gating headline of " +
           (result.extra_runs > 0 ? "each extra run" : "each left-out member");
  }
  out += "\n";
  out += "spread = between-run SD of ln(median) in the set; lambda = between / within (pooled per kind of metric); "
         "detectable = smallest change in the bad direction that compare against the whole set flags (" +
         std::to_string(result.tests) + " gating headlines, Bonferroni)\n";
  for (const auto& note : result.notes) out += note + "\n";
  table_rows rows;
  for (const auto& h : result.headlines) {
    std::vector<std::string> row = {h.key.family + " " + h.key.case_name, describe_parameters(h.key), h.key.metric,
                                    std::to_string(h.runs), percent_or_dash(h.runs >= 2 ? std::optional(h.spread) : std::nullopt),
                                    h.inflation ? format_figure(*h.inflation) : "-", percent_or_dash(h.detectable),
                                    std::to_string(h.same), std::to_string(h.outside_band), std::to_string(h.false_slower),
                                    std::to_string(h.false_faster)};
    if (result.plant) {
      row.push_back(std::to_string(h.caught));
      row.push_back(std::to_string(h.missed));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"headline", "parameters", "metric", "runs", "spread", "lambda", "detectable",
                                     "SAME", "of them outside the band", "false SLOWER", "false FASTER"};
  if (result.plant) {
    header.push_back("planted caught");
    header.push_back("planted missed");
  }
  out += "\n" + text_table(header, rows) + "\n";
  if (!result.false_by_run.empty()) out += "compare's false verdicts, by run:\n";
  for (const auto& f : result.false_by_run) {
    out += "  " + f.run + ": false " + std::string(to_string(f.result)) + " " + describe(f.key) + " (change " +
           percent_text(f.change, percent_style::signed_change) + ")\n";
  }
  int check_fails = 0, check_warns = 0;
  for (const auto& c : result.checks) {
    check_fails += c.failed;
    check_warns += c.warned;
  }
  out += "\ncheck, as `hdbench check` grades each run against the others: " + std::to_string(result.checks.size()) +
         " runs, " + std::to_string(check_fails) + " FAIL and " + std::to_string(check_warns) + " WARN lines\n";
  for (const auto& c : result.checks) {
    for (const auto& line : c.lines) out += "  " + c.run + ": " + line + "\n";
  }
  if (!result.planted_checks.empty()) {
    table_rows planted;
    for (const auto& p : result.planted_checks) {
      planted.push_back({p.figure, p.fault, p.expected, p.got, p.as_expected ? "yes" : "NO"});
    }
    out += "\ncheck's rule against planted faults:\n" + text_table({"figure", "planted", "rule says", "check", "as expected"}, planted) + "\n";
  }
  const bool ok = result.false_verdicts == 0 && result.missed == 0;
  out += "hdbench reference validate: " + std::to_string(result.false_verdicts) + " false verdicts" +
         (result.plant ? ", " + std::to_string(result.missed) + " planted changes missed" : std::string()) + " over " +
         std::to_string(result.headlines.size()) + " headlines; " + (ok ? "PASS" : "FAIL") + "\n";
  return out;
}

}  // namespace hdb
