// The Prometheus rendering of check's and fleet's graded lines (prometheus_render.hpp): the exact
// series lines a textfile holds, base units, label escaping, one series per figure and GPU, the
// WARN count carried from the textfile replaced, and the measured time read from meta.json. What
// node_exporter and a real Prometheus read back is prometheus_test.py beside this file.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/output_format.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/verdict/prometheus_render.hpp"

namespace {

using hdb::grade;
using hdb_test::contains_text;

hdb::graded_line figure(const std::string& label, int gpu, double value, grade result, const std::string& unit = "GB/s") {
  hdb::graded_line line;
  line.result = result;
  line.basis = hdb::grade_basis::set;
  line.gpus = {gpu};
  line.family = "copy";
  line.figure = label;
  line.value = value;
  line.unit = unit;
  line.band = hdb::figure_band{54.7, 56.2, 55.4, 6, 0.01};
  line.rule.tolerance = 0.03;
  line.reason = "a reason that is never a label";
  return line;
}

hdb::check_report report_of(std::vector<hdb::graded_line> lines, long long measured = 1796141437) {
  hdb::check_report report;
  report.run = "20261201T160834Z-gpu01";
  report.hostname = "gpu01";
  report.node_kind = "NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0";
  report.measured_unix_seconds = measured;
  for (const auto& line : lines) {
    report.passed += line.result == grade::pass;
    report.warned += line.result == grade::warn;
    report.failed += line.result == grade::fail;
    report.not_graded += line.result == grade::not_graded;
  }
  report.lines = std::move(lines);
  return report;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  const auto all = lines_of(text);
  return std::find(all.begin(), all.end(), line) != all.end();
}

// The value of the one sample `name{labels}` ("" when absent).
std::string sample(const std::string& text, const std::string& series) {
  for (const auto& line : lines_of(text)) {
    if (line.rfind(series + " ", 0) == 0) return line.substr(series.size() + 1);
  }
  return "";
}

const std::string pinned = R"({node="gpu01",family="copy",figure="pinned h2d 1 GiB",gpu="0"})";

}  // namespace

TEST_CASE("prometheus: a check's figures in base units, its band, tolerance, grade and the node's verdict", "[prometheus]") {
  auto sync = figure("launch latency", 0, 2.5, grade::pass, "us");
  sync.family = "sync";
  sync.band = hdb::figure_band{2.0, 3.0, 2.4, 6, std::nullopt};
  auto peak_only = figure("pinned d2h 1 GiB", 0, 47.3, grade::warn);
  peak_only.band.reset();
  peak_only.basis = hdb::grade_basis::peak;
  peak_only.percent_of_peak = 74.5;
  const auto report = report_of({figure("pinned h2d 1 GiB", 0, 52.6, grade::fail), sync, peak_only,
                                 hdb::health_line(grade::pass, {0}, "PCIe link", "Gen5 x16", ""),
                                 hdb::health_line(grade::warn, {}, "health not read", "-", ""),
                                 [] {
                                   auto info = figure("registered h2d", 0, 10, grade::not_graded);
                                   info.band.reset();
                                   info.rule.tolerance.reset();
                                   return info;
                                 }()});
  const auto text = hdb::render_prometheus(report);
  INFO(text);
  const std::string node = R"({node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0"})";
  CHECK(sample(text, "hdbench_node_grade" + node) == "2");
  CHECK(sample(text, "hdbench_node_measured_timestamp_seconds" + node) == "1796141437");
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="FAIL"})") == "1");
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="WARN"})") == "2");
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="PASS"})") == "2");
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="INFO"})") == "1");
  // GB/s x 1e9, us x 1e-6, printed short.
  CHECK(has_line(text, "hdbench_figure_value_bytes_per_second" + pinned + " 52600000000"));
  CHECK(has_line(text, "hdbench_figure_band_low_bytes_per_second" + pinned + " 54700000000"));
  CHECK(has_line(text, "hdbench_figure_band_high_bytes_per_second" + pinned + " 56200000000"));
  CHECK(has_line(text, "hdbench_figure_band_centre_bytes_per_second" + pinned + " 55400000000"));
  CHECK(has_line(text, "hdbench_figure_tolerance_ratio" + pinned + " 0.03"));
  CHECK(has_line(text, "hdbench_figure_grade" + pinned + " 2"));
  const std::string latency = R"({node="gpu01",family="sync",figure="launch latency",gpu="0"})";
  CHECK(has_line(text, "hdbench_figure_value_seconds" + latency + " 2.5e-06"));
  CHECK(has_line(text, "hdbench_figure_band_centre_seconds" + latency + " 2.4e-06"));
  CHECK(has_line(text, "hdbench_figure_grade" + latency + " 0"));
  const std::string d2h = R"({node="gpu01",family="copy",figure="pinned d2h 1 GiB",gpu="0"})";
  CHECK(has_line(text, "hdbench_figure_peak_ratio" + d2h + " 0.745"));
  CHECK(sample(text, "hdbench_figure_band_low_bytes_per_second" + d2h).empty());
  CHECK(has_line(text, R"(hdbench_figure_grade{node="gpu01",family="health",figure="PCIe link",gpu="0"} 0)"));
  CHECK(has_line(text, R"(hdbench_figure_grade{node="gpu01",family="health",figure="health not read",gpu=""} 1)"));
  CHECK(has_line(text, R"(hdbench_figure_grade{node="gpu01",family="copy",figure="registered h2d",gpu="0"} -1)"));
  // No reason, run id or reading is a label or a value anywhere.
  CHECK_THAT(text, !contains_text("a reason"));
  CHECK_THAT(text, !contains_text("20261201T160834Z"));
  CHECK_THAT(text, !contains_text("Gen5 x16\"}"));
}

TEST_CASE("prometheus: a transient counts its tries, a FAIL measured once is unconfirmed", "[prometheus]") {
  auto transient = figure("pinned h2d 1 GiB", 0, 55.3, grade::warn);
  transient.confirmed = hdb::confirmation::transient;
  transient.attempts = {{1, 52.3, grade::fail}, {2, 55.3, grade::pass}};
  auto once = figure("pinned d2h 1 GiB", 0, 52.0, grade::fail);
  once.confirmed = hdb::confirmation::unconfirmed;
  const auto text = hdb::render_prometheus(report_of({transient, once, figure("pinned bidirectional 1 GiB", 0, 97, grade::pass)}));
  INFO(text);
  const std::string d2h = R"({node="gpu01",family="copy",figure="pinned d2h 1 GiB",gpu="0"})";
  CHECK(has_line(text, "hdbench_figure_tries" + pinned + " 2"));
  CHECK(has_line(text, "hdbench_figure_grade" + pinned + " 1"));
  CHECK(sample(text, "hdbench_figure_tries" + d2h).empty());
  CHECK(has_line(text, "hdbench_figure_unconfirmed" + d2h + " 1"));
  CHECK(sample(text, "hdbench_figure_unconfirmed" + pinned).empty());
}

TEST_CASE("prometheus: every declared unit in its base unit, by its own factor", "[prometheus]") {
  // A figure of 2.5 in each unit a family declares: the series name's base unit and the value in it.
  const std::vector<std::tuple<std::string, std::string, std::string>> units = {
      {"GB/s", "bytes_per_second", "2500000000"}, {"us", "seconds", "2.5e-06"}, {"ms", "seconds", "0.0025"},
      {"ns", "seconds", "2.5e-09"},               {"s", "seconds", "2.5"},        {"B", "bytes", "2.5"},
      {"us/MiB", "seconds_per_byte", "2.38418579101562e-12"},                      {"ratio", "ratio", "2.5"},
      {"%", "ratio", "0.025"},                    {"count", "", "2.5"}};
  std::vector<hdb::graded_line> lines;
  for (const auto& [unit, base, value] : units) lines.push_back(figure("in " + unit, 0, 2.5, grade::pass, unit));
  const auto text = hdb::render_prometheus(report_of(lines));
  INFO(text);
  for (const auto& [unit, base, value] : units) {
    const std::string series = "hdbench_figure_value" + (base.empty() ? "" : "_" + base) +
                               R"({node="gpu01",family="copy",figure="in )" + unit + R"(",gpu="0"})";
    CHECK(sample(text, series) == value);
  }
}

TEST_CASE("prometheus: every family has one HELP and one TYPE gauge line, before its samples, which are contiguous", "[prometheus]") {
  auto ecc0 = hdb::health_line(grade::pass, {0}, "ECC", "on, 0 uncorrectable", ""), ecc1 = hdb::health_line(grade::pass, {1}, "ECC", "on, 0 uncorrectable", "");
  ecc0.counters = ecc1.counters = {{"ecc_errors", {{"type", "corrected_volatile"}}, 0}, {"ecc_errors", {{"type", "uncorrected_volatile"}}, 0}};
  auto xid = hdb::health_line(grade::fail, {1}, "Xid", "79", "");
  xid.counters = {{"xid_events", {{"xid", "79"}}, 1}};
  const auto text = hdb::render_prometheus(report_of({figure("pinned h2d 1 GiB", 0, 52.6, grade::pass),
                                                      figure("pinned h2d 1 GiB", 1, 52.7, grade::pass),
                                                      hdb::health_line(grade::pass, {0}, "PCIe link", "Gen5 x16", ""), ecc0, xid, ecc1}));
  std::map<std::string, int> help, type;
  std::vector<std::string> order;  // family of each sample, in file order
  for (const auto& line : lines_of(text)) {
    if (line.rfind("# HELP ", 0) == 0) {
      ++help[line.substr(7, line.find(' ', 7) - 7)];
    } else if (line.rfind("# TYPE ", 0) == 0) {
      const auto name = line.substr(7, line.find(' ', 7) - 7);
      ++type[name];
      CHECK(line == "# TYPE " + name + " gauge");
      CHECK(help[name] == 1);  // HELP came first
    } else {
      const auto name = line.substr(0, line.find('{'));
      CHECK(type[name] == 1);
      if (order.empty() || order.back() != name) order.push_back(name);
    }
  }
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());  // no family twice
  for (const auto& [name, n] : help) CHECK(n == 1);
  CHECK(help.size() == order.size());  // no family without samples
  CHECK(text.back() == '\n');
}

TEST_CASE("prometheus: a health line's counters are hdbench_gpu_<name> series, each once, none for a line without",
          "[prometheus]") {
  auto pending = hdb::health_line(grade::fail, {0}, "row remap", "pending", "");
  pending.counters = {{"remapped_rows", {{"state", "pending"}}, 1}, {"remapped_rows", {{"state", "uncorrectable"}}, 2}};
  auto scarce = hdb::health_line(grade::warn, {0}, "row remap", "3 banks low", "");  // a second line of the item: the same series again
  scarce.counters = pending.counters;
  auto odd = hdb::health_line(grade::pass, {1}, "ECC", "on", "");
  odd.counters = {{"new counter!", {{"node", "not a label"}, {"gpu", "nor this"}, {"what ever", "a \"b\""}}, 7}};
  const auto text = hdb::render_prometheus(report_of({pending, scarce, odd, hdb::health_line(grade::pass, {0}, "PCIe link", "Gen5 x16", "")}));
  INFO(text);
  CHECK(has_line(text, R"(hdbench_gpu_remapped_rows{node="gpu01",gpu="0",state="pending"} 1)"));
  CHECK(has_line(text, R"(hdbench_gpu_remapped_rows{node="gpu01",gpu="0",state="uncorrectable"} 2)"));
  const auto all = lines_of(text);
  CHECK(std::count_if(all.begin(), all.end(), [](const std::string& l) { return l.rfind("hdbench_gpu_remapped_rows{", 0) == 0; }) == 2);
  CHECK(has_line(text, "# TYPE hdbench_gpu_remapped_rows gauge"));
  // A name and labels of a newer check.json, made fit to be a metric; node and gpu stay hdbench's own.
  CHECK(has_line(text, R"(hdbench_gpu_new_counter_{node="gpu01",gpu="1",what_ever="a \"b\""} 7)"));
  CHECK(has_line(text, "# HELP hdbench_gpu_new_counter_ A GPU health counter hdbench check read (docs/machine-output.md)"));
  CHECK(text.find("hdbench_gpu_ecc_errors") == std::string::npos);
}

TEST_CASE("prometheus: label values are escaped, so a hostname, a figure or a kind can hold any text", "[prometheus]") {
  auto report = report_of({figure("odd \"quoted\" \\ figure", 0, 1, grade::pass)});
  report.hostname = "gpu\n01";
  report.node_kind = "kind \"x\"";
  const auto text = hdb::render_prometheus(report);
  CHECK(has_line(text, R"(hdbench_node_grade{node="gpu\n01",kind="kind \"x\""} 0)"));
  CHECK(has_line(text, R"(hdbench_figure_grade{node="gpu\n01",family="copy",figure="odd \"quoted\" \\ figure",gpu="0"} 0)"));
}

TEST_CASE("prometheus: several lines of one figure on one GPU are one series with the worst grade", "[prometheus]") {
  // Two other processes on GPU 0 are two health lines of one item.
  const auto text = hdb::render_prometheus(report_of({hdb::health_line(grade::warn, {0}, "other processes", "pid 1 hdbench-copy", ""),
                                                      hdb::health_line(grade::fail, {0}, "other processes", "pid 2 python", ""),
                                                      hdb::health_line(grade::pass, {1}, "other processes", "none", "")}));
  const std::string gpu0 = R"(hdbench_figure_grade{node="gpu01",family="health",figure="other processes",gpu="0"})";
  const auto all = lines_of(text);
  CHECK(std::count_if(all.begin(), all.end(), [&](const std::string& l) { return l.rfind(gpu0 + " ", 0) == 0; }) == 1);
  CHECK(sample(text, gpu0) == "2");
  CHECK(sample(text, R"(hdbench_figure_grade{node="gpu01",family="health",figure="other processes",gpu="1"})") == "0");
  // The node's line counts are of lines, not series.
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="FAIL"})") == "1");
  CHECK(sample(text, R"(hdbench_node_graded_lines{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0",grade="WARN"})") == "1");
}

TEST_CASE("prometheus: a figure's WARN runs go on from the textfile replaced, and a run graded again counts once", "[prometheus]") {
  const auto warn = [](long long measured) { return report_of({figure("pinned h2d 1 GiB", 0, 57.5, grade::warn)}, measured); };
  const auto pass = [](long long measured) { return report_of({figure("pinned h2d 1 GiB", 0, 55.4, grade::pass)}, measured); };
  const auto runs = [](const std::string& text) { return sample(text, "hdbench_figure_warn_runs" + pinned); };
  const auto first = hdb::render_prometheus(warn(1000));
  CHECK(runs(first) == "1");  // no textfile before it: this run
  const auto second = hdb::render_prometheus(warn(2000), first);
  CHECK(runs(second) == "2");
  CHECK(runs(hdb::render_prometheus(warn(2000), second)) == "2");  // the same run again
  CHECK(runs(hdb::render_prometheus(warn(3000), second)) == "3");
  const auto passed = hdb::render_prometheus(pass(3000), second);
  CHECK(runs(passed) == "0");
  CHECK(runs(hdb::render_prometheus(warn(4000), passed)) == "1");  // the count starts again
  // A run graded PASS, then WARN by another verdict of the same run: one run.
  CHECK(runs(hdb::render_prometheus(warn(3000), passed)) == "1");
  // A node without a measured time: each rendering is a run.
  auto unknown = warn(0);
  unknown.measured_unix_seconds.reset();
  const auto once = hdb::render_prometheus(unknown);
  CHECK(sample(once, R"(hdbench_node_measured_timestamp_seconds{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0"})").empty());
  CHECK(runs(hdb::render_prometheus(unknown, once)) == "2");
  // Another node's textfile counts nothing for this one.
  auto other = warn(1000);
  other.hostname = "gpu02";
  CHECK(runs(hdb::render_prometheus(warn(2000), hdb::render_prometheus(other))) == "1");
}

TEST_CASE("prometheus: a fleet's nodes, each by the name fleet gives it, with its kind and verdict", "[prometheus]") {
  hdb::fleet_report fleet;
  hdb::fleet_node healthy;
  healthy.name = healthy.hostname = "gpu01";
  healthy.kind = "NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0";
  healthy.measured_unix_seconds = 1796141437;
  healthy.lines = {figure("pinned h2d 1 GiB", 0, 55.3, grade::pass)};
  healthy.passed = 1;
  hdb::fleet_node lost;
  lost.name = lost.hostname = "gpu02";
  lost.kind = "unknown";
  hdb::graded_line never;
  never.result = grade::fail;
  never.basis = hdb::grade_basis::node;
  never.family = "node";
  never.figure = "run";
  never.reason = "no run directory";
  lost.lines = {never};
  lost.failed = 1;
  fleet.nodes = {lost, healthy};
  const auto text = hdb::render_prometheus(fleet);
  INFO(text);
  CHECK(has_line(text, R"(hdbench_node_grade{node="gpu02",kind="unknown"} 2)"));
  CHECK(has_line(text, R"(hdbench_node_grade{node="gpu01",kind="NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0"} 0)"));
  CHECK(has_line(text, R"(hdbench_figure_grade{node="gpu02",family="node",figure="run",gpu=""} 2)"));
  CHECK(has_line(text, "hdbench_figure_value_bytes_per_second" + pinned + " 55300000000"));
  // Only the node that measured has a time.
  const auto all = lines_of(text);
  CHECK(std::count_if(all.begin(), all.end(), [](const std::string& l) {
          return l.rfind("hdbench_node_measured_timestamp_seconds{", 0) == 0;
        }) == 1);
}

TEST_CASE("prometheus: the grade coding, and --format prometheus for check and fleet only", "[prometheus]") {
  CHECK(hdb::prometheus_grade_value(grade::pass) == 0);
  CHECK(hdb::prometheus_grade_value(grade::warn) == 1);
  CHECK(hdb::prometheus_grade_value(grade::fail) == 2);
  CHECK(hdb::prometheus_grade_value(grade::not_graded) == -1);
  CHECK(hdb::parse_output_format("prometheus", hdb::check_formats) == hdb::output_format::prometheus);
  CHECK(hdb::parse_output_format("prometheus", hdb::fleet_formats) == hdb::output_format::prometheus);
  CHECK_THROWS_AS(hdb::parse_output_format("prometheus", hdb::compare_formats), hdb::harness_error);
  CHECK_THROWS_WITH(hdb::parse_output_format("prom", hdb::check_formats),
                    "unknown --format 'prom' (text, junit, json or prometheus)");
}

TEST_CASE("prometheus: the measured time is meta.json's finished_utc, else its started_utc", "[prometheus]") {
  using json = nlohmann::json;
  CHECK(hdb::measured_unix_seconds(json{{"started_utc", "2026-12-01T16:08:34Z"}, {"finished_utc", "2026-12-01T16:10:37Z"}}) ==
        1796141437);
  CHECK(hdb::measured_unix_seconds(json{{"started_utc", "2026-12-01T16:08:34Z"}, {"finished_utc", nullptr}}) == 1796141314);
  CHECK(hdb::measured_unix_seconds(json{{"started_utc", "1970-01-01T00:00:00Z"}}) == 0);
  CHECK_FALSE(hdb::measured_unix_seconds(json::object()));
  CHECK_FALSE(hdb::measured_unix_seconds(json{{"finished_utc", "2026-12-01 16:10:37"}}));
  CHECK_FALSE(hdb::measured_unix_seconds(json{{"finished_utc", "2026-13-01T16:10:37Z"}}));
  CHECK(hdb::hostname_of(json{{"node", {{"hostname", "gpu01"}}}, {"host", {{"hostname", "login"}}}}) == "gpu01");
  CHECK(hdb::hostname_of(json{{"node", {{"hostname", nullptr}}}, {"host", {{"hostname", "login"}}}}) == "login");
  CHECK_FALSE(hdb::hostname_of(json::object()));
}
