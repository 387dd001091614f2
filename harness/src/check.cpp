// hdbench check, the figures and the whole check of a run: which rows are figures, the band or
// peak each is graded against, and which reference set the node is held to. Health lines are
// check_health.cpp's, rendering check_render.cpp's.
#include "hdb/harness/check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hdb/harness/compare_model.hpp"
#include "hdb/harness/installed_declarations.hpp"
#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/noise_model.hpp"
#include "hdb/harness/tables.hpp"
#include "hdb/harness/tolerances.hpp"
#include "hdb/host/declaration.hpp"
#include "hdb/host/lists.hpp"  // all_digits

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

metric_key key_of(const result_row& row) {
  return {row.family, row.case_name, row.device, row.gpus, row.params, row.metric};
}

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

std::string signed_percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + format_fixed(fraction * 100, 1) + " %";
}

// One figure: a median row, how it prints and the tolerance that judges it.
struct figure {
  const result_row* row;
  std::string label;
  bool graded_by_peak = true;
  std::string peak_note;  // why % of peak does not grade it
  std::optional<double> tolerance;
  bool host_bound = false;
};

// A figure's line against the set: compare's decision (band and all), then the rule.
void grade_against_set(check_line& line, const comparison* compared, better direction, const figure& f) {
  if (compared == nullptr || !compared->decision.band_low || !compared->decision.band_high) {
    line.result = grade::warn;
    line.reason = compared == nullptr ? "no reference entry: the set's runs did not measure it"
                                      : "no band: fewer than 2 of the set's runs measured it";
    return;
  }
  const auto& decision = compared->decision;
  line.expected.band = expected_band{compared->reference, *decision.band_low, *decision.band_high,
                                     compared->baselines.size(), decision.detectable.value_or(0)};
  const double value = *line.value;
  const double worse = worse_by(value, compared->reference, direction);
  line.result = judge_figure(decision.against_band, worse, f.tolerance, f.host_bound);
  const auto centre = " the set's centre " + format_figure(compared->reference);
  const auto by = format_fixed(worse * 100, 1) + " %";
  const auto tolerance = f.tolerance ? format_figure(*f.tolerance * 100) + " %" : std::string();
  const std::string host = f.host_bound ? "host line: " : "";
  const std::string host_why =
      f.host_bound ? ": the host's CPU, memory and neighbours set this figure, not the GPU or its link" : "";
  const std::string worse_word = line.unit == "GB/s" || line.unit == "us" ? "slower" : "worse";
  switch (decision.against_band) {
    case verdict::same:
      line.reason = host + "within the band (" + signed_percent(decision.change) + " from" + centre + ")";
      return;
    case verdict::faster:
      line.reason = host + signed_percent(decision.change) + " from" + centre + ", better than the set's band" +
                    (f.host_bound ? ": a faster host than the set's" : ": a faster node than the set's runs, or a set to renew");
      return;
    case verdict::slower:
      break;
  }
  if (!f.tolerance) {
    line.reason = signed_percent(decision.change) + " from" + centre +
                  ", worse than a healthy node of this kind reads; no tolerance is declared for it, so the band alone decides";
  } else if (line.result == grade::fail) {
    line.reason = host + worse_word + " than" + centre + " by " + by + ": outside the band of healthy nodes of this kind and beyond the " +
                  tolerance + " that matters for a node" + host_why;
  } else {
    line.reason = host + worse_word + " than the set's machines by " + by + " (centre " + format_figure(compared->reference) +
                  "), outside their band but within the " + tolerance + " that matters for a node" + host_why;
  }
}

// A figure worse than the band whose own repetitions scattered far wider than the set's runs'
// did: the run met something unsteady (another tenant of the host, its memory or the link,
// throttling), which the user should hear before suspecting the GPU. Factor 3 on the standard
// deviation: a healthy run of the set's kind rarely comes near it (its repetitions' spread has
// df >= 9), and the H200 runs that met a busy host scattered 3-9x (pinned 1 GiB copies
// 51.8-55.3 GB/s where healthy runs held 55.2-55.5). Compared as the variance of the median, which
// is the sample variance's ratio only at the members' repetition count: not for a --quick run.
constexpr double unsteady_scatter_factor = 3.0;

void note_unsteady_repetitions(check_line& line, const comparison* compared, const metric_noise* noise,
                               const std::vector<double>& samples) {
  if (compared == nullptr || compared->decision.against_band != verdict::slower) return;
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

void grade_against_peak(check_line& line, const result_row& row, const json& meta, const figure& f) {
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
  line.expected.peak = peak;
  line.expected.percent_of_peak = percent;
  line.result = percent >= peak_pass_percent ? grade::pass : percent >= peak_warn_percent ? grade::warn : grade::fail;
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
  report.passed = report.warned = report.failed = report.not_graded = 0;
  for (const auto& line : report.lines) {
    switch (line.result) {
      case grade::pass: ++report.passed; break;
      case grade::warn: ++report.warned; break;
      case grade::fail: ++report.failed; break;
      case grade::not_graded: ++report.not_graded; break;
    }
  }
}

}  // namespace

std::string_view to_string(grade value) {
  switch (value) {
    case grade::fail: return "FAIL";
    case grade::warn: return "WARN";
    case grade::pass: return "PASS";
    case grade::not_graded: return "INFO";
  }
  return "?";
}

double worse_by(double value, double centre, better direction) {
  switch (direction) {
    case better::higher: return 1 - value / centre;
    case better::lower: return value / centre - 1;
    case better::neutral: return 0;
  }
  return 0;
}

grade judge_figure(verdict decision, double worse, std::optional<double> tolerance, bool host_bound) {
  switch (decision) {
    case verdict::same: return grade::pass;
    case verdict::faster: return host_bound ? grade::pass : grade::warn;
    case verdict::slower: return !tolerance || worse > *tolerance ? grade::fail : grade::warn;
  }
  return grade::fail;
}

std::vector<check_line> grade_figures(const std::vector<result_row>& rows, const json& meta, const reference_set* set,
                                      double alpha, const fs::path& schema_dir) {
  const node_tolerances tolerances(meta, schema_dir);
  std::set<std::string> families;
  for (const auto& row : rows) families.insert(row.family);
  // The figures, in file order: a row a check selects prints under the check's label (a
  // headline included); any other gating headline under a label made of its parameters.
  std::vector<figure> figures;
  std::set<std::string> checks_found;  // "family/label"
  std::set<metric_key> failed_cases;
  std::vector<check_line> lines;
  for (const auto& row : rows) {
    if (row.status == row_status::failed) {
      auto key = key_of(row);
      key.metric.clear();
      if (!failed_cases.insert(key).second) continue;
      check_line line;
      line.result = grade::fail;
      line.gpus = gpus_of(row, meta);
      line.family = row.family;
      line.label = row.case_name.empty() ? "family" : row.case_name + " " + generic_label(row);
      line.reason = (row.case_name.empty() ? "the family failed: " : "the case failed: ") + row.reason;
      lines.push_back(std::move(line));
      continue;
    }
    if (row.status != row_status::ok || row.stat != statistic::median || !row.value) continue;
    const auto rule = tolerances.rule_for(key_of(row));
    const check_decl* check = rule.check;
    const bool gates = row.headline && row.better_direction && *row.better_direction != better::neutral;
    if (check == nullptr && !gates) continue;
    figure f{&row, {}, true, {}, rule.tolerance, rule.host_bound};
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
    judge_options options;
    options.alpha = alpha;
    options.all = true;
    options.node_tolerance = [&](const metric_key& key) { return tolerances.tolerance_of(key); };
    compared = build_comparisons(members, index_run(std::move(current)), options, &set->model);
    for (const auto& c : compared.compared) decisions[c.key] = &c;
  }
  for (const auto& f : figures) {
    const auto& row = *f.row;
    check_line line;
    line.gpus = gpus_of(row, meta);
    line.family = row.family;
    line.label = f.label;
    line.value = row.value;
    line.key = key_of(row);
    line.better_direction = row.better_direction;
    line.tolerance = f.tolerance;
    line.host_bound = f.host_bound;
    line.unit = row.unit;
    const auto direction = row.better_direction.value_or(better::higher);
    if (set != nullptr) {
      const auto key = key_of(row);
      const auto decision = decisions.find(key);
      const comparison* c = decision == decisions.end() ? nullptr : decision->second;
      grade_against_set(line, c, direction, f);
      const auto own = samples.find(key);
      if (!meta.value("quick", false)) {
        note_unsteady_repetitions(line, c, set->model.find(key), own == samples.end() ? std::vector<double>{} : own->second);
      }
    } else {
      grade_against_peak(line, row, meta, f);
    }
    lines.push_back(std::move(line));
  }
  // A check nothing answered: skipped here (with its reason), or not measured at all.
  for (const auto& family : families) {
    const auto* declaration = tolerances.declared(family);
    if (declaration == nullptr) continue;
    for (const auto& check : declaration->checks) {
      if (checks_found.contains(family + "/" + check.label)) continue;
      const auto answer = std::find_if(rows.begin(), rows.end(), [&](const result_row& row) {
        return row.status != row_status::ok && selects(check, family, row, false);
      });
      if (answer != rows.end() && answer->status == row_status::failed) continue;  // its FAIL line is above
      check_line line;
      line.result = grade::warn;
      line.family = family;
      line.label = check.label;
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
  auto health = health_lines(meta, set ? &set->model.kind : nullptr, report.lines);
  report.lines.insert(report.lines.end(), std::make_move_iterator(health.begin()), std::make_move_iterator(health.end()));
  count(report);
  return report;
}

check_format parse_check_format(std::string_view text) {
  if (text == "text") return check_format::text;
  if (text == "junit") return check_format::junit;
  if (text == "json") return check_format::json;
  throw harness_error("unknown --format '" + std::string(text) + "' (text, junit or json)");
}

}  // namespace hdb
