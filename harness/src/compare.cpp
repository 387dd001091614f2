#include "hdb/harness/compare.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <tuple>

#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/mann_whitney.hpp"
#include "hdb/harness/meta.hpp"
#include "hdb/harness/tables.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::size_t min_samples_for_test = 3;

// (family, case, parameters, metric): how cases are matched across runs.
using metric_key = std::tuple<std::string, std::string, case_params, std::string>;

struct metric_data {
  std::vector<double> samples;
  std::optional<double> central;  // median (or the fit value of a derived row)
  std::string unit;
  better direction = better::higher;
  bool headline = false;
};

struct side_index {
  std::map<metric_key, metric_data> metrics;
  // Cases that were skipped or failed, and failed families, by (family, case, params).
  std::map<std::tuple<std::string, std::string, case_params>, std::string> not_ok;
};

side_index index_rows(const std::vector<result_row>& rows) {
  side_index index;
  for (const auto& row : rows) {
    if (row.status != row_status::ok) {
      index.not_ok[{row.family, row.case_name, row.params}] = std::string(to_string(row.status)) + ": " + row.reason;
      continue;
    }
    if (row.metric.empty() || !row.value || !row.stat) continue;
    auto& data = index.metrics[{row.family, row.case_name, row.params, row.metric}];
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

struct comparison {
  metric_key key;
  const metric_data* baseline;
  const metric_data* current;
  metric_decision decision;
  double worse = 0;  // change in the bad direction; sorts the table
};

std::string describe(const metric_key& key) {
  const auto& [family, case_name, params, metric] = key;
  return family + " " + case_name + (params.describe().empty() ? "" : " [" + params.describe() + "]") + " " + metric;
}

std::string signed_percent(double change) {
  if (!std::isfinite(change)) return change > 0 ? "+inf" : "-inf";
  return (change >= 0 ? "+" : "") + format_fixed(change * 100, 1) + "%";
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

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

struct comparison_set {
  std::vector<comparison> compared;
  std::vector<std::string> only_baseline, only_current;  // descriptions
  std::vector<std::string> notes;                         // node warnings, failed families
  int slower = 0, faster = 0, same = 0;                    // headline metrics only
};

std::string one_sided(const metric_key& key, const side_index& other) {
  const auto& [family, case_name, params, metric] = key;
  const auto it = other.not_ok.find({family, case_name, params});
  return describe(key) + (it == other.not_ok.end() ? "" : " (other run: " + it->second + ")");
}

comparison_set build_comparisons(const loaded_run& base_run, const side_index& base, const loaded_run& cur_run,
                                 const side_index& cur, const compare_options& options) {
  comparison_set set;
  const auto base_node = node_identity(base_run.meta), cur_node = node_identity(cur_run.meta);
  if (!base_node || !cur_node) {
    set.notes.push_back("note: node not checked, no meta.json beside " +
                        (!base_node ? base_run.csv_path : cur_run.csv_path).string());
  } else if (*base_node != *cur_node) {
    set.notes.push_back("warning: the runs come from different nodes: baseline " + *base_node + "; current " + *cur_node);
  }
  for (const auto& [label, side] : {std::pair{"baseline", &base}, std::pair{"current", &cur}}) {
    for (const auto& [key, why] : side->not_ok) {
      if (std::get<1>(key).empty()) set.notes.push_back(std::string("warning: ") + label + " family " + std::get<0>(key) + " " + why);
    }
  }
  for (const auto& [key, b] : base.metrics) {
    if (!b.headline && !options.all) continue;
    const auto it = cur.metrics.find(key);
    if (it == cur.metrics.end() || !it->second.central || !b.central) {
      set.only_baseline.push_back(one_sided(key, cur));
      continue;
    }
    const auto& c = it->second;
    comparison cmp{key, &b, &c, decide(b.samples, *b.central, c.samples, *c.central, b.direction, options), 0};
    cmp.worse = b.direction == better::higher ? -cmp.decision.change : cmp.decision.change;
    if (b.headline) {
      (cmp.decision.result == verdict::slower ? set.slower : cmp.decision.result == verdict::faster ? set.faster : set.same)++;
    }
    set.compared.push_back(std::move(cmp));
  }
  for (const auto& [key, c] : cur.metrics) {
    if ((c.headline || options.all) && !base.metrics.contains(key)) set.only_current.push_back(one_sided(key, base));
  }
  std::stable_sort(set.compared.begin(), set.compared.end(), [](const comparison& a, const comparison& b) {
    return std::tie(a.decision.result, b.worse) < std::tie(b.decision.result, a.worse);
  });
  return set;
}

table_rows table_of(const comparison_set& set, const compare_options& options) {
  table_rows rows;
  for (const auto& c : set.compared) {
    const auto& [family, case_name, params, metric] = c.key;
    std::vector<std::string> row = {std::string(to_string(c.decision.result)), family, case_name, params.describe(), metric,
                                    format_figure(*c.baseline->central) + " " + c.baseline->unit,
                                    format_figure(*c.current->central) + " " + c.current->unit,
                                    signed_percent(c.decision.change),
                                    c.decision.p_value ? format_figure(*c.decision.p_value) : "-", c.decision.note};
    if (options.all) row.insert(row.begin() + 5, c.baseline->headline ? "yes" : "no");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> table_header(const compare_options& options) {
  std::vector<std::string> header = {"verdict", "family", "case", "parameters", "metric", "baseline", "current", "change", "p", "note"};
  if (options.all) header.insert(header.begin() + 5, "headline");
  return header;
}

std::string rule_text(const compare_options& options) {
  return "SLOWER/FASTER = Mann-Whitney U p < " + format_figure(options.alpha) + " and median change beyond " +
         format_figure(options.threshold * 100) + "% (threshold alone with fewer than 3 repetitions)";
}

std::string summary_text(const comparison_set& set) {
  return std::to_string(set.slower) + " slower, " + std::to_string(set.faster) + " faster, " + std::to_string(set.same) +
         " same (headline metrics); " + (set.slower > 0 ? "REGRESSION" : "no regression");
}

std::string render_text(const loaded_run& base, const loaded_run& cur, const comparison_set& set, const compare_options& options) {
  std::string out = "hdbench compare: baseline " + base.name + ", current " + cur.name + "\n" + rule_text(options) + "\n";
  for (const auto& note : set.notes) out += note + "\n";
  out += "\n" + text_table(table_header(options), table_of(set, options));
  for (const auto& [title, list] : {std::pair{"only in baseline", &set.only_baseline}, std::pair{"only in current", &set.only_current}}) {
    if (list->empty()) continue;
    out += "\n" + std::string(title) + " (" + std::to_string(list->size()) + "):\n";
    for (const auto& item : *list) out += "  " + item + "\n";
  }
  return out + "\n" + summary_text(set) + "\n";
}

std::string render_markdown(const loaded_run& base, const loaded_run& cur, const comparison_set& set,
                            const compare_options& options) {
  std::string out = "## hdbench compare\n\nBaseline `" + base.name + "`, current `" + cur.name + "`. " + rule_text(options) + ".\n\n";
  for (const auto& note : set.notes) out += "> " + note + "\n\n";
  out += markdown_table(table_header(options), table_of(set, options));
  for (const auto& [title, list] : {std::pair{"Only in baseline", &set.only_baseline}, std::pair{"Only in current", &set.only_current}}) {
    if (list->empty()) continue;
    out += "\n**" + std::string(title) + "** (" + std::to_string(list->size()) + "):\n\n";
    for (const auto& item : *list) out += "- " + item + "\n";
  }
  return out + "\n**" + summary_text(set) + "**\n";
}

std::string render_junit(const comparison_set& set) {
  std::string cases;
  int tests = 0;
  for (const auto& c : set.compared) {
    if (!c.baseline->headline) continue;
    ++tests;
    const auto& [family, case_name, params, metric] = c.key;
    cases += "  <testcase classname=\"hdbench." + xml_escape(family) + "\" name=\"" + xml_escape(describe(c.key)) + "\">\n";
    if (c.decision.result == verdict::slower) {
      cases += "    <failure message=\"" + xml_escape(signed_percent(c.decision.change)) + " median change: " +
               xml_escape(format_figure(*c.baseline->central)) + " -> " + xml_escape(format_figure(*c.current->central)) + " " +
               xml_escape(c.baseline->unit) + "\"/>\n";
    }
    cases += "  </testcase>\n";
  }
  for (const auto& item : set.only_baseline) {
    ++tests;
    cases += "  <testcase classname=\"hdbench\" name=\"" + xml_escape(item) + "\">\n    <skipped message=\"only in baseline\"/>\n  </testcase>\n";
  }
  std::string notes;
  for (const auto& note : set.notes) notes += note + "\n";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hdbench compare\" tests=\"" + std::to_string(tests) +
         "\" failures=\"" + std::to_string(set.slower) + "\">\n" + cases + "  <system-out>" + xml_escape(notes + summary_text(set)) +
         "</system-out>\n</testsuite>\n";
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

double parse_percent(std::string_view text) {
  const auto number = text.ends_with('%') ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || value < 0) {
    throw harness_error("bad percentage '" + std::string(text) + "' (expected e.g. 5%)");
  }
  return value / 100;
}

compare_format parse_compare_format(std::string_view text) {
  if (text == "text") return compare_format::text;
  if (text == "markdown") return compare_format::markdown;
  if (text == "junit") return compare_format::junit;
  throw harness_error("unknown format '" + std::string(text) + "' (text, markdown or junit)");
}

loaded_run load_run(const fs::path& path) {
  loaded_run run;
  run.csv_path = fs::is_directory(path) ? path / "results.csv" : path;
  if (!fs::exists(run.csv_path)) throw harness_error(run.csv_path.string() + ": no such file");
  try {
    run.rows = read_results_csv(read_text_file(run.csv_path));
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

metric_decision decide(const std::vector<double>& baseline_samples, double baseline_median,
                       const std::vector<double>& current_samples, double current_median, better direction,
                       const compare_options& options) {
  metric_decision d;
  if (baseline_median != 0) d.change = (current_median - baseline_median) / baseline_median;
  else if (current_median != 0) d.change = current_median > 0 ? INFINITY : -INFINITY;
  const double worse = direction == better::higher ? -d.change : d.change;
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
  if (significant && worse > options.threshold) d.result = verdict::slower;
  else if (significant && worse < -options.threshold) d.result = verdict::faster;
  return d;
}

compare_result compare_runs(const fs::path& baseline, const fs::path& current, const compare_options& options) {
  compare_result result;
  try {
    const auto base = load_run(baseline);
    const auto cur = load_run(current);
    const auto base_index = index_rows(base.rows), cur_index = index_rows(cur.rows);
    const auto set = build_comparisons(base, base_index, cur, cur_index, options);
    switch (options.format) {
      case compare_format::text: result.output = render_text(base, cur, set, options); break;
      case compare_format::markdown: result.output = render_markdown(base, cur, set, options); break;
      case compare_format::junit: result.output = render_junit(set); break;
    }
    result.exit_code = set.slower > 0 ? 1 : 0;
  } catch (const harness_error& e) {
    result.exit_code = 2;
    result.error = e.what();
  }
  return result;
}

}  // namespace hdb
