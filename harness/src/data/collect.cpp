#include "hdb/harness/data/collect.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/fit.hpp"
#include "hdb/harness/data/manifest.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/data/metric_key.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/stats.hpp"
#include "hdb/util/stopping.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view status_suffix = ".status.json";

// A case's label (docs/benchmark-output.md) checked against its case kind's declaration. Any
// problem leaves `problem` set and the case becomes one failed row: a label the family did not
// declare never produces a number.
struct parsed_label {
  std::string case_name;
  std::optional<int> device;
  std::optional<int> gpus;
  std::string gpu_uuid;
  std::map<std::string, std::string> params;
  std::set<std::string> headline;
  std::map<std::string, std::string> traffic;  // metric -> class
  // The case's last repetition says how many it took and why it stopped (hdb/util/stopping.hpp).
  std::optional<int> repetitions;
  std::string stopped_by;
  std::string problem;
};

void read_devices(parsed_label& parsed, const std::string& value) {
  std::vector<int> devices;
  for (const auto& item : split_list(value)) {
    if (!all_digits(item)) {
      parsed.problem = "device list '" + value + "' is not comma-separated CUDA indices";
      return;
    }
    devices.push_back(std::stoi(item));
  }
  parsed.device = *std::min_element(devices.begin(), devices.end());
  parsed.gpus = static_cast<int>(devices.size());
}

parsed_label parse_label(std::string_view label, const family_declaration& decl) {
  parsed_label parsed;
  std::vector<std::pair<std::string, std::string>> items;
  while (!label.empty()) {
    const auto end = label.find(';');
    const auto item = label.substr(0, end);
    label = end == std::string_view::npos ? std::string_view() : label.substr(end + 1);
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos) continue;
    items.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  }
  for (const auto& [key, value] : items) {
    if (key == "case") parsed.case_name = value;
  }
  const auto* kind = decl.case_kind(parsed.case_name);
  if (kind == nullptr) parsed.problem = "case kind '" + parsed.case_name + "' is not declared";
  label_list parameters;
  for (const auto& [key, value] : items) {
    if (key == "case") continue;
    if (key == "device") {
      read_devices(parsed, value);
    } else if (key == "gpu_uuid") {
      parsed.gpu_uuid = value;
    } else if (key == "repetitions") {
      if (!all_digits(value)) parsed.problem = "repetitions '" + value + "' is not a whole number";
      else parsed.repetitions = std::stoi(value);
    } else if (key == "stopped_by") {
      if (!stop_reason_from_string(value)) parsed.problem = "stopped_by '" + value + "' is not a stopping reason";
      else parsed.stopped_by = value;
    } else if (key == "headline") {
      for (const auto& name : split_nonempty(value)) parsed.headline.insert(name);
    } else if (key == "traffic") {
      for (const auto& entry : split_nonempty(value)) {
        const auto colon = entry.find(':');
        if (colon == std::string::npos) parsed.problem = "traffic entry '" + entry + "' is not metric:class";
        else parsed.traffic[entry.substr(0, colon)] = entry.substr(colon + 1);
      }
    } else {
      parameters.emplace_back(key, value);
      // Only declared parameters can have a column; an undeclared one is the problem, not a value.
      if (decl.parameter(key) != nullptr) parsed.params[key] = value;
    }
  }
  // The binary's own rule for what it registers (check_registration): a label it would have
  // refused at registration is refused here in the same words.
  if (kind != nullptr && parsed.problem.empty()) {
    if (const auto problem = check_registration(decl, parsed.case_name, parameters)) parsed.problem = *problem;
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
result_row case_row(std::string_view run_id, std::string_view family, const parsed_label& label) {
  result_row row;
  row.run_id = run_id;
  row.family = family;
  row.case_name = label.case_name;
  row.device = label.device;
  row.gpus = label.gpus;
  row.gpu_uuid = label.gpu_uuid;
  row.params = label.params;
  return row;
}

result_row metric_row(const result_row& base, const metric_decl& decl, const parsed_label& label, statistic stat,
                      double value) {
  result_row row = base;
  row.metric = decl.name;
  row.unit = decl.unit;
  row.better_direction = decl.direction;
  row.headline = label.headline.contains(decl.name);
  const auto traffic = label.traffic.find(decl.name);
  if (traffic != label.traffic.end()) row.traffic = traffic->second;
  row.stat = stat;
  row.value = value;
  return row;
}

void append_sample_rows(std::vector<result_row>& rows, const result_row& base, const metric_decl& decl,
                        const parsed_label& label, const std::vector<const raw_run*>& samples) {
  std::vector<double> values;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto it = samples[i]->numbers.find(decl.name);
    if (it == samples[i]->numbers.end()) continue;
    auto row = metric_row(base, decl, label, statistic::sample, it->second);
    row.sample_index = samples[i]->repetition_index.value_or(static_cast<int>(i));
    rows.push_back(std::move(row));
    values.push_back(it->second);
  }
  if (!values.empty()) rows.push_back(metric_row(base, decl, label, statistic::median, median(values)));
}

// With --benchmark_report_aggregates_only there are no samples: Google Benchmark's own
// median, mean and stddev are what the run has.
void append_aggregate_rows(std::vector<result_row>& rows, const result_row& base, const metric_decl& decl,
                           const parsed_label& label, const std::vector<const raw_run*>& aggregates) {
  for (const auto stat : {statistic::median, statistic::mean, statistic::stddev}) {
    for (const auto* run : aggregates) {
      const auto it = run->numbers.find(decl.name);
      if (run->aggregate_name != to_string(stat) || it == run->numbers.end()) continue;
      rows.push_back(metric_row(base, decl, label, stat, it->second));
      break;
    }
  }
}

// The counters the case set: every numeric key of its entries that is not Google Benchmark's own,
// each once, in the order first seen.
std::vector<std::string> counters_of(const std::vector<const raw_run*>& runs) {
  std::vector<std::string> counters;
  for (const auto* run : runs) {
    for (const auto& [key, value] : run->numbers) {
      if (!is_benchmark_field(key) && std::find(counters.begin(), counters.end(), key) == counters.end()) {
        counters.push_back(key);
      }
    }
  }
  return counters;
}

void append_case_rows(std::vector<result_row>& rows, std::string_view run_id, const family_declaration& decl,
                      const case_runs& c) {
  const auto labelled = std::find_if(c.runs.begin(), c.runs.end(), [](const raw_run* r) { return !r->label.empty(); });
  const auto label = parse_label(labelled == c.runs.end() ? "" : (*labelled)->label, decl);
  auto base = case_row(run_id, decl.family, label);
  // The last repetition's label says how many the case took and why it stopped.
  std::string stop_problem;
  for (auto it = c.runs.rbegin(); it != c.runs.rend(); ++it) {
    if ((*it)->aggregate || (*it)->label.empty()) continue;
    const auto last = parse_label((*it)->label, decl);
    base.repetitions = last.repetitions;
    base.stopped_by = last.stopped_by;
    stop_problem = last.problem;
    break;
  }
  const auto one_row = [&](row_status status, std::string reason) {
    auto row = base;
    row.status = status;
    row.reason = std::move(reason);
    rows.push_back(std::move(row));
  };

  // A failure anywhere fails the case (a wrong result never produces a number); else a skip.
  for (const auto outcome : {run_outcome::failed, run_outcome::skipped}) {
    const auto hit = std::find_if(c.runs.begin(), c.runs.end(), [&](const raw_run* r) { return r->outcome == outcome; });
    if (hit == c.runs.end()) continue;
    one_row(outcome == run_outcome::failed ? row_status::failed : row_status::skipped, (*hit)->message);
    return;
  }
  if (!label.problem.empty()) return one_row(row_status::failed, label.problem + " (" + c.name + ")");
  if (!stop_problem.empty()) return one_row(row_status::failed, stop_problem + " (" + c.name + ")");
  const case_decl& kind = *decl.case_kind(label.case_name);
  // The binary's own rule for what a finished case may write (check_outputs), so a hand-edited or
  // foreign file cannot put a number in the CSV that the binary itself would have refused.
  const std::vector<std::string> headlines(label.headline.begin(), label.headline.end());
  if (const auto problem = check_outputs(decl, kind.name, counters_of(c.runs), headlines, label.traffic)) {
    return one_row(row_status::failed, *problem + " (" + c.name + ")");
  }
  std::vector<const raw_run*> samples, aggregates;
  for (const auto* run : c.runs) (run->aggregate ? aggregates : samples).push_back(run);
  for (const auto& metric : kind.metrics) {
    const auto& metric_decl = *decl.metric(metric);
    if (!samples.empty()) append_sample_rows(rows, base, metric_decl, label, samples);
    else append_aggregate_rows(rows, base, metric_decl, label, aggregates);
  }
}

std::optional<double> parse_size(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::vector<result_row> alpha_beta_rows(std::span<const result_row> rows, const fit_decl& fit) {
  std::vector<result_row> out;
  struct group {
    result_row base;
    std::vector<double> sizes, times;
  };
  const auto same_case = [](const result_row& a, const result_row& b) {
    return a.case_name == b.case_name && a.device == b.device && a.gpus == b.gpus && a.gpu_uuid == b.gpu_uuid &&
           a.params == b.params;
  };
  std::vector<group> groups;
  for (const auto& row : rows) {
    if (row.metric != fit.of || row.stat != statistic::median) continue;
    const auto size = parse_size(row.param("size_bytes"));
    if (!size || !row.value) continue;
    auto key = row;
    key.params.erase("size_bytes");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const group& g) { return same_case(g.base, key); });
    if (it == groups.end()) it = groups.insert(groups.end(), group{key, {}, {}});
    it->sizes.push_back(*size);
    it->times.push_back(*row.value);
  }
  for (const auto& g : groups) {
    const auto line = fit_alpha_beta(g.sizes, g.times);
    if (!line) continue;
    result_row base = g.base;
    base.headline = false;
    base.traffic.clear();
    base.sample_index.reset();
    base.stat = statistic::fit;
    for (const auto& role : fit_roles) {
      result_row row = base;
      row.metric = fit.metric(role.role);
      row.unit = role.unit;
      row.better_direction = role.direction;
      row.value = role.role == fit_role::beta    ? line->bandwidth_gbps()
                  : role.role == fit_role::alpha ? line->alpha_us
                                                 : line->n_half_bytes();
      out.push_back(std::move(row));
    }
  }
  return out;
}

namespace {

std::string no_declaration(const std::string& family) {
  return "no declaration: raw/" + family + ".json has no hdbench.schema and no schema/" + family +
         ".json is installed beside hdbench";
}

// Manifest order first (the CSV's parameter columns follow it), then any other family by name.
std::vector<std::string> ordered_families(const std::vector<std::string>& present, const suite_manifest& manifest) {
  std::vector<std::string> ordered;
  for (const auto& entry : manifest.families) {
    if (std::find(present.begin(), present.end(), entry.name) != present.end()) ordered.push_back(entry.name);
  }
  for (const auto& name : present) {
    if (std::find(ordered.begin(), ordered.end(), name) == ordered.end()) ordered.push_back(name);
  }
  return ordered;
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

std::optional<case_selection> selection_of(const nlohmann::json& context) {
  const auto verdict = context.find("hdbench.verdict");
  const auto without = context.find("hdbench.cases_without_verdict");
  if (verdict == context.end() || without == context.end() || !verdict->is_string() || !without->is_string()) return std::nullopt;
  const auto& digits = without->get_ref<const std::string&>();
  case_selection selection{verdict->get<std::string>() == "true", 0};
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), selection.cases_without_verdict);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return selection;
}

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

std::vector<result_row> family_rows(std::string_view run_id, const family_raw& raw, const family_declaration* declaration) {
  std::vector<result_row> rows;
  const auto& family = raw.status.family;
  const auto family_row = [&](std::string reason) {
    result_row row;
    row.run_id = run_id;
    row.family = family;
    row.status = row_status::failed;
    row.reason = std::move(reason);
    rows.push_back(std::move(row));
  };
  if (raw.status.state != family_state::ok) family_row(failure_reason(raw.status));
  if (!raw.output) return rows;
  if (declaration == nullptr) {
    if (raw.status.state == family_state::ok) family_row(no_declaration(family));
    return rows;
  }
  const auto cases_begin = rows.size();
  for (const auto& c : group_by_case(raw.output->runs)) append_case_rows(rows, run_id, *declaration, c);
  if (declaration->fit) {
    const auto fits = alpha_beta_rows(std::span(rows).subspan(cases_begin), *declaration->fit);
    rows.insert(rows.end(), fits.begin(), fits.end());
  }
  return rows;
}

collect_sources installed_sources(const fs::path& bin_dir) { return {bin_dir / "suite.json", bin_dir / "schema"}; }

collected_run collect_run(const fs::path& run_dir, const collect_sources& sources) {
  if (!fs::is_directory(run_dir / "raw")) throw harness_error("not a run directory (no raw/): " + run_dir.string());
  collected_run run;
  run.run_id = fs::absolute(run_dir).lexically_normal().filename().string();
  if (run.run_id.empty()) run.run_id = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  const auto manifest = sources.manifest.empty() ? suite_manifest{} : load_manifest(sources.manifest);
  std::vector<family_raw> raws;
  for (const auto& family : ordered_families(families_in(run_dir / "raw"), manifest)) {
    auto raw = load_family_raw(run_dir / "raw", family);
    collected_family entry;
    if (raw.output) entry.selection = selection_of(raw.output->context);
    if (raw.output && raw.output->declaration) entry.declaration = raw.output->declaration;
    else if (!sources.schema_dir.empty() && fs::exists(sources.schema_dir / (family + ".json"))) {
      entry.declaration = read_declaration(sources.schema_dir / (family + ".json"));
    }
    if (entry.declaration && entry.declaration->family != family) {
      raw.status.state = family_state::failed;
      raw.status.error = "raw/" + family + ".json declares family '" + entry.declaration->family + "'";
      entry.declaration.reset();
    } else if (raw.output && !entry.declaration && raw.status.state == family_state::ok) {
      raw.status.state = family_state::failed;
      raw.status.error = no_declaration(family);
    }
    const auto listed = std::find_if(manifest.families.begin(), manifest.families.end(),
                                     [&](const family_entry& e) { return e.name == family; });
    if (listed != manifest.families.end()) entry.plots = listed->plots;
    entry.status = raw.status;
    run.families.push_back(std::move(entry));
    raws.push_back(std::move(raw));
  }
  std::vector<const family_declaration*> declarations;
  for (const auto& f : run.families) {
    if (f.declaration) declarations.push_back(&*f.declaration);
  }
  run.param_columns = parameter_columns(declarations);
  for (std::size_t i = 0; i < raws.size(); ++i) {
    const auto& declaration = run.families[i].declaration;
    auto rows = family_rows(run.run_id, raws[i], declaration ? &*declaration : nullptr);
    run.rows.insert(run.rows.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  // The confirmations, each family's rows built by the declaration its first try's were.
  for (const auto& [attempt, dir] : attempt_dirs(run_dir / "raw")) {
    for (const auto& family : families_in(dir)) {
      const auto first = std::find_if(run.families.begin(), run.families.end(),
                                      [&](const collected_family& f) { return f.status.family == family; });
      const family_declaration* declaration = first != run.families.end() && first->declaration ? &*first->declaration : nullptr;
      for (auto& row : family_rows(run.run_id, load_family_raw(dir, family), declaration)) {
        row.attempt = attempt;
        run.rows.push_back(std::move(row));
      }
    }
  }
  return run;
}

std::vector<std::pair<int, fs::path>> attempt_dirs(const fs::path& raw_dir) {
  std::vector<std::pair<int, fs::path>> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(raw_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (!entry.is_directory() || !name.starts_with(attempt_dir_prefix)) continue;
    const auto digits = name.substr(attempt_dir_prefix.size());
    if (digits.empty() || !all_digits(digits)) continue;
    dirs.emplace_back(std::stoi(digits), entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

fs::path attempt_dir(const fs::path& raw_dir, int attempt) { return raw_dir / (std::string(attempt_dir_prefix) + std::to_string(attempt)); }

std::vector<std::string> run_names_of(const raw_family_output& output, const family_declaration& declaration,
                                      const std::set<metric_key>& cases) {
  std::vector<std::string> names;
  for (const auto& c : group_by_case(output.runs)) {
    const auto labelled = std::find_if(c.runs.begin(), c.runs.end(), [](const raw_run* r) { return !r->label.empty(); });
    if (labelled == c.runs.end()) continue;
    const auto label = parse_label((*labelled)->label, declaration);
    if (cases.contains(case_key_of(case_row("", declaration.family, label)))) names.push_back(c.name);
  }
  return names;
}

collected_run collect_and_write(const fs::path& run_dir, const collect_sources& sources) {
  auto run = collect_run(run_dir, sources);
  atomic_write_file(run_dir / "results.csv", write_results_csv(run.rows, run.param_columns));
  const auto meta_path = run_dir / "meta.json";
  auto meta = read_meta(meta_path).value_or(nlohmann::json{{"schema_version", meta_schema_version}});
  std::vector<family_status> statuses;
  for (const auto& f : run.families) statuses.push_back(f.status);
  set_families(meta, statuses);
  for (const auto& f : run.families) {
    auto& entry = meta["families"][f.status.family];
    if (f.declaration) entry["schema"] = nlohmann::json(f.declaration->source);
    if (!f.plots.empty()) entry["plots"] = f.plots;
    if (f.selection) {
      entry["selection"] = {{"verdict", f.selection->verdict}, {"cases_without_verdict", f.selection->cases_without_verdict}};
    }
  }
  write_meta(meta_path, meta);
  return run;
}

}  // namespace hdb
