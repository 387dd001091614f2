#include "hdb/harness/collect.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/fit.hpp"
#include "hdb/harness/meta.hpp"
#include "hdb/harness/stats.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view status_suffix = ".status.json";

struct parsed_label {
  std::string case_name;
  case_params params;
  std::set<std::string> headline;
};

parsed_label parse_label(std::string_view label) {
  parsed_label parsed;
  std::map<std::string, std::string> extra;  // sorted, as the schema asks
  while (!label.empty()) {
    const auto end = label.find(';');
    const auto item = label.substr(0, end);
    label = end == std::string_view::npos ? std::string_view() : label.substr(end + 1);
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos) continue;
    const std::string key(item.substr(0, eq));
    std::string value(item.substr(eq + 1));
    if (key == "case") {
      parsed.case_name = std::move(value);
    } else if (key == "headline") {
      for (std::string_view rest = value; !rest.empty();) {
        const auto comma = rest.find(',');
        if (const auto name = rest.substr(0, comma); !name.empty()) parsed.headline.emplace(name);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else if (std::find(param_keys.begin(), param_keys.end(), key) != param_keys.end()) {
      parsed.params.set(key, std::move(value));
    } else {
      extra[key] = std::move(value);
    }
  }
  for (const auto& [key, value] : extra) {
    parsed.params.extra += (parsed.params.extra.empty() ? "" : ";") + key + "=" + value;
  }
  return parsed;
}

// All entries of one case (one Google Benchmark run name), in file order.
struct case_runs {
  std::string name;
  std::vector<const raw_run*> runs;
};

std::vector<case_runs> group_by_case(const std::vector<raw_run>& runs) {
  std::vector<case_runs> cases;
  std::map<std::string, std::size_t> position;
  for (const auto& run : runs) {
    const auto [it, inserted] = position.try_emplace(run.run_name, cases.size());
    if (inserted) cases.push_back({run.run_name, {}});
    cases[it->second].runs.push_back(&run);
  }
  return cases;
}

// Fills the columns every row of a case shares.
result_row case_row(std::string_view run_id, std::string_view family, const parsed_label& label,
                    const std::string& benchmark) {
  result_row row;
  row.run_id = run_id;
  row.family = family;
  row.case_name = label.case_name;
  row.params = label.params;
  row.benchmark = benchmark;
  return row;
}

result_row metric_row(const result_row& base, const std::string& metric, const metric_decl& decl, bool headline,
                      statistic stat, double value) {
  result_row row = base;
  row.metric = metric;
  row.unit = stat == statistic::cv ? "%" : decl.unit;
  row.better_direction = decl.direction;
  row.headline = headline;
  row.stat = stat;
  row.value = value;
  return row;
}

void append_sample_rows(std::vector<result_row>& rows, const result_row& base, const std::string& metric,
                        const metric_decl& decl, bool headline, const std::vector<const raw_run*>& samples) {
  std::vector<double> values;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto it = samples[i]->numbers.find(metric);
    if (it == samples[i]->numbers.end()) continue;
    auto row = metric_row(base, metric, decl, headline, statistic::sample, it->second);
    row.sample_index = samples[i]->repetition_index.value_or(static_cast<int>(i));
    rows.push_back(std::move(row));
    values.push_back(it->second);
  }
  if (values.empty()) return;
  const auto s = summarize(values);
  const auto add = [&](statistic stat, double value) { rows.push_back(metric_row(base, metric, decl, headline, stat, value)); };
  add(statistic::median, s.median);
  add(statistic::mean, s.mean);
  add(statistic::min, s.min);
  add(statistic::max, s.max);
  if (s.stddev) add(statistic::stddev, *s.stddev);
  if (s.cv_percent) add(statistic::cv, *s.cv_percent);
}

// With --benchmark_report_aggregates_only there are no samples: Google Benchmark's own
// statistics are used (its cv is a fraction; the schema's is percent).
void append_aggregate_rows(std::vector<result_row>& rows, const result_row& base, const std::string& metric,
                           const metric_decl& decl, bool headline, const std::vector<const raw_run*>& aggregates) {
  for (const auto stat : {statistic::median, statistic::mean, statistic::min, statistic::max, statistic::stddev,
                          statistic::cv}) {
    for (const auto* run : aggregates) {
      const auto it = run->numbers.find(metric);
      if (run->aggregate_name != to_string(stat) || it == run->numbers.end()) continue;
      rows.push_back(metric_row(base, metric, decl, headline, stat, stat == statistic::cv ? it->second * 100 : it->second));
      break;
    }
  }
}

void append_case_rows(std::vector<result_row>& rows, std::string_view run_id, std::string_view family,
                      const raw_family_output& output, const case_runs& c) {
  const auto labelled = std::find_if(c.runs.begin(), c.runs.end(), [](const raw_run* r) { return !r->label.empty(); });
  const auto label = parse_label(labelled == c.runs.end() ? "" : (*labelled)->label);
  const auto base = case_row(run_id, family, label, c.name);

  // A failure anywhere fails the case (a wrong result never produces a number); else a skip.
  for (const auto outcome : {run_outcome::failed, run_outcome::skipped}) {
    const auto hit = std::find_if(c.runs.begin(), c.runs.end(), [&](const raw_run* r) { return r->outcome == outcome; });
    if (hit == c.runs.end()) continue;
    auto row = base;
    row.status = outcome == run_outcome::failed ? row_status::failed : row_status::skipped;
    row.reason = (*hit)->message;
    rows.push_back(std::move(row));
    return;
  }
  std::vector<const raw_run*> samples, aggregates;
  for (const auto* run : c.runs) (run->aggregate ? aggregates : samples).push_back(run);
  for (const auto& [metric, decl] : output.metrics) {
    const bool headline = label.headline.contains(metric);
    if (!samples.empty()) append_sample_rows(rows, base, metric, decl, headline, samples);
    else append_aggregate_rows(rows, base, metric, decl, headline, aggregates);
  }
}

std::optional<double> parse_size(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// alpha-beta rows for each group of ok cases that differ only in size_bytes.
void append_fit_rows(std::vector<result_row>& rows, std::size_t family_begin, const std::string& fit_metric) {
  struct group {
    result_row base;
    std::vector<double> sizes, times;
  };
  std::vector<group> groups;
  for (std::size_t i = family_begin; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.metric != fit_metric || row.stat != statistic::median) continue;
    const auto size = parse_size(row.params.get("size_bytes"));
    if (!size || !row.value) continue;
    auto key = row;
    key.params.set("size_bytes", "");
    const auto same_group = [&](const group& g) { return g.base.case_name == key.case_name && g.base.params == key.params; };
    auto it = std::find_if(groups.begin(), groups.end(), same_group);
    if (it == groups.end()) it = groups.insert(groups.end(), group{key, {}, {}});
    it->sizes.push_back(*size);
    it->times.push_back(*row.value);
  }
  for (const auto& g : groups) {
    const auto fit = fit_alpha_beta(g.sizes, g.times);
    if (!fit) continue;
    result_row base = g.base;
    base.headline = false;
    base.sample_index.reset();
    base.benchmark.clear();
    base.stat = statistic::fit;
    const auto add = [&](const char* metric, const char* unit, better direction, double value) {
      result_row row = base;
      row.metric = metric;
      row.unit = unit;
      row.better_direction = direction;
      row.value = value;
      rows.push_back(std::move(row));
    };
    add("fit_bandwidth", "GB/s", better::higher, fit->bandwidth_gbps());
    add("fit_latency", "us", better::lower, fit->alpha_us);
    add("fit_n_half", "B", better::lower, fit->n_half_bytes());
  }
}

std::vector<std::string> families_in(const fs::path& raw_dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(raw_dir, ec)) {
    const auto file = entry.path().filename().string();
    if (file.ends_with(status_suffix)) names.insert(file.substr(0, file.size() - status_suffix.size()));
    else if (entry.path().extension() == ".json") names.insert(entry.path().stem().string());
  }
  if (ec) throw harness_error("cannot list " + raw_dir.string() + ": " + ec.message());
  return {names.begin(), names.end()};
}

}  // namespace

void reconcile_status(family_status& status, const family_raw& raw) {
  status.cases = raw.output ? count_cases(*raw.output) : 0;
  if (!raw.output && status.state == family_state::ok) {
    status.state = family_state::failed;
    status.error = "no valid JSON output (" + raw.output_error + ")";
  }
}

family_raw load_family_raw(const fs::path& raw_dir, const std::string& family) {
  family_raw raw;
  const auto json_path = raw_dir / (family + ".json");
  if (const auto text = try_read_text_file(json_path)) {
    try {
      raw.output = read_raw_json(*text);
    } catch (const harness_error& e) {
      raw.output_error = e.what();
    }
  } else {
    raw.output_error = "missing " + json_path.filename().string();
  }
  const auto status_path = raw_dir / (family + std::string(status_suffix));
  if (const auto text = try_read_text_file(status_path)) {
    const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw harness_error("malformed JSON in " + status_path.string());
    raw.status = family_status_from_json(j);
  } else {
    raw.status.family = family;  // a JSON dropped in by hand: judged by its content alone
  }
  reconcile_status(raw.status, raw);
  return raw;
}

std::vector<result_row> family_rows(std::string_view run_id, const family_raw& raw) {
  std::vector<result_row> rows;
  const auto& family = raw.status.family;
  if (raw.status.state != family_state::ok) {
    result_row row;
    row.run_id = run_id;
    row.family = family;
    row.status = row_status::failed;
    row.reason = failure_reason(raw.status);
    rows.push_back(std::move(row));
  }
  if (!raw.output) return rows;
  const auto cases_begin = rows.size();
  for (const auto& c : group_by_case(raw.output->runs)) append_case_rows(rows, run_id, family, *raw.output, c);
  if (!raw.output->fit_metric.empty()) append_fit_rows(rows, cases_begin, raw.output->fit_metric);
  return rows;
}

collected_run collect_run(const fs::path& run_dir) {
  if (!fs::is_directory(run_dir / "raw")) throw harness_error("not a run directory (no raw/): " + run_dir.string());
  collected_run run;
  run.run_id = fs::absolute(run_dir).lexically_normal().filename().string();
  if (run.run_id.empty()) run.run_id = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  for (const auto& family : families_in(run_dir / "raw")) {
    const auto raw = load_family_raw(run_dir / "raw", family);
    auto rows = family_rows(run.run_id, raw);
    run.rows.insert(run.rows.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    run.statuses.push_back(raw.status);
  }
  return run;
}

collected_run collect_and_write(const fs::path& run_dir) {
  auto run = collect_run(run_dir);
  atomic_write_file(run_dir / "results.csv", write_results_csv(run.rows));
  refresh_meta_families(run_dir / "meta.json", run.statuses);
  return run;
}

}  // namespace hdb
