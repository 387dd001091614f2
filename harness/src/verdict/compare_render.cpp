// hdbench compare, the rendering: a comparison_set (comparison.hpp) as an aligned text
// table, GitHub markdown, a junit testsuite or JSON. Nothing here decides a verdict.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"

namespace hdb {
namespace {

table_rows table_of(const comparison_set& set, const compare_options& options) {
  table_rows rows;
  for (const auto& c : set.compared) {
    if (!options.all && !c.gates()) continue;
    std::vector<std::string> row = {std::string(to_string(c.decision.result)), c.key.family, c.key.case_name,
                                    describe_parameters(c.key), c.key.metric,
                                    format_figure(c.reference) + " " + c.current->unit,
                                    format_figure(*c.current->central) + " " + c.current->unit,
                                    percent_text(c.decision.change, percent_style::signed_change),
                                    c.decision.p_value ? format_figure(*c.decision.p_value) : "-",
                                    c.decision.detectable ? percent_text(*c.decision.detectable) : "-",
                                    c.decision.note};
    if (options.all) row.insert(row.begin() + 5, c.gates() ? "yes" : "no");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> table_header(const compare_options& options, std::size_t baseline_runs) {
  std::vector<std::string> header = {"verdict", "family", "case", "parameters", "metric",
                                     baseline_runs > 1 ? "baseline (geo. mean)" : "baseline",
                                     "current", "change", "p", "detectable", "note"};
  if (options.all) header.insert(header.begin() + 5, "headline");
  return header;
}

std::vector<std::string> rule_lines(std::size_t baseline_runs, const comparison_set& set, const compare_options& options) {
  const auto known = percent_text(set.known_threshold), unknown = percent_text(set.unknown_threshold);
  const auto repetition_rule = "Mann-Whitney U p < " + format_figure(options.statistics.alpha) + " on the repetitions and median change beyond " +
                               unknown + " (threshold alone with fewer than 3 repetitions)";
  const bool model = !set.noise_model_source.empty();
  if (baseline_runs < 2 && !model) {
    const std::string no_model = options.noise_model == "none" ? "no noise model (--noise-model none)" : "no noise model of this kind";
    return {"note: one baseline run and " + no_model + ", so the run-to-run noise is unknown; the repetitions of one "
            "run understate it (pass 3 or more baseline runs, or a reference set)",
            "rule: SLOWER/FASTER = " + repetition_rule + "; detectable = the larger of the threshold and what the repetitions tell apart"};
  }
  const auto tests = std::max<std::size_t>(set.tests, 1);
  const auto runs = std::to_string(baseline_runs);
  const std::string spread = baseline_runs < 2           ? "the noise model's run-to-run spread (one baseline run)"
                             : set.model_is_baselines    ? "the run-to-run spread of the " + runs + " runs of the reference set"
                             : model                     ? "the run-to-run spread of " + runs + " baseline runs pooled with the noise model's"
                                                         : "the run-to-run spread of " + runs + " baseline runs";
  std::vector<std::string> lines = {
      "rule: SLOWER/FASTER = the current median lies outside " + spread + " (t test on log medians, p < " +
      format_figure(options.statistics.alpha) + "/" + std::to_string(tests) + " = " + format_figure(options.statistics.alpha / static_cast<double>(tests)) +
      ", Bonferroni over " + std::to_string(tests) + " headline metrics) and the bad end of the interval reaches the " + known +
      " threshold; detectable = smallest change in the bad direction this rule flags"};
  if (set.held_to_node_tolerance) {
    lines.push_back("rule: against its kind's reference set a node is SLOWER only where the change is also beyond the "
                    "figure's tolerance, the change that matters for a node (check's FAIL); outside the band but within "
                    "it is SAME with a note (check's WARN); detectable is the band's");
  }
  if (set.repetitions_only > 0) {
    lines.push_back("rule: " + std::to_string(set.repetitions_only) + " metric(s) without a run-to-run spread (note column): " +
                    repetition_rule);
  }
  return lines;
}

std::string summary_text(const comparison_set& set) {
  const auto within = set.within_tolerance > 0 ? "; " + std::to_string(set.within_tolerance) +
                                                      " of them outside the set's band but within the tolerance that matters for a node"
                                                : std::string();
  const auto missing = set.missing.empty() ? std::string()
                                           : "; " + std::to_string(set.missing.size()) + " MISSING (failed in the current run)";
  return std::to_string(set.slower) + " slower, " + std::to_string(set.faster) + " faster, " + std::to_string(set.same) +
         " same (headline metrics" + within + ")" + missing + "; " +
         (set.slower > 0 ? "REGRESSION" : !set.missing.empty() ? "HEADLINES MISSING" : "no regression");
}

constexpr std::string_view missing_title = "MISSING: gated headlines of the baseline that failed in the current run";
constexpr std::string_view compared_runs = "baselines";  // what "what changed" holds the current run against

std::vector<std::string> run_names(const std::vector<indexed_run>& runs) {
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(r.run.name);
  return names;
}

std::string render_text(const std::vector<indexed_run>& base, const indexed_run& cur, const comparison_set& set,
                        const compare_options& options) {
  std::string out = "hdbench compare: baseline " + join_list(run_names(base), ", ") + "; current " + cur.run.name + "\n";
  for (const auto& line : rule_lines(base.size(), set, options)) out += line + "\n";
  for (const auto& note : set.notes) out += note + "\n";
  out += "\n" + text_table(table_header(options, base.size()), table_of(set, options));
  if (!set.what_changed.empty()) out += what_changed_line(set.what_changed, compared_runs) + "\n";
  if (!set.missing.empty()) {
    out += "\n" + std::string(missing_title) + " (" + std::to_string(set.missing.size()) + "):\n";
    for (const auto& item : set.missing) out += "MISSING  " + item.text + "\n";
  }
  for (const auto& [title, list] : {std::pair{"only in baseline", &set.only_baseline}, std::pair{"only in current", &set.only_current}}) {
    if (list->empty()) continue;
    out += "\n" + std::string(title) + " (" + std::to_string(list->size()) + "):\n";
    for (const auto& item : *list) out += "  " + item + "\n";
  }
  return out + "\n" + summary_text(set) + "\n";
}

std::string render_markdown(const std::vector<indexed_run>& base, const indexed_run& cur, const comparison_set& set,
                            const compare_options& options) {
  std::string out = "## hdbench compare\n\nBaseline `" + join_list(run_names(base), "`, `") + "`, current `" + cur.run.name + "`.\n\n";
  for (const auto& line : rule_lines(base.size(), set, options)) out += "> " + line + "\n\n";
  for (const auto& note : set.notes) out += "> " + note + "\n\n";
  out += markdown_table(table_header(options, base.size()), table_of(set, options));
  if (!set.what_changed.empty()) {
    out += "\n**What changed** (" + std::string(compared_runs) + " -> current run):\n\n";
    for (const auto& change : set.what_changed) out += "- " + describe_change(change, compared_runs) + "\n";
  }
  if (!set.missing.empty()) {
    out += "\n**" + std::string(missing_title) + "** (" + std::to_string(set.missing.size()) + "):\n\n";
    for (const auto& item : set.missing) out += "- MISSING " + item.text + "\n";
  }
  for (const auto& [title, list] : {std::pair{"Only in baseline", &set.only_baseline}, std::pair{"Only in current", &set.only_current}}) {
    if (list->empty()) continue;
    out += "\n**" + std::string(title) + "** (" + std::to_string(list->size()) + "):\n\n";
    for (const auto& item : *list) out += "- " + item + "\n";
  }
  return out + "\n**" + summary_text(set) + "**\n";
}

std::string render_junit(std::size_t baseline_runs, const comparison_set& set, const compare_options& options) {
  const auto changed = what_changed_line(set.what_changed, compared_runs);
  std::string cases;
  int tests = 0;
  for (const auto& c : set.compared) {
    if (!c.gates()) continue;
    ++tests;
    cases += "  <testcase classname=\"hdbench." + xml_escape(c.key.family) + "\" name=\"" + xml_escape(describe(c.key)) + "\">\n";
    if (c.decision.result == verdict::slower) {
      cases += "    <failure message=\"" + xml_escape(percent_text(c.decision.change, percent_style::signed_change)) + " median change: " +
               xml_escape(format_figure(c.reference)) + " -> " + xml_escape(format_figure(*c.current->central)) + " " +
               xml_escape(c.current->unit) +
               (c.decision.detectable ? xml_escape(" (detectable " + percent_text(*c.decision.detectable) + ")") : "") + "\"" +
               (changed.empty() ? "/>\n" : ">" + xml_escape(changed) + "</failure>\n");
    }
    cases += "  </testcase>\n";
  }
  for (const auto& item : set.missing) {
    ++tests;
    cases += "  <testcase classname=\"hdbench." + xml_escape(item.family) + "\" name=\"" + xml_escape(item.text) +
             "\">\n    <failure message=\"MISSING: failed in the current run\"/>\n  </testcase>\n";
  }
  for (const auto& item : set.only_baseline) {
    ++tests;
    cases += "  <testcase classname=\"hdbench\" name=\"" + xml_escape(item) + "\">\n    <skipped message=\"only in baseline\"/>\n  </testcase>\n";
  }
  std::string notes;
  for (const auto& line : rule_lines(baseline_runs, set, options)) notes += line + "\n";
  for (const auto& note : set.notes) notes += note + "\n";
  if (!changed.empty()) notes += changed + "\n";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hdbench compare\" tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(static_cast<std::size_t>(set.slower) + set.missing.size()) + "\">\n" + cases + "  <system-out>" + xml_escape(notes + summary_text(set)) +
         "</system-out>\n</testsuite>\n";
}

// The spread the t test used, in one word per case of rule_lines (none: the repetition rule alone).
std::string_view spread_source(std::size_t baseline_runs, const comparison_set& set) {
  const bool model = !set.noise_model_source.empty();
  if (baseline_runs < 2 && !model) return "repetitions";
  if (baseline_runs < 2) return "noise_model";
  if (set.model_is_baselines) return "reference_set";
  return model ? "baselines_and_noise_model" : "baselines";
}

nlohmann::json optional_number(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json finite_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr); }

// One object: the runs, the rule, the notes, every shown row (as the text table, unformatted),
// the one-sided metrics, the counts and the exit status compare returns.
std::string render_json(const std::vector<indexed_run>& base, const indexed_run& cur, const comparison_set& set,
                        const compare_options& options) {
  using json = nlohmann::json;
  json baselines = json::array();
  for (const auto& run : base) baselines.push_back({{"run", run.run.name}, {"path", run.run.csv_path.string()}});
  const bool repetitions_rule = spread_source(base.size(), set) == "repetitions";
  const auto tests = std::max<std::size_t>(set.tests, 1);
  const json rule = {
      {"test", repetitions_rule ? "mann_whitney_u" : "t_log_medians"},
      {"spread", spread_source(base.size(), set)},
      {"alpha", options.statistics.alpha},
      {"tests", set.tests},
      {"level", repetitions_rule ? options.statistics.alpha : options.statistics.alpha / static_cast<double>(tests)},
      {"threshold", repetitions_rule ? set.unknown_threshold : set.known_threshold},
      {"repetition_threshold", set.unknown_threshold},
      {"repetitions_only", set.repetitions_only},
      {"node_tolerance", set.held_to_node_tolerance},
      {"noise_model", set.noise_model_source.empty() ? json(nullptr) : json(set.noise_model_source)},
      {"lines", rule_lines(base.size(), set, options)}};
  json rows = json::array();
  for (const auto& c : set.compared) {
    if (!options.all && !c.gates()) continue;
    rows.push_back({{"verdict", to_string(c.decision.result)},
                    {"against_band", to_string(c.decision.against_band)},
                    {"family", c.key.family},
                    {"case", c.key.case_name},
                    {"device", c.key.device ? json(*c.key.device) : json(nullptr)},
                    {"gpus", c.key.gpus ? json(*c.key.gpus) : json(nullptr)},
                    {"parameters", c.key.params},
                    {"metric", c.key.metric},
                    {"unit", c.current->unit},
                    {"better", to_string(c.current->direction)},
                    {"headline", c.gates()},
                    {"baseline_runs", c.baselines.size()},
                    {"baseline", finite_or_null(c.reference)},
                    {"current", optional_number(c.current->central)},
                    {"change", finite_or_null(c.decision.change)},
                    {"p", optional_number(c.decision.p_value)},
                    {"detectable", optional_number(c.decision.detectable)},
                    {"note", c.decision.note}});
  }
  json missing_texts = json::array();
  for (const auto& item : set.missing) missing_texts.push_back(item.text);
  json out = {{"baselines", std::move(baselines)},
              {"current", {{"run", cur.run.name}, {"path", cur.run.csv_path.string()}}},
              {"rule", rule},
              {"notes", set.notes},
              {"rows", std::move(rows)},
              {"missing", missing_texts},
              {"only_baseline", set.only_baseline},
              {"only_current", set.only_current},
              {"counts", {{"slower", set.slower}, {"faster", set.faster}, {"same", set.same}, {"within_tolerance", set.within_tolerance},
                          {"missing", set.missing.size()}}},
              {"summary", summary_text(set)},
              {"exit_code", exit_code_of(set)}};
  if (!set.what_changed.empty()) out["what_changed"] = to_json(set.what_changed);
  return out.dump(2) + "\n";
}

}  // namespace

std::string render_comparison(const std::vector<indexed_run>& baselines, const indexed_run& current,
                              const comparison_set& set, const compare_options& options) {
  switch (options.format) {
    case output_format::prometheus:  // not one of compare_formats: parse_output_format refuses it
    case output_format::text: return render_text(baselines, current, set, options);
    case output_format::markdown: return render_markdown(baselines, current, set, options);
    case output_format::junit: return render_junit(baselines.size(), set, options);
    case output_format::json: return render_json(baselines, current, set, options);
  }
  return {};
}

}  // namespace hdb
