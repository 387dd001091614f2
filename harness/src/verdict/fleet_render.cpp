// hdbench fleet, the outputs: the report as text, junit or JSON; fleet.json, fleet.txt and the
// figures (plots/fleet_plot.json, drawn by plots/plot_fleet.py) under --out; and --learn's reference
// sets. Nothing here grades.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <ostream>
#include <set>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/fleet.hpp"
#include "hdb/harness/verdict/prometheus_render.hpp"
#include "hdb/harness/common/plot_python.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/process.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string value_text(const graded_line& line) {
  if (line.value) return format_figure(*line.value) + (line.unit.empty() ? "" : " " + line.unit);
  return line.reading.empty() ? "-" : line.reading;
}

std::string band_text(const graded_line& line) {
  if (!line.band) return "-";
  return format_figure(line.band->low) + "-" + format_figure(line.band->high) + (line.unit.empty() ? "" : " " + line.unit);
}

std::string from_centre_text(const graded_line& line) {
  if (!line.value || !line.band || !(line.band->centre > 0)) return "-";
  return percent_text(*line.value / line.band->centre - 1, percent_style::signed_change);
}

// "set h200 (12 runs)", "peers", "none": what a kind's figures were graded against.
std::string basis_text(const fleet_kind& kind) {
  if (kind.basis == grade_basis::set && kind.set) return "set " + *kind.set + " (" + std::to_string(kind.set_runs) + " runs)";
  return std::string(to_string(kind.basis));
}

std::string kinds_text(const fleet_report& report) {
  std::string out;
  for (const auto& kind : report.kinds) {
    out += "kind " + kind.kind + ": " + std::to_string(kind.nodes) + " node(s), graded against ";
    if (kind.basis == grade_basis::peers) {
      out += "their peers (leave-one-out median and 1.4826 MAD of ln(value), band centre x exp(+-k x spread), k = " +
             format_fixed(kind.k, 2) + " for " + std::to_string(kind.tests) + " node x figure tests at family-wise " +
             format_figure(report.alpha) + "); FAIL = outside the band and worse than the centre by more than the figure's "
             "tolerance, as check\n";
    } else {
      out += basis_text(kind) + (kind.set ? " (the band each node's check holds, by the one decision)" : "") + "\n";
    }
    for (const auto& note : kind.notes) out += "note: " + note + "\n";
  }
  return out;
}

// `every_line`: PASS lines too (fleet.txt); the console prints the nodes and their lines that are not PASS.
std::string render_text(const fleet_report& report, bool every_line) {
  std::string out = "hdbench fleet: " + std::to_string(report.nodes.size()) + " node(s), " +
                    std::to_string(report.kinds.size()) + " kind(s)\n" + kinds_text(report) + "\n";
  table_rows nodes;
  for (const auto& node : report.nodes) {
    std::string worst = "-";
    if (!node.lines.empty() && node.lines.front().result != grade::pass) {
      const auto& line = node.lines.front();
      worst = gpu_text(line.gpus) + " " + line.family + " " + line.figure + ": " + line.reason;
    }
    nodes.push_back({std::string(to_string(node.overall())), node.name, node.kind, std::to_string(node.passed),
                     std::to_string(node.warned), std::to_string(node.failed), worst});
  }
  out += "nodes, worst first\n" + text_table({"grade", "node", "kind", "PASS", "WARN", "FAIL", "worst line"}, nodes) + "\n";
  table_rows lines;
  std::vector<std::pair<const fleet_node*, const graded_line*>> all;
  for (const auto& node : report.nodes) {
    for (const auto& line : node.lines) {
      if (every_line || line.result == grade::fail || line.result == grade::warn) all.emplace_back(&node, &line);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second->result < b.second->result; });
  for (const auto& [node, line] : all) {
    lines.push_back({std::string(to_string(line->result)), node->name, gpu_text(line->gpus), line->family, line->figure,
                     value_text(*line), band_text(*line), from_centre_text(*line), line->reason});
  }
  out += std::string(every_line ? "every node x figure line" : "node x figure lines that are not PASS") + ", worst first\n";
  out += lines.empty() ? "(none)\n"
                       : text_table({"grade", "node", "GPU", "family", "figure", "value", "band", "from centre", "reason"}, lines);
  return out + fleet_summary_line(report) + "\n";
}

std::string render_junit(const fleet_report& report) {
  std::string cases;
  for (const auto& node : report.nodes) {
    cases += "  <testcase classname=\"hdbench.fleet\" name=\"" + xml_escape(node.name) + "\">\n";
    std::string failures, others;
    for (const auto& line : node.lines) {
      const auto text = std::string(to_string(line.result)) + " " + gpu_text(line.gpus) + " " + line.family + " " + line.figure +
                        ": " + value_text(line) + "; " + line.reason + "\n";
      if (line.result == grade::fail) failures += text;
      else if (line.result == grade::warn) others += text;
    }
    if (!failures.empty()) {
      cases += "    <failure message=\"" + xml_escape(std::to_string(node.failed) + " FAIL line(s) on " + node.name) + "\">" +
               xml_escape(failures) + "</failure>\n";
    }
    cases += "    <system-out>" + xml_escape(node.kind + "; " + node.dir.string() + "\n" + others) + "</system-out>\n";
    cases += "  </testcase>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hdbench fleet\" tests=\"" +
         std::to_string(report.nodes.size()) + "\" failures=\"" + std::to_string(report.failed_nodes()) + "\">\n" + cases +
         "  <system-out>" + xml_escape(kinds_text(report) + fleet_summary_line(report)) + "</system-out>\n</testsuite>\n";
}

// `value` to 6 significant digits, which json prints short ("55.2999", not 17 digits): off by 5
// parts in a million at most, which no figure shows, and the plot input of a thousand nodes stays
// a few MB.
double plotted(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return std::strtod(text, nullptr);
}

std::string slug(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

std::string fleet_summary_line(const fleet_report& report) {
  int warned = 0, passed = 0;
  std::vector<std::string> failing;
  for (const auto& node : report.nodes) {
    if (node.failed > 0) failing.push_back(node.name);
    else if (node.warned > 0) ++warned;
    else ++passed;
  }
  std::string names;
  for (std::size_t i = 0; i < failing.size() && i < 20; ++i) names += (i ? ", " : "") + failing[i];
  if (failing.size() > 20) names += ", ...";
  return "hdbench fleet: " + std::string(failing.empty() ? "PASS" : "FAIL") + " \u2014 " + std::to_string(failing.size()) +
         " of " + std::to_string(report.nodes.size()) + " nodes FAIL" + (failing.empty() ? "" : " (" + names + ")") + ", " +
         std::to_string(warned) + " WARN, " + std::to_string(passed) + " PASS";
}

json to_json(const fleet_report& report) {
  json kinds = json::array();
  for (const auto& kind : report.kinds) {
    kinds.push_back({{"kind", kind.kind},
                     {"fingerprint", kind.fingerprint ? *kind.fingerprint : json(nullptr)},
                     {"basis", to_string(kind.basis)},
                     {"set", kind.set ? json{{"name", *kind.set}, {"dir", display_path(kind.set_dir)}, {"runs", kind.set_runs}}
                                      : json(nullptr)},
                     {"nodes", kind.nodes},
                     {"tests", kind.tests},
                     {"k", kind.k},
                     {"regraded", kind.regraded},
                     {"notes", kind.notes}});
  }
  json nodes = json::array();
  for (const auto& node : report.nodes) {
    json lines = json::array();
    for (const auto& line : node.lines) lines.push_back(to_json(line));
    nodes.push_back({{"name", node.name},
                     {"hostname", node.hostname},
                     {"slurm_node_name", node.slurm_node_name.empty() ? json(nullptr) : json(node.slurm_node_name)},
                     {"dir", node.dir.string()},
                     {"run", node.run},
                     {"earlier_runs", node.earlier_runs},
                     {"kind", node.kind},
                     {"grade", to_string(node.overall())},
                     {"pass", node.passed},
                     {"warn", node.warned},
                     {"fail", node.failed},
                     {"lines", std::move(lines)}});
  }
  const auto failing = report.failing_hostnames();
  return {{"fleet_version", 2},
          {"alpha", report.alpha},
          {"spread_floor", fleet_spread_floor},
          {"kinds", std::move(kinds)},
          {"nodes", std::move(nodes)},
          {"summary",
           {{"nodes", report.nodes.size()},
            {"fail", report.failed_nodes()},
            {"failing_hostnames", failing},
            {"nodelist", slurm_hostlist(report.failing_slurm_nodes())},
            {"line", fleet_summary_line(report)}}},
          {"exit_code", report.exit_code()}};
}

json fleet_plot_json(const fleet_report& report) {
  json names = json::array(), hostnames = json::array(), grades = json::array(), reasons = json::array();
  // A line the figures draw: a dot, and a cell of the heatmap.
  const auto banded = [](const graded_line& line) { return line.is_figure() && line.value && line.band; };
  // Why a node is FAIL or WARN where no dot or cell can show it (no check.json, a health line): its
  // worst such line, "" when it has none. fleet's own lines about the node as a whole (family
  // "node") say what is missing in their reason alone. hdbplots/fleet.py from_fleet() derives the
  // same text from a fleet.json; fleet_figures_check.py holds the two equal.
  const auto unplotted = [&](const fleet_node& node) {
    for (const auto& line : node.lines) {
      if ((line.result != grade::fail && line.result != grade::warn) || banded(line)) continue;
      return (line.gpus.empty() ? "" : gpu_text(line.gpus) + " ") +
             (line.family == "node" ? "" : line.family + " " + line.figure + ": ") + line.reason;
    }
    return std::string();
  };
  struct columns {
    std::string unit;
    json node = json::array(), gpu = json::array(), grade = json::array(), value = json::array(), low = json::array(),
         high = json::array(), centre = json::array(), rule = json::array();
    std::vector<const graded_line*> rules;  // a line of each distinct rule: one, or a few where hdbench versions differ
  };
  std::map<std::pair<std::string, std::string>, columns> figures;  // sorted by family, figure: the files' order
  for (std::size_t i = 0; i < report.nodes.size(); ++i) {
    const auto& node = report.nodes[i];
    names.push_back(node.name);
    hostnames.push_back(node.hostname);
    grades.push_back(to_string(node.overall()));
    reasons.push_back(unplotted(node));
    for (const auto& line : node.lines) {
      if (!banded(line)) continue;
      auto& c = figures[{line.family, line.figure}];
      if (c.unit.empty()) c.unit = line.unit;
      c.node.push_back(i);
      c.gpu.push_back(gpu_text(line.gpus));
      c.grade.push_back(to_string(line.result));
      c.value.push_back(plotted(*line.value));
      c.low.push_back(plotted(line.band->low));
      c.high.push_back(plotted(line.band->high));
      c.centre.push_back(plotted(line.band->centre));
      // The rule that judged the line (its direction, tolerance and host flag, as fleet.json's
      // line holds them), listed once per figure: the heatmap weighs each line's distance from its
      // centre by its own tolerance, in its own direction.
      const auto known = std::find_if(c.rules.begin(), c.rules.end(), [&](const graded_line* other) {
        return other->direction == line.direction && other->rule.tolerance == line.rule.tolerance &&
               other->rule.host_bound == line.rule.host_bound;
      });
      c.rule.push_back(known - c.rules.begin());
      if (known == c.rules.end()) c.rules.push_back(&line);
    }
  }
  json list = json::array();
  for (auto& [key, c] : figures) {
    json rules = json::array();
    for (const auto* line : c.rules) {
      rules.push_back({{"better", line->direction ? json(to_string(*line->direction)) : json(nullptr)},
                       {"tolerance", line->rule.tolerance ? json(*line->rule.tolerance) : json(nullptr)},
                       {"host_bound", line->rule.host_bound}});
    }
    list.push_back({{"family", key.first},
                    {"figure", key.second},
                    {"unit", c.unit},
                    {"node", std::move(c.node)},
                    {"gpu", std::move(c.gpu)},
                    {"grade", std::move(c.grade)},
                    {"value", std::move(c.value)},
                    {"low", std::move(c.low)},
                    {"high", std::move(c.high)},
                    {"centre", std::move(c.centre)},
                    {"rules", std::move(rules)},
                    {"rule", std::move(c.rule)}});
  }
  return {{"fleet_plot_version", 2},
          {"nodes",
           {{"name", std::move(names)}, {"hostname", std::move(hostnames)}, {"grade", std::move(grades)},
            {"reason", std::move(reasons)}}},
          {"figures", std::move(list)}};
}

std::string render_fleet(const fleet_report& report, output_format format) {
  switch (format) {
    case output_format::junit: return render_junit(report);
    case output_format::json: return to_json(report).dump() + "\n";
    case output_format::prometheus: return render_prometheus(report);
    case output_format::text:
    case output_format::markdown: break;
  }
  return render_text(report, false);
}

fs::path default_fleet_out(const std::vector<fs::path>& args) {
  auto stamp = make_run_id(std::chrono::system_clock::now(), "x");
  stamp = stamp.substr(0, stamp.find('-'));  // 20261202T101500Z
  std::optional<fs::path> common;
  for (const auto& arg : args) {
    auto absolute = fs::absolute(arg).lexically_normal();
    if (!absolute.has_filename()) absolute = absolute.parent_path();  // "nodes/" is "nodes"
    if (!common) {
      common = absolute;
      continue;
    }
    fs::path shared;
    for (auto a = common->begin(), b = absolute.begin(); a != common->end() && b != absolute.end() && *a == *b; ++a, ++b) {
      shared /= *a;
    }
    common = shared;
  }
  const auto parent = common && common->has_parent_path() ? common->parent_path() : fs::current_path();
  return parent / ("fleet-" + stamp);
}

namespace {

// Finds the Python and runs plots/plot_fleet.py on `input`; what happened goes to `log`.
void draw_fleet_figures(const fs::path& plot_dir, const fs::path& input, std::string& log) {
  // The same Python as the run's plots (plots.cpp: $HDBENCH_PYTHON, python3, /usr/bin/python3).
  const auto options = plot_options_from_environment();
  const auto script = options.plots_dir / "plot_fleet.py";
  if (!fs::exists(script)) {
    log = "hdbench fleet: figures skipped, " + script.string() + " not found (set HDBENCH_PLOTS_DIR)\n";
    return;
  }
  const auto found = find_plot_python(options);
  if (!found.python) {
    log = "hdbench fleet: figures skipped, no Python with matplotlib" +
          (found.override_problem.empty() ? "" : " (" + found.override_problem + ")") + "\n";
    return;
  }
  child_spec spec;
  spec.argv = {*found.python, script.string(), input.string(), "-o", plot_dir.string()};
  spec.stdout_path = plot_dir / "plot_fleet.log";
  spec.stderr_path = plot_dir / "plot_fleet.stderr.log";
  spec.timeout = std::chrono::minutes(5);
  const auto result = run_with_deadline(spec);
  log = result.succeeded() ? "hdbench fleet: figures in " + plot_dir.string() + "\n"
                           : "hdbench fleet: plot_fleet.py " + result.describe() + "; see " + spec.stderr_path.string() + "\n";
}

}  // namespace

void write_fleet_outputs(const fleet_report& report, const std::string& document, const fs::path& out_dir, bool plots,
                         std::ostream& log) {
  fs::create_directories(out_dir);
  // Marked first: a fleet over the parent of this directory never grades it as a node.
  atomic_write_file(out_dir / fleet_output_marker, "written by hdbench fleet: not a node's run directory\n");
  // The figures are drawn from plots/fleet_plot.json (what they show, a tenth of fleet.json), by a
  // Python found and run while fleet.json and fleet.txt are written.
  std::string plot_log;
  std::jthread drawing;  // joined before plot_log goes
  if (plots) {
    const auto plot_dir = out_dir / "plots";
    fs::create_directories(plot_dir);
    const auto input = plot_dir / "fleet_plot.json";
    atomic_write_file(input, fleet_plot_json(report).dump() + "\n");
#ifdef __GLIBC__
    // The freed JSON trees (hundreds of MB at a thousand nodes) back to the system before the
    // Python starts: the two are resident together, and under 1 GiB together.
    ::malloc_trim(0);
#endif
    drawing = std::jthread([plot_dir, input, &plot_log] {
      try {
        draw_fleet_figures(plot_dir, input, plot_log);
      } catch (const std::exception& e) {
        plot_log = std::string("hdbench fleet: figures skipped: ") + e.what() + "\n";
      }
    });
  }
  atomic_write_file(out_dir / "fleet.json", document);
  atomic_write_file(out_dir / "fleet.txt", render_text(report, true));
  log << "hdbench fleet: wrote " << (out_dir / "fleet.json").string() << " and fleet.txt\n";
  if (drawing.joinable()) drawing.join();
  log << plot_log;
}

std::string kind_dir_name(const json& fingerprint) {
  auto name = fingerprint.value("gpu_name", std::string("unknown"));
  if (name.starts_with("NVIDIA ")) name = name.substr(7);
  auto dir = slug(name);
  const int gpus = fingerprint.value("gpus", 1);
  if (gpus > 1) dir += "-x" + std::to_string(gpus);
  return dir.empty() ? "unknown" : dir;
}

std::vector<std::string> learn_fleet_sets(const fleet_report& report, const fs::path& set_root) {
  std::vector<std::string> log;
  std::set<std::string> used;
  for (const auto& kind : report.kinds) {
    if (!kind.fingerprint) continue;
    auto name = kind_dir_name(*kind.fingerprint);
    // Two kinds of one GPU model and count (a PCIe or NVLink difference) get the whole kind in the name.
    if (used.contains(name)) name += "-" + slug(kind.kind);
    used.insert(name);
    const auto set_dir = set_root / name;
    std::vector<std::pair<const fleet_node*, std::string>> kept_out;
    std::vector<std::string> added;
    for (const auto& node : report.nodes) {
      if (node.kind != kind.kind) continue;
      if (node.failed > 0) {
        std::string why;
        int shown = 0;
        for (const auto& line : node.lines) {
          if (line.result != grade::fail || shown++ >= 3) continue;
          why += (why.empty() ? "" : "; ") + gpu_text(line.gpus) + " " + line.family + " " + line.figure + ": " + line.reason;
        }
        kept_out.emplace_back(&node, "FAIL: " + why);
        continue;
      }
      if (!node.has_results) {
        kept_out.emplace_back(&node, "no results.csv in its run directory (a set member needs its medians)");
        continue;
      }
      try {
        const auto member = add_to_reference_set(set_dir, node.dir, false);
        added.push_back(member.run_id);
      } catch (const harness_error& e) {
        kept_out.emplace_back(&node, std::string("not added: ") + e.what());
      }
    }
    if (added.empty() && kept_out.empty()) continue;
    fs::create_directories(set_dir);
    std::string md = "# Kept out of this set\n\nWritten by `hdbench fleet --learn` from a fleet of " +
                     std::to_string(kind.nodes) + " node(s) of kind " + kind.kind + " (graded against " + basis_text(kind) +
                     "). " + std::to_string(added.size()) +
                     " node(s) joined the set: every node that did not FAIL, WARN included, so the set is not trimmed "
                     "to the fleet's own band. A node that FAILed is outside its peers' band *and* worse than the "
                     "tolerance that matters for a node: a fault, not a distance (docs/fleet.md, `--learn`).\n\n";
    if (kept_out.empty()) {
      md += "No node was kept out.\n";
    } else {
      table_rows rows;
      for (const auto& [node, why] : kept_out) rows.push_back({node->name, node->dir.filename().string(), why});
      md += markdown_table({"node", "run directory", "why"}, rows);
    }
    atomic_write_file(set_dir / "KEPT_OUT.md", md);
    log.push_back("hdbench fleet --learn: " + set_dir.string() + ": " + std::to_string(added.size()) + " node(s) added, " +
                  std::to_string(kept_out.size()) + " kept out (KEPT_OUT.md)");
  }
  return log;
}

}  // namespace hdb
