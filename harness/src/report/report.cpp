#include "hdb/harness/report/report.hpp"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/data/installed_declarations.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/data/run_index.hpp"
#include "hdb/util/stats.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/data/traffic.hpp"
#include "hdb/util/nvidia_smi.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr double cv_limit_percent = 2.0;
constexpr std::size_t max_listed_cv = 10;

// The probe may leave any field null or out: every read is optional.
std::string text(const json& object, const char* key, const std::string& unknown = "?") {
  const auto& value = field(object, key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_number()) return format_value(value.get<double>());
  return unknown;
}

const json& gpus(const json& meta) { return field(field(meta, "node"), "gpus"); }

// One metric of one case: the rows that share it (its samples, its median).
using value_key = std::tuple<std::string, std::string, std::string, std::string>;  // family, case, describe_case, metric

value_key value_key_of(const result_row& row) { return {row.family, row.case_name, describe_case(row), row.metric}; }

// cv % of each metric's samples (the CSV keeps samples, not derived statistics).
std::map<value_key, double> sample_cvs(const std::vector<result_row>& rows) {
  std::map<value_key, std::vector<double>> samples;
  for (const auto& row : rows) {
    if (row.stat == statistic::sample && row.value && row.status == row_status::ok) samples[value_key_of(row)].push_back(*row.value);
  }
  std::map<value_key, double> cvs;
  for (const auto& [key, values] : samples) {
    if (const auto cv = summarize(values).cv_percent) cvs[key] = *cv;
  }
  return cvs;
}

std::string where(const result_row& row) {
  const auto params = describe_case(row);
  return row.family + " " + row.case_name + (params.empty() ? "" : " " + params) + " " + row.metric;
}

// The family's declaration as collect stored it in meta.json, or nullopt (an older meta.json).
std::optional<family_declaration> declaration_of(const json& meta, const std::string& family) {
  const auto& schema = field(field(field(meta, "families"), family.c_str()), "schema");
  if (!schema.is_object()) return std::nullopt;
  try {
    return parse_declaration(nlohmann::ordered_json(schema));
  } catch (const declaration_error&) {
    return std::nullopt;
  }
}

void link_anomalies(const json& meta, std::vector<std::string>& out) {
  const auto& list = gpus(meta);
  if (!list.is_array()) return;
  for (const auto& gpu : list) {
    const auto name = "GPU " + text(gpu, "index") + " (" + text(gpu, "name") + ")";
    const auto& pcie = field(gpu, "pcie");
    const auto gen = number_field(pcie, "gen_current"), gen_max = number_field(pcie, "gen_max");
    const auto width = number_field(pcie, "width_current"), width_max = number_field(pcie, "width_max");
    if ((gen && gen_max && *gen < *gen_max) || (width && width_max && *width < *width_max)) {
      out.push_back(name + ": PCIe link runs at Gen" + text(pcie, "gen_current") + " x" + text(pcie, "width_current") +
                    ", below its maximum Gen" + text(pcie, "gen_max") + " x" + text(pcie, "width_max") + " (" +
                    text(pcie, "source", "source unknown") + ")");
    }
    const auto& clocks = field(gpu, "clocks");
    const auto reasons = text(clocks, "throttle_reasons", "");
    if (!reasons.empty()) {
      const auto mask = std::strtoull(reasons.c_str(), nullptr, 16);
      if (clocks_held_back(mask)) {  // anything but idleness
        out.push_back(name + ": clocks throttled (" + reasons + ": " + text(clocks, "throttle_description") + ")");
      }
    }
  }
}

void noisy_headlines(const std::vector<result_row>& rows, std::vector<std::string>& out) {
  const auto cvs = sample_cvs(rows);
  std::vector<std::string> noisy;
  for (const auto& row : rows) {
    if (row.stat != statistic::median || !row.headline || !row.value || row.status != row_status::ok) continue;
    const auto cv = cvs.find(value_key_of(row));
    if (cv != cvs.end() && cv->second > cv_limit_percent) noisy.push_back(where(row) + ": cv " + format_fixed(cv->second, 1) + " %");
  }
  for (std::size_t i = 0; i < noisy.size() && i < max_listed_cv; ++i) out.push_back(noisy[i] + " (> 2 %)");
  if (noisy.size() > max_listed_cv) {
    out.push_back("... and " + std::to_string(noisy.size() - max_listed_cv) + " more headline metrics with cv > 2 %");
  }
}

std::string node_section(const json& meta) {
  const auto& host = field(meta, "host");
  const auto& node = field(meta, "node");
  const auto& cpu = field(host, "cpu");
  table_rows rows;
  const auto memory = number_field(host, "memory_bytes");
  rows.push_back({"Host", text(host, "hostname") + ": " + text(cpu, "model") + ", " + text(cpu, "physical_cores") +
                              " cores / " + text(cpu, "logical_cpus") + " CPUs, " +
                              (memory ? format_fixed(*memory / (1ull << 30), 0) + " GiB" : std::string("?")) + " memory"});
  rows.push_back({"OS", text(host, "os") + ", kernel " + text(host, "kernel")});
  const auto& iommu = field(host, "iommu");
  const auto& enabled = field(iommu, "enabled");
  rows.push_back({"IOMMU", std::string(enabled.is_boolean() ? (enabled.get<bool>() ? "on" : "off") : "unknown") + " (" +
                               text(iommu, "evidence") + ")"});
  rows.push_back({"Driver", text(node, "driver_release") + " (CUDA " + text(node, "driver_version") + "), runtime " +
                                text(node, "cuda_runtime") + ", NCCL " + text(node, "nccl_version", "none")});
  const auto& list = gpus(meta);
  for (const auto& gpu : list.is_array() ? list : json::array()) {
    const auto id = "GPU " + text(gpu, "index");
    const auto bytes = number_field(gpu, "memory_bytes");
    rows.push_back({id, text(gpu, "name") + ", " + text(gpu, "pci_bus_id") + ", " +
                            (bytes ? format_fixed(*bytes / (1ull << 30), 0) + " GiB" : std::string("? GiB")) + ", " +
                            text(gpu, "sm_count") + " SMs, cc " + text(gpu, "compute_capability") + ", ECC " +
                            text(gpu, "ecc_enabled") + ", persistence " + text(gpu, "persistence_mode") + ", NUMA " +
                            text(gpu, "numa_node") + " (CPUs " + text(gpu, "cpu_affinity") + ")"});
    const auto& pcie = field(gpu, "pcie");
    const auto peak = gpu_pcie_peak_gbps(gpu);
    rows.push_back({id + " link", "PCIe Gen" + text(pcie, "gen_current") + " x" + text(pcie, "width_current") +
                                      " (max Gen" + text(pcie, "gen_max") + " x" + text(pcie, "width_max") + ")" +
                                      (peak ? ", peak " + format_fixed(*peak, 1) + " GB/s per direction" : std::string()) +
                                      "; NVLink links active: " + text(field(gpu, "nvlink"), "links_active")});
    const auto& clocks = field(gpu, "clocks");
    rows.push_back({id + " clocks", "SM " + text(clocks, "sm_mhz") + "/" + text(clocks, "sm_max_mhz") + " MHz, memory " +
                                        text(clocks, "mem_mhz") + "/" + text(clocks, "mem_max_mhz") +
                                        " MHz, throttle: " + text(clocks, "throttle_description") + "; HBM peak " +
                                        text(gpu, "hbm_peak_GBps") + " GB/s"});
  }
  if (const auto& environment = field(meta, "environment"); environment.is_object() && !environment.empty()) {
    std::string variables;
    for (const auto& [name, value] : environment.items()) {
      variables += (variables.empty() ? "" : ", ") + name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    rows.push_back({"Environment", variables});
  }
  if (const auto error = text(node, "error", ""); !error.empty()) rows.push_back({"Probe", error});
  return "## Node\n\n" + markdown_table({"", ""}, rows);
}

// "55.4 GB/s", "2.46x" (a ratio), "12" (a count).
std::string with_unit(double value, const std::string& unit) {
  if (unit == "ratio") return format_figure(value) + "x";
  if (unit == "count" || unit.empty()) return format_figure(value);
  return format_figure(value) + " " + unit;
}

// One row per headline median: case, parameters, metric, median with unit, cv of its samples, and
// % of the peak its traffic class gives on this node, with that peak's basis.
table_rows headline_rows(const std::string& family, const std::vector<result_row>& rows, const json& meta) {
  const auto cvs = sample_cvs(rows);
  table_rows headline;
  for (const auto& row : rows) {
    if (row.family != family || !row.headline || row.stat != statistic::median || !row.value) continue;
    const auto cv = cvs.find(value_key_of(row));
    const auto peak = row_peak(row, meta);
    headline.push_back({row.case_name, describe_case(row), row.metric, with_unit(*row.value, row.unit),
                        cv == cvs.end() ? "" : format_fixed(cv->second, 2) + " %",
                        peak ? format_fixed(percent_of_peak(*row.value, *peak), 1) + " %" : "",
                        peak ? format_figure(peak->value) + " GB/s: " + peak->basis : ""});
  }
  return headline;
}

// What the headline metrics mean, from the family's declaration: unit, direction, description.
std::string metric_legend(const family_declaration& declaration, const std::vector<result_row>& rows) {
  std::set<std::string> shown;
  for (const auto& row : rows) {
    if (row.family == declaration.family && row.headline && row.stat == statistic::median) shown.insert(row.metric);
  }
  table_rows legend;
  for (const auto& metric : declaration.metrics) {
    if (shown.contains(metric.name)) {
      legend.push_back({metric.name, metric.unit, std::string(to_string(metric.direction)), metric.description});
    }
  }
  return legend.empty() ? "" : "\n" + markdown_table({"metric", "unit", "better", "what it is"}, legend);
}

// The node's headline figures side by side, one row per GPU: every single-GPU headline median,
// one column per figure (family, case, metric and its parameters but the device). A column's
// name adds the parameters that tell it from the others of its family, case and metric
// ("copy bandwidth direction=h2d"). Which GPU differs is then one glance down a column.
std::string node_headline_table(const std::vector<result_row>& rows) {
  struct column {
    std::string family, case_name, metric, unit;
    std::map<std::string, std::string> params;
    auto operator<=>(const column&) const = default;
  };
  std::vector<column> columns;
  std::map<std::pair<int, std::size_t>, double> cells;  // (device, column) -> median
  std::set<int> devices;
  for (const auto& row : rows) {
    if (!row.headline || row.stat != statistic::median || !row.value || !row.device || row.gpus.value_or(1) != 1) continue;
    column c{row.family, row.case_name, row.metric, row.unit, row.params};
    auto it = std::find(columns.begin(), columns.end(), c);
    if (it == columns.end()) it = columns.insert(columns.end(), c);
    cells[{*row.device, static_cast<std::size_t>(it - columns.begin())}] = *row.value;
    devices.insert(*row.device);
  }
  if (columns.empty()) return {};
  std::vector<std::string> header = {"GPU"};
  for (const auto& c : columns) {
    std::string name = c.family + " " + c.case_name + (c.metric == c.case_name ? "" : " " + c.metric);
    for (const auto& [key, value] : c.params) {
      const bool distinguishes = std::any_of(columns.begin(), columns.end(), [&](const column& other) {
        return other.family == c.family && other.case_name == c.case_name && other.metric == c.metric &&
               other.params.contains(key) && other.params.at(key) != value;
      });
      if (distinguishes) name += " " + key + "=" + value;
    }
    header.push_back(name + " (" + c.unit + ")");
  }
  table_rows table;
  for (const int device : devices) {
    std::vector<std::string> line = {std::to_string(device)};
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const auto cell = cells.find({device, i});
      line.push_back(cell == cells.end() ? "-" : format_figure(cell->second));
    }
    table.push_back(std::move(line));
  }
  return "## Headlines per GPU\n\n" + markdown_table(header, table) + "\n";
}

std::vector<std::string> families_of(const std::vector<result_row>& rows) {
  std::vector<std::string> families;
  for (const auto& row : rows) {
    if (std::find(families.begin(), families.end(), row.family) == families.end()) families.push_back(row.family);
  }
  return families;
}

std::vector<result_row> rows_of(const std::string& family, const std::vector<result_row>& rows) {
  std::vector<result_row> own;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(own), [&](const result_row& r) { return r.family == family; });
  return own;
}

std::string family_section(const std::string& family, const std::vector<result_row>& rows, const json& meta) {
  const table_rows headline = headline_rows(family, rows, meta);
  const family_rules* rules = rules_for(family);
  const auto declaration = declaration_of(meta, family);
  // Skips grouped by reason (a one-GPU node skips every pair case for the same reason: one line
  // with the count and an example, not a row each); failures one row each, every one matters.
  std::map<std::string, std::pair<std::size_t, std::string>> skips_by_reason;  // reason -> count, example
  table_rows failed;
  for (const auto& row : rows) {
    if (row.family != family || row.status == row_status::ok || row.case_name.empty()) continue;
    if (row.status == row_status::skipped) {
      auto& [count, example] = skips_by_reason[row.reason];
      if (count++ == 0) example = row.case_name + " " + describe_case(row);
    } else {
      failed.push_back({row.case_name, describe_case(row), row.reason});
    }
  }
  table_rows skipped;
  for (const auto& [reason, entry] : skips_by_reason) skipped.push_back({reason, std::to_string(entry.first), entry.second});
  std::string out = "## Family `" + family + "`\n\n";
  if (declaration && !declaration->summary.empty()) out += declaration->summary + "\n\n";
  out += headline.empty() ? "No headline figures.\n"
                          : markdown_table({"case", "parameters", "metric", "median", "cv", "% of peak", "peak"}, headline);
  if (declaration) out += metric_legend(*declaration, rows);
  if (rules != nullptr && !rules->footnote.empty()) out += "\n" + rules->footnote + "\n";
  if (rules != nullptr && rules->section) {
    if (const auto extra = rules->section(rows_of(family, rows), meta); !extra.empty()) out += "\n" + extra;
  }
  if (!skipped.empty()) out += "\n### Skipped\n\n" + markdown_table({"reason", "cases", "example"}, skipped);
  if (!failed.empty()) out += "\n### Failed cases\n\n" + markdown_table({"case", "parameters", "reason"}, failed);
  return out + "\n";
}

// A verdict run leaves the sweeps out on purpose: one section says what, per family, so that no
// missing curve reads as a fault (check and compare have every figure they read).
std::string verdict_run_section(const std::vector<result_row>& rows, const json& meta) {
  if (field(meta, "verdict") != true) return {};
  const auto count = [](const std::optional<double>& n) { return n ? std::to_string(std::llround(*n)) : std::string("not recorded"); };
  table_rows table;
  for (const auto& family : families_of(rows)) {
    const auto& entry = field(field(meta, "families"), family.c_str());
    const auto run = number_field(entry, "cases");
    const auto without = number_field(field(entry, "selection"), "cases_without_verdict");
    std::string left = "not recorded";
    if (run && without && *without >= *run) left = count(*without - *run);
    table.push_back({family, count(run), count(without), left});
  }
  return "## Not measured: a verdict run\n\n"
         "This run measured only the cases each family's declaration selects for `hdbench check` and `hdbench compare` "
         "(its `checks` and `gates`, `hdbench run --verdict`), on every GPU and pair. The sweeps, and the fits and figures "
         "drawn from them, were left out on purpose; the plots below are those these cases allow. `hdbench run` without "
         "`--verdict` measures everything.\n\n" +
         markdown_table({"family", "cases run", "cases without --verdict", "not measured"}, table) + "\n";
}

}  // namespace

std::vector<std::string> find_anomalies(const std::vector<result_row>& rows, const json& meta) {
  std::vector<std::string> anomalies;
  link_anomalies(meta, anomalies);
  for (const auto& family : families_of(rows)) {
    const auto own = rows_of(family, rows);
    const family_rules* rules = rules_for(family);
    if (rules != nullptr && rules->anomalies) rules->anomalies(own, meta, anomalies);
    activity_anomalies(own, meta, anomalies);  // what else ran on its GPUs: a rule every family has
  }
  noisy_headlines(rows, anomalies);
  return anomalies;
}

std::string render_report(const std::vector<result_row>& rows, const json& meta, const std::vector<std::string>& plot_files,
                          const std::string& verdict, const std::string& health) {
  const auto& build = field(meta, "hdbench");
  std::string out = "# hdbench report: " + text(meta, "run_id") + "\n\n" + verdict;
  out += "Started " + text(meta, "started_utc") + ", finished " + text(meta, "finished_utc", "(not finished)") +
         "; hdbench " + text(build, "version") + " (" + text(build, "git_revision") + ", " + text(build, "build_type") +
         ")" + (field(meta, "quick") == true ? "; quick run" : "") + (field(meta, "verdict") == true ? "; verdict run" : "") +
         ".\n\n";
  out += verdict_run_section(rows, meta);
  out += node_section(meta) + "\n";
  out += node_headline_table(rows);
  out += health;

  out += "## Anomalies\n\n";
  const auto anomalies = find_anomalies(rows, meta);
  if (anomalies.empty()) out += "None found.\n";
  for (const auto& line : anomalies) out += "- " + line + "\n";
  out += "\n";

  const auto families = families_of(rows);
  table_rows failed_families;
  for (const auto& row : rows) {
    if (row.case_name.empty() && row.status == row_status::failed) failed_families.push_back({row.family, row.reason});
  }
  if (!failed_families.empty()) out += "## Failed families\n\n" + markdown_table({"family", "reason"}, failed_families) + "\n";
  for (const auto& family : families) out += family_section(family, rows, meta);

  out += "## Plots\n\n";
  if (plot_files.empty()) out += "No plots were drawn (see the run's log; `hdbench plot DIR` draws them later).\n";
  for (const auto& file : plot_files) out += "- [" + fs::path(file).stem().string() + "](" + file + ")\n";
  return out;
}

std::string headline_summary(const std::vector<result_row>& rows, const json& meta) {
  std::string out;
  for (const auto& family : families_of(rows)) {
    for (const auto& row : headline_rows(family, rows, meta)) {
      // family case [parameters] metric: median (cv, % of peak)
      out += "  " + family + " " + row[0] + " [" + row[1] + "] " + row[2] + ": " + row[3];
      if (!row[4].empty()) out += "  cv " + row[4];
      if (!row[5].empty()) out += ", " + row[5] + " of peak (" + row[6] + ")";
      out += "\n";
    }
  }
  return out;
}

std::string verdict_section(const check_report& report) {
  std::string out = "## Verdict\n\n" + summary_line(report) + "\n\n";
  for (const auto& note : report.notes) out += note + "\n\n";
  table_rows lines;
  for (const auto& line : report.lines) {
    if (line.result == grade::pass || line.result == grade::not_graded) continue;
    std::string gpus;
    for (const int g : line.gpus) gpus += (gpus.empty() ? "GPU " : ", ") + std::to_string(g);
    const std::string value = line.value ? format_figure(*line.value) + " " + line.unit : line.reading;
    lines.push_back({std::string(to_string(line.result)), gpus.empty() ? "node" : gpus, line.family, line.figure, value, line.reason});
  }
  if (!lines.empty()) out += markdown_table({"grade", "GPU", "family", "figure", "value", "reason"}, lines) + "\n";
  if (!report.what_changed.empty()) out += what_changed_line(report) + "\n\n";
  return out + "Every line, PASS included: `hdbench check` on this run directory (check.txt beside this report after "
               "`./run_all.sh`).\n\n";
}

std::string health_section(const check_report& report) {
  std::vector<std::string> items;                                  // columns, in check's order
  std::map<std::pair<int, std::string>, std::string> cells;       // (GPU, item) -> "PASS Gen5 x16"
  std::set<int> gpus;
  std::string node_lines;
  for (const auto& line : report.lines) {
    if (line.basis != grade_basis::health) continue;
    const bool reading = !line.reading.empty() && line.reading != "-";  // "-": the line has no reading
    const auto cell = std::string(to_string(line.result)) + (reading ? " " + line.reading : "");
    if (line.gpus.empty()) {
      node_lines += "- " + line.figure + ": " + cell + " (" + line.reason + ")\n";
      continue;
    }
    if (std::find(items.begin(), items.end(), line.figure) == items.end()) items.push_back(line.figure);
    for (const int gpu : line.gpus) {
      auto& text = cells[{gpu, line.figure}];  // an item may have several lines on one GPU: a line per other process
      text += (text.empty() ? "" : "; ") + cell;
      gpus.insert(gpu);
    }
  }
  if (items.empty() && node_lines.empty()) return {};
  std::string out = "## Health per GPU\n\n";
  if (!items.empty()) {
    std::vector<std::string> header = {"GPU"};
    header.insert(header.end(), items.begin(), items.end());
    table_rows table;
    for (const int gpu : gpus) {
      std::vector<std::string> row = {std::to_string(gpu)};
      for (const auto& item : items) {
        const auto cell = cells.find({gpu, item});
        row.push_back(cell == cells.end() ? "-" : cell->second);
      }
      table.push_back(std::move(row));
    }
    out += markdown_table(header, table);
  }
  if (!node_lines.empty()) out += (items.empty() ? "" : "\n") + node_lines;
  return out + "\nThe check's health lines, PASS included; a line that is not PASS says why in the verdict above.\n\n";
}

void write_report(const fs::path& run_dir) {
  const auto csv_path = run_dir / "results.csv";
  std::vector<result_row> rows;
  try {
    rows = split_attempts(read_results_csv(read_text_file(csv_path)).rows).last;  // what the verdict read
  } catch (const harness_error& e) {
    throw harness_error(csv_path.string() + ": " + e.what());
  }
  const auto meta = read_meta(run_dir / "meta.json").value_or(json::object());
  std::vector<std::string> plots;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir / "plots", ec)) {
    if (entry.path().extension() == ".png") plots.push_back("plots/" + entry.path().filename().string());
  }
  std::sort(plots.begin(), plots.end());
  std::string verdict, health;
  // The report is written whatever the check makes of the run; it says why there is no verdict.
  try {
    const auto check = check_run(run_dir, {});
    verdict = verdict_section(check);
    health = health_section(check);
  } catch (const std::exception& e) {
    verdict = "## Verdict\n\nNot checked: " + std::string(e.what()) + "\n\n";
  }
  atomic_write_file(run_dir / "report.md", render_report(rows, meta, plots, verdict, health));
}

}  // namespace hdb
