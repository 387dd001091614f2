// hdbench check, the rendering: a check_report (check.hpp) as aligned text, a junit testsuite or
// JSON. Nothing here grades.
#include <string>
#include <string_view>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/verdict/prometheus_render.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

std::string value_text(const graded_line& line) {
  if (line.value) return format_figure(*line.value) + (line.unit.empty() ? "" : " " + line.unit);
  return line.reading.empty() ? "-" : line.reading;
}

// "expected 55.1-55.6 GB/s (h200, 6 runs)", ">= 47.3 GB/s (75 % of peak)" or "-".
std::string expected_text(const graded_line& line, const check_report& report) {
  const auto unit = line.unit.empty() ? "" : " " + line.unit;
  if (const auto& band = line.band) {
    return "expected " + format_figure(band->low) + "-" + format_figure(band->high) + unit + " (" + report.set.value_or("set") +
           ", " + std::to_string(band->runs) + " runs)";
  }
  if (const auto& peak = line.peak) {
    return ">= " + format_figure(peak_pass_percent / 100 * peak->value / peak->traffic_factor) + unit + " (" +
           format_figure(peak_pass_percent) + " % of peak)";
  }
  return "-";
}

std::string render_text(const check_report& report) {
  std::string out = "hdbench check: run " + report.run + " on " + report.node_kind + "\n";
  if (report.set) {
    out += "reference: set " + *report.set + " (" + display_path(report.set_dir) + ", " + std::to_string(report.set_runs) +
           " runs); FAIL = outside the band healthy nodes of this kind read and worse than its centre by more than the "
           "figure's tolerance, WARN = outside the band within it (or better, or no entry)\n";
  }
  for (const auto& note : report.notes) out += "note: " + note + "\n";
  table_rows rows;
  for (const auto& line : report.lines) {
    rows.push_back({std::string(to_string(line.result)), gpu_text(line.gpus), line.family, line.figure, value_text(line),
                    expected_text(line, report), line.reason});
  }
  out += text_table({"grade", "GPU", "family", "figure", "value", "expected", "reason"}, rows);
  if (!report.what_changed.empty()) out += what_changed_line(report) + "\n";
  return out + summary_line(report) + "\n";
}

std::string render_junit(const check_report& report) {
  std::string cases;
  int skipped = 0;
  for (const auto& line : report.lines) {
    const auto name = gpu_text(line.gpus) + " " + line.figure;
    cases += "  <testcase classname=\"hdbench.check." + xml_escape(line.family) + "\" name=\"" + xml_escape(name) + "\">\n";
    const auto detail = value_text(line) + "; " + expected_text(line, report) + "; " + line.reason;
    switch (line.result) {
      case grade::fail: cases += "    <failure message=\"" + xml_escape(detail) + "\"/>\n"; break;
      case grade::not_graded:
        ++skipped;
        cases += "    <skipped message=\"" + xml_escape(detail) + "\"/>\n";
        break;
      case grade::warn: cases += "    <system-out>" + xml_escape("WARN: " + detail) + "</system-out>\n"; break;
      case grade::pass: cases += "    <system-out>" + xml_escape("PASS: " + detail) + "</system-out>\n"; break;
    }
    cases += "  </testcase>\n";
  }
  std::string notes;
  for (const auto& note : report.notes) notes += note + "\n";
  if (!report.what_changed.empty()) notes += what_changed_line(report) + "\n";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hdbench check\" tests=\"" +
         std::to_string(report.lines.size()) + "\" failures=\"" + std::to_string(report.failed) + "\" skipped=\"" +
         std::to_string(skipped) + "\">\n" + cases + "  <system-out>" + xml_escape(notes + summary_line(report)) +
         "</system-out>\n</testsuite>\n";
}

std::string render_json(const check_report& report) {
  json lines = json::array();
  for (const auto& line : report.lines) lines.push_back(to_json(line));
  const json set = report.set ? json{{"name", *report.set}, {"dir", display_path(report.set_dir)}, {"runs", report.set_runs}}
                              : json(nullptr);
  json out = {{"version", check_json_version},
              {"run", report.run},
              {"node_kind", report.node_kind},
              {"reference", set},
              {"notes", report.notes},
              {"lines", std::move(lines)},
              {"summary",
               {{"grade", to_string(report.overall())},
                {"pass", report.passed},
                {"warn", report.warned},
                {"fail", report.failed},
                {"unconfirmed", report.unconfirmed},
                {"not_graded", report.not_graded}}},
              {"exit_code", report.exit_code()}};
  if (!report.what_changed.empty()) out["what_changed"] = to_json(report.what_changed);
  return out.dump(2) + "\n";
}

}  // namespace

std::string summary_line(const check_report& report) {
  std::string against = report.set ? "against " + *report.set + " (" + std::to_string(report.set_runs) + " runs)"
                                   : "against peaks only (no reference set of this kind)";
  return "hdbench check: " + report.run + " " + std::string(to_string(report.overall())) + " \u2014 " +
         std::to_string(report.passed) + " PASS, " + std::to_string(report.warned) + " WARN, " +
         std::to_string(report.failed) + " FAIL" +
         (report.not_graded > 0 ? ", " + std::to_string(report.not_graded) + " not graded" : std::string()) + " " + against;
}

std::string what_changed_line(const check_report& report) { return what_changed_line(report.what_changed, "runs of the set"); }

std::string render_check(const check_report& report, output_format format) {
  switch (format) {
    case output_format::junit: return render_junit(report);
    case output_format::json: return render_json(report);
    case output_format::prometheus: return render_prometheus(report);
    case output_format::text:
    case output_format::markdown: break;
  }
  return render_text(report);
}

void write_check_files(const std::filesystem::path& run_dir, const check_report& report) {
  atomic_write_file(run_dir / "check.txt", render_text(report));
  atomic_write_file(run_dir / "check.json", render_json(report));
}

}  // namespace hdb
