// hdbench check, the figures and the whole check of a run: which rows are figures, the band or
// peak each is graded against, and which reference set the node is held to. Health lines are
// check_health.cpp's, rendering check_render.cpp's.
#include "hdb/harness/verdict/check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hdb/harness/verdict/comparison.hpp"
#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/verdict/judging.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/contract/declaration.hpp"
#include "hdb/util/lists.hpp"  // all_digits

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// "1073741824" -> "1 GiB" for a size parameter; other values as labelled.
std::string parameter_text(const std::string& name, const std::string& value) {
  if (name.ends_with("_bytes") && all_digits(value)) {
    return format_size(std::stoull(value));
  }
  return value;
}

// The parameters of a headline without a check of its own, but those in `except`:
// "(chunks=32 regime=balanced ...)".
std::string generic_label(const result_row& row, const label_list& except = {}) {
  std::string params;
  for (const auto& [name, value] : row.params) {
    const bool named = std::any_of(except.begin(), except.end(), [&](const auto& p) { return p.first == name; });
    if (named) continue;
    params += (params.empty() ? "" : " ") + name + "=" + parameter_text(name, value);
  }
  return params.empty() ? "" : "(" + params + ")";
}

// The check of `family` selects this row's case (and, with metric_too, its metric).
bool selects(const check_decl& check, const std::string& family, const result_row& row, bool metric_too) {
  return row.family == family && check_selects(check, key_of(row), metric_too);
}

std::vector<int> gpus_of(const result_row& row, const json& meta) {
  auto devices = row_devices(row, meta);
  if (devices.empty() && row.device) devices.push_back(*row.device);
  return devices;
}

// One figure: a median row, how it prints and the rule that judges it.
struct figure {
  const result_row* row;
  std::string label;
  const check_decl* check = nullptr;  // the run's own check that selects it
  bool graded_by_peak = true;
  std::string peak_note;  // why % of peak does not grade it
  judged_rule judged;
};

// A figure's line against the set: compare's band for it and the one decision the comparison made
// on it, under the same rule (the run's judging).
void grade_against_set(graded_line& line, const comparison* compared) {
  if (compared == nullptr || !compared->node_decision) {
    line.result = grade::warn;
    line.reason = compared == nullptr ? "no reference entry: the set's runs did not measure it"
                                      : "no band: fewer than 2 of the set's runs measured it";
    return;
  }
  line.basis = grade_basis::set;
  line.band = compared->node_band;
  line.result = compared->node_decision->result;
  line.reason = decision_reason(*compared->node_decision, *line.value, *line.band, line.rule, band_source::set, line.unit);
}

// A figure worse than the band whose own repetitions scattered far wider than the set's runs'
// did: the run met something unsteady (another tenant of the host, its memory or the link,
// throttling), which the user should hear before suspecting the GPU. Factor 3 on the standard
// deviation: a healthy run of the set's kind rarely comes near it (its repetitions' spread has
// df >= 9), and the H200 runs that met a busy host scattered 3-9x (pinned 1 GiB copies
// 51.8-55.3 GB/s where healthy runs held 55.2-55.5). Compared as the variance of the median, which
// is the sample variance's ratio only at the members' repetition count: not for a --quick run.
constexpr double unsteady_scatter_factor = 3.0;

void note_unsteady_repetitions(graded_line& line, const metric_noise* noise, const std::vector<double>& samples) {
  if (!line.band || !line.direction || position_in_band(*line.value, line.band->low, line.band->high, *line.direction) != verdict::slower) {
    return;
  }
  if (noise == nullptr || !noise->within_variance || !(*noise->within_variance > 0)) return;
  const double own = repetition_variance({run_metric{samples, *line.value}});
  if (!(own > 0)) return;
  const double factor = std::sqrt(own / *noise->within_variance);
  if (factor < unsteady_scatter_factor) return;
  line.reason += "; its repetitions scattered " + format_fixed(factor, 1) +
                 "x as widely as the set's runs' did: the node was not steady while it ran (another tenant of the "
                 "host, its memory or the link; throttling)" +
                 (line.result == grade::warn ? ": re-run it" : "");
}

void grade_against_peak(graded_line& line, const result_row& row, const json& meta, const figure& f) {
  if (!f.graded_by_peak) {
    line.reason = "not graded without a reference set: % of peak says nothing about the node here" +
                  (f.peak_note.empty() ? std::string() : " (" + f.peak_note + ")");
    return;
  }
  const auto peak = row_peak(row, meta);
  if (!peak) {
    line.reason = "not graded: no reference set and no peak for this metric";
    return;
  }
  const double percent = percent_of_peak(*line.value, *peak);
  line.basis = grade_basis::peak;
  line.peak = peak;
  line.percent_of_peak = percent;
  line.result = grade_by_peak(percent);
  line.reason = format_fixed(percent, 1) + " % of " + format_figure(peak->value) + " " + row.unit + " (" + peak->basis +
                "); PASS at >= " + format_figure(peak_pass_percent) + " %, FAIL below " + format_figure(peak_warn_percent) + " %";
}

// `node` is a node of kind `set`, short of some links: the same GPUs, no PCIe link above the
// kind's maximum and no more NVLinks, at least one less. A set of a slower kind is never chosen
// for a faster node: then the node's figures would pass against another machine's.
bool degraded_of(const node_kind& node, const node_kind& set) {
  if (node == set || node.gpu_name != set.gpu_name || node.gpus != set.gpus || node.pcie.size() != set.pcie.size() ||
      node.nvlinks.size() != set.nvlinks.size()) {
    return false;
  }
  const auto at_most = [](const std::optional<int>& have, const std::optional<int>& kind) {
    return !have || !kind ? have == kind : *have <= *kind;
  };
  for (std::size_t i = 0; i < node.pcie.size(); ++i) {
    if (!at_most(node.pcie[i].gen_max, set.pcie[i].gen_max) || !at_most(node.pcie[i].width_max, set.pcie[i].width_max)) {
      return false;
    }
    if (!at_most(node.nvlinks[i], set.nvlinks[i])) return false;
  }
  return true;
}

// The set of the kind this node is a degraded copy of, in `place` (a set, or a directory of sets).
std::optional<reference_set> degraded_set(const node_kind& kind, const fs::path& place) {
  for (const auto& dir : reference_sets_in(place)) {
    if (degraded_of(kind, read_noise_model(dir / "noise.json").kind)) return load_reference_set(dir);
  }
  return std::nullopt;
}

void count(check_report& report) {
  report.passed = report.warned = report.failed = report.not_graded = report.unconfirmed = 0;
  for (const auto& line : report.lines) {
    if (line.result == grade::fail && line.confirmed == confirmation::unconfirmed) ++report.unconfirmed;
    switch (line.result) {
      case grade::pass: ++report.passed; break;
      case grade::warn: ++report.warned; break;
      case grade::fail: ++report.failed; break;
      case grade::not_graded: ++report.not_graded; break;
    }
  }
}

}  // namespace

void weigh_attempts(std::vector<graded_line>& lines, const std::vector<result_row>& rows, const std::vector<result_row>& superseded) {
  std::map<metric_key, int> last_attempt;
  for (const auto& row : rows) {
    if (row.stat == statistic::median) last_attempt[key_of(row)] = row.attempt;
  }
  std::map<metric_key, std::vector<attempt_reading>> earlier;  // by figure
  for (const auto& row : superseded) {
    if (row.status == row_status::ok && row.stat == statistic::median && row.value) {
      earlier[key_of(row)].push_back({row.attempt, row.value, grade::not_graded});
    } else if (row.status == row_status::failed && !row.case_name.empty()) {
      // A case that failed on an earlier attempt failed every figure it would have given.
      for (const auto& line : lines) {
        if (!line.key) continue;
        auto case_key = *line.key;
        case_key.metric.clear();
        if (case_key == case_key_of(row)) earlier[*line.key].push_back({row.attempt, std::nullopt, grade::fail});
      }
    }
  }
  for (auto& line : lines) {
    const bool graded = (line.basis == grade_basis::set && line.band) || (line.basis == grade_basis::peak && line.peak);
    if (!graded || !line.key || !line.value) continue;
    const auto found = earlier.find(*line.key);
    if (found != earlier.end()) {
      line.attempts = found->second;
      std::sort(line.attempts.begin(), line.attempts.end(), [](const auto& a, const auto& b) { return a.attempt < b.attempt; });
      const auto last = last_attempt.find(*line.key);
      line.attempts.push_back({last == last_attempt.end() ? line.attempts.back().attempt + 1 : last->second, line.value, line.result});
    }
    weigh_tries(line);
  }
}

std::vector<graded_line> grade_figures(const std::vector<result_row>& rows, const json& meta, const reference_set* set,
                                      double alpha, const fs::path& schema_dir) {
  const judging_declarations installed(schema_dir);
  const run_judging judging(meta, installed);
  std::set<std::string> families;
  for (const auto& row : rows) families.insert(row.family);
  // The figures, in file order: a row a check selects prints under the check's label (a
  // headline included); any other gating headline under a label made of its parameters.
  std::vector<figure> figures;
  std::set<std::string> checks_found;  // "family/label"
  std::set<metric_key> failed_cases;
  std::vector<graded_line> lines;
  for (const auto& row : rows) {
    if (row.status == row_status::failed) {
      auto key = key_of(row);
      key.metric.clear();
      if (!failed_cases.insert(key).second) continue;
      graded_line line;
      line.result = grade::fail;
      line.gpus = gpus_of(row, meta);
      line.family = row.family;
      line.figure = row.case_name.empty() ? "family" : row.case_name + " " + generic_label(row);
      line.reason = (row.case_name.empty() ? "the family failed: " : "the case failed: ") + row.reason;
      lines.push_back(std::move(line));
      continue;
    }
    if (row.status != row_status::ok || row.stat != statistic::median || !row.value) continue;
    const auto rule = judging.rule_for(key_of(row));
    const check_decl* check = rule.check;
    const bool gates = row.headline && row.better_direction && *row.better_direction != better::neutral;
    if (check == nullptr && !gates) continue;
    figure f{&row, {}, check, true, {}, rule.judged};
    if (check != nullptr) {
      checks_found.insert(row.family + "/" + check->label);
      const auto rest = generic_label(row, check->parameters);
      // A check that leaves a parameter free selects one row per value: each says which.
      const bool free_parameters = std::count_if(rows.begin(), rows.end(), [&](const result_row& other) {
                                     return other.stat == statistic::median && other.status == row_status::ok &&
                                            other.device == row.device && other.gpus == row.gpus &&
                                            selects(*check, row.family, other, true);
                                   }) > 1;
      f.label = check->label + (free_parameters && !rest.empty() ? " " + rest : "");
      f.graded_by_peak = check->graded_by_peak;
      f.peak_note = check->description;
    } else {
      // "bandwidth (api=async ...)" rather than "bandwidth bandwidth (...)" where the two names agree
      f.label = (row.case_name == row.metric ? row.case_name : row.case_name + " " + row.metric) + " " + generic_label(row);
    }
    figures.push_back(std::move(f));
  }
  std::map<metric_key, std::vector<double>> samples;  // each figure's repetitions, for the scatter note
  // The run compared with the set's members, every metric, as `hdbench compare SET RUN --all`.
  std::vector<indexed_run> members;
  comparison_set compared;
  std::map<metric_key, const comparison*> decisions;
  if (set != nullptr) {
    for (const auto& row : rows) {
      if (row.stat == statistic::sample && row.status == row_status::ok && row.value) samples[key_of(row)].push_back(*row.value);
    }
    for (const auto& member : set->runs) members.push_back(index_run(member));
    loaded_run current;
    current.name = meta.value("run_id", std::string("current"));
    current.rows = rows;
    current.meta = meta;
    statistics_options statistics;
    statistics.alpha = alpha;
    compared = build_comparisons(members, index_run(std::move(current)), statistics, compared_metrics::all, &set->model, &judging);
    for (const auto& c : compared.compared) decisions[c.key] = &c;
  }
  for (const auto& f : figures) {
    const auto& row = *f.row;
    graded_line line;
    line.gpus = gpus_of(row, meta);
    line.family = row.family;
    line.figure = f.label;
    line.value = row.value;
    line.unit = row.unit;
    line.key = key_of(row);
    if (f.check != nullptr) line.check = f.check->label;
    line.direction = row.better_direction;
    line.rule = f.judged.rule;
    if (set != nullptr) {
      const auto decision = decisions.find(*line.key);
      grade_against_set(line, decision == decisions.end() ? nullptr : decision->second);
      const auto own = samples.find(*line.key);
      if (!meta.value("quick", false)) {
        note_unsteady_repetitions(line, set->model.find(*line.key), own == samples.end() ? std::vector<double>{} : own->second);
      }
    } else {
      grade_against_peak(line, row, meta, f);
    }
    if (!f.judged.installed && line.result != grade::pass) {
      line.reason += "; " + not_installed_note(row.family, "its run's meta.json declares");
    }
    lines.push_back(std::move(line));
  }
  // A check nothing answered: skipped here (with its reason), or not measured at all.
  for (const auto& family : families) {
    const auto* declaration = judging.declared(family);
    if (declaration == nullptr) continue;
    for (const auto& check : declaration->checks) {
      if (checks_found.contains(family + "/" + check.label)) continue;
      const auto answer = std::find_if(rows.begin(), rows.end(), [&](const result_row& row) {
        return row.status != row_status::ok && selects(check, family, row, false);
      });
      if (answer != rows.end() && answer->status == row_status::failed) continue;  // its FAIL line is above
      graded_line line;
      line.result = grade::warn;
      line.family = family;
      line.figure = check.label;
      line.check = check.label;
      line.reason = "not measured in this run";
      if (answer != rows.end()) {
        line.gpus = gpus_of(*answer, meta);
        line.reason = "skipped: " + answer->reason;
      }
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

check_report check_run(const fs::path& run_dir, const check_options& options) {
  if (!fs::is_directory(run_dir)) throw harness_error("not a run directory: " + run_dir.string());
  auto run = load_run(run_dir);
  if (!run.meta) {
    throw harness_error((run_dir / "meta.json").string() + ": missing or unreadable; check needs the node's fingerprint");
  }
  const json& meta = *run.meta;
  check_report report;
  report.run = meta.value("run_id", run_dir.filename().string());
  report.hostname = hostname_of(meta).value_or(run_dir.filename().string());
  report.measured_unix_seconds = measured_unix_seconds(meta);
  const auto kind = kind_of(meta);
  report.node_kind = describe(kind);

  std::optional<reference_set> set;
  const auto place = reference_place_for(options.reference);
  if (options.reference && is_reference_set(*options.reference)) {
    // Asked for by name: this set or nothing, and a set of another kind is an input error unless
    // the node is that kind with links down (which the health lines then name).
    auto named = load_reference_set(*options.reference);
    if (!(named.model.kind == kind) && !degraded_of(kind, named.model.kind)) {
      throw harness_error("reference set " + options.reference->string() + " is for " + describe(named.model.kind) +
                          "; this run is " + report.node_kind);
    }
    set = std::move(named);
  } else {
    set = find_reference_set(meta, options.reference);
    if (!set) set = degraded_set(kind, place.dir);
  }
  if (set) {
    report.set = set->dir.filename().string();
    report.set_dir = set->dir;
    report.set_runs = set->runs.size();
    if (!(set->model.kind == kind)) {
      report.notes.push_back("this node (" + report.node_kind + ") has fewer links than the kind of reference set " +
                             *report.set + " (" + describe(set->model.kind) +
                             "): graded against it; the missing links are FAIL lines below");
    }
  } else {
    report.notes.push_back("no reference set for " + report.node_kind +
                           " in " + display_path(place.dir) + ": graded against peaks only (PASS >= " +
                           format_figure(peak_pass_percent) + " %, WARN >= " + format_figure(peak_warn_percent) +
                           " %, FAIL below, of the traffic class's theoretical rate); figures without a peak are not graded");
  }
  report.lines = grade_figures(run.rows, meta, set ? &*set : nullptr, options.alpha, options.schema_dir);
  weigh_attempts(report.lines, run.rows, run.superseded);
  auto health = health_lines(meta, set ? &set->model.kind : nullptr, report.lines, &report.notes);
  report.lines.insert(report.lines.end(), std::make_move_iterator(health.begin()), std::make_move_iterator(health.end()));
  count(report);
  if (set && report.failed > 0) {
    std::vector<const json*> members;
    for (const auto& member : set->runs) members.push_back(member.meta ? &*member.meta : nullptr);
    report.what_changed = what_changed(members, &meta);
  }
  return report;
}

}  // namespace hdb
