// hdbench check and fleet, as Prometheus series (prometheus_render.hpp): every graded line's grade,
// and a figure's value, band and rule in base units; the node's verdict and when it measured.
// Labels are what the declarations and the node list bound (node, kind, family, figure, gpu,
// grade): never a time, a run id or a reason.
#include "hdb/harness/verdict/prometheus_render.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "hdb/harness/common/files.hpp"

namespace hdb {
namespace {

// One node as the series see it: check's report is one, fleet's nodes are many.
struct node_view {
  const std::string& name;
  const std::string& kind;
  grade verdict;
  std::optional<std::int64_t> measured_unix_seconds;
  const std::vector<graded_line>& lines;
};

// A declared unit as Prometheus names it: the base unit in the metric's name and the factor from
// the declared unit to it. Units no family declares are spelled out as they are (unit_of).
struct base_unit {
  std::string_view declared;
  std::string suffix;  // "_bytes_per_second"; "" for a plain number
  double scale;
  std::string words;   // for HELP: "in seconds"
};

const std::array<base_unit, 11> known_units{{
    {"GB/s", "_bytes_per_second", 1e9, "in bytes per second"},
    {"us", "_seconds", 1e-6, "in seconds"},
    {"ms", "_seconds", 1e-3, "in seconds"},
    {"ns", "_seconds", 1e-9, "in seconds"},
    {"s", "_seconds", 1, "in seconds"},
    {"B", "_bytes", 1, "in bytes"},
    {"us/MiB", "_seconds_per_byte", 1e-6 / 1048576, "in seconds per byte"},
    {"ratio", "_ratio", 1, "as a ratio"},
    {"%", "_ratio", 0.01, "as a ratio"},
    {"count", "", 1, "as a plain number"},
    {"", "", 1, "as a plain number"},
}};

base_unit unit_of(std::string_view declared) {
  for (const auto& unit : known_units) {
    if (unit.declared == declared) return unit;
  }
  // "joules/s" -> "_joules_per_s": the declared unit, spelled as a metric name may be.
  std::string suffix;
  for (const char c : declared) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/') suffix += "_per_";
    else if (std::isalnum(u)) suffix += static_cast<char>(std::tolower(u));
    else if (suffix.empty() || suffix.back() != '_') suffix += '_';
  }
  while (!suffix.empty() && suffix.back() == '_') suffix.pop_back();
  if (!suffix.empty() && suffix.front() != '_') suffix.insert(suffix.begin(), '_');
  return {declared, suffix, 1, "in its declared unit, " + std::string(declared)};
}

// A label value in the text format: backslash, double quote and newline escaped.
std::string label_value(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string node_label(const std::string& node) { return "node=\"" + label_value(node) + "\""; }

// 15 significant digits: a GB/s median x 1e9 prints 55300000000, not 55300000000.000008.
std::string number_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

// "0", "0,1" (a pair), "" (the node as a whole).
std::string gpu_label(const std::vector<int>& gpus) {
  std::string text;
  for (std::size_t i = 0; i < gpus.size(); ++i) text += (i ? "," : "") + std::to_string(gpus[i]);
  return text;
}

// A family's samples: each series' labels are written once and shared by every family that has
// the series (a thousand nodes x 8 GPUs x 16 figures hold 128,000 of them, in up to 8 families),
// its numbers kept as numbers until written.
using samples = std::vector<std::pair<const std::string*, double>>;

void add_family(std::string& out, std::string_view name, std::string_view help, const samples& rows) {
  if (rows.empty()) return;
  out.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ").append(name).append(" gauge\n");
  for (const auto& [labels, value] : rows) out.append(name).append("{").append(*labels).append("} ").append(number_text(value)).append("\n");
}

// The labels up to the closing quote of the first value: `node="gpu01"` of `node="gpu01",kind="..."`.
std::string_view first_label(std::string_view labels) {
  const auto open = labels.find('"');
  if (open == std::string_view::npos) return {};
  for (auto i = open + 1; i < labels.size(); ++i) {
    if (labels[i] == '\\') ++i;
    else if (labels[i] == '"') return labels.substr(0, i + 1);
  }
  return {};
}

// What the textfile being replaced says that this one needs: each node's measured time and each
// figure's WARN count, keyed by their labels as written (this file writes them the same way).
struct previous_textfile {
  std::map<std::string, std::int64_t, std::less<>> measured;  // `node="gpu01"` -> unix seconds
  std::map<std::string, long, std::less<>> warn_runs;         // a figure's labels -> runs
};

constexpr std::string_view measured_name = "hdbench_node_measured_timestamp_seconds";
constexpr std::string_view warn_runs_name = "hdbench_figure_warn_runs";

previous_textfile read_previous(std::string_view text) {
  previous_textfile previous;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto open = line.find('{'), close = line.rfind("} ");
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) continue;
    const auto name = line.substr(0, open), labels = line.substr(open + 1, close - open - 1);
    const auto value = line.substr(close + 2);
    long long number = 0;  // both are whole numbers as this file writes them
    const auto [end_of_number, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end_of_number != value.data() + value.size()) continue;
    if (name == measured_name) previous.measured.emplace(std::string(first_label(labels)), number);
    else if (name == warn_runs_name) previous.warn_runs.emplace(std::string(labels), static_cast<long>(number));
  }
  return previous;
}

// One series of a node's lines: several lines of one figure on one GPU (a health line per other
// process seen) are one series with the worst of their grades.
struct figure_series {
  std::string labels;
  grade worst;
  const graded_line* line;  // the first: a figure's value and band are its own
};

std::vector<figure_series> series_of(const node_view& node) {
  std::vector<figure_series> out;
  std::map<std::string, std::size_t> index;
  for (const auto& line : node.lines) {
    auto labels = node_label(node.name) + ",family=\"" + label_value(line.family) + "\",figure=\"" + label_value(line.figure) +
                  "\",gpu=\"" + gpu_label(line.gpus) + "\"";
    const auto [it, added] = index.emplace(labels, out.size());
    if (added) out.push_back({std::move(labels), line.result, &line});
    else out[it->second].worst = std::min(out[it->second].worst, line.result);  // the enum sorts worst first
  }
  return out;
}

// A name (of a metric or label) as Prometheus allows it: [a-zA-Z0-9_], not starting with a digit.
std::string metric_word(std::string_view text) {
  std::string word;
  for (const char c : text) word += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (word.empty() || std::isdigit(static_cast<unsigned char>(word.front()))) word.insert(word.begin(), '_');
  return word;
}

// The HELP of each GPU health counter a health line carries (graded_line::counters, check_gpu_record.cpp).
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> gpu_counter_help{{
    {"ecc_errors",
     "ECC errors the GPU counted, by type (corrected or uncorrected; volatile: since the driver loaded, aggregate: the GPU's "
     "lifetime), as the graded run read them at its end"},
    {"remapped_rows",
     "HBM rows remapped (state correctable, uncorrectable: counts) and the remapper's flags (pending, failure: 1 yes, 0 no) "
     "at the graded run's end; a pending remap needs a GPU reset"},
    {"remap_banks", "Memory banks by spare rows left (availability max, high, partial, low, none), from the remap histogram"},
    {"retired_pages",
     "Pages retired (cause single_bit_ecc, double_bit_ecc: counts; pending: 1 when a retirement waits for a GPU reset)"},
    {"xid_events", "Xid events the driver logged on the GPU during the graded run, by Xid number"},
    {"reset_status",
     "The driver's reset flags at the graded run's end (flag reset_required, drain_and_reset_recommended): 1 yes, 0 no"},
}};

std::string counter_help(std::string_view name) {
  for (const auto& [known, help] : gpu_counter_help) {
    if (known == name) return std::string(help);
  }
  return "A GPU health counter hdbench check read (docs/machine-output.md)";
}

std::string render(const std::vector<node_view>& nodes, std::string_view previous_text) {
  const auto previous = read_previous(previous_text);
  std::deque<std::string> labels_of;  // every series' labels, at addresses that stay put
  const auto keep = [&labels_of](std::string labels) { return &labels_of.emplace_back(std::move(labels)); };
  samples node_grade, measured, line_counts, figure_grade, warn_runs, tolerance, of_peak, tries, unconfirmed;
  // Per measured quantity, one family per base unit: a name holds one unit.
  struct unit_families {
    std::string words;
    samples value, low, high, centre;
  };
  std::map<std::string, unit_families> by_unit;
  // The health lines' counters, per counter name: hdbench_gpu_<name>{node, gpu, its labels}.
  struct counter_family {
    std::string help;
    samples rows;
    std::set<std::string_view> seen;  // a series once, though several lines of an item carry it
  };
  std::map<std::string, counter_family> by_counter;
  for (const auto& node : nodes) {
    const auto* node_labels = keep(node_label(node.name) + ",kind=\"" + label_value(node.kind) + "\"");
    node_grade.emplace_back(node_labels, prometheus_grade_value(node.verdict));
    std::optional<std::int64_t> measured_before;
    if (const auto it = previous.measured.find(node_label(node.name)); it != previous.measured.end()) measured_before = it->second;
    if (node.measured_unix_seconds) measured.emplace_back(node_labels, static_cast<double>(*node.measured_unix_seconds));
    const bool same_run = node.measured_unix_seconds && measured_before == node.measured_unix_seconds;
    std::map<grade, int> counts{{grade::pass, 0}, {grade::warn, 0}, {grade::fail, 0}, {grade::not_graded, 0}};
    for (const auto& line : node.lines) ++counts[line.result];
    for (const auto& [g, n] : counts) {
      line_counts.emplace_back(keep(*node_labels + ",grade=\"" + std::string(to_string(g)) + "\""), n);
    }
    for (const auto& line : node.lines) {
      for (const auto& c : line.counters) {
        std::string labels = node_label(node.name) + ",gpu=\"" + gpu_label(line.gpus) + "\"";
        for (const auto& [label, value] : c.labels) {
          const auto name = metric_word(label);
          if (name != "node" && name != "gpu") labels += "," + name + "=\"" + label_value(value) + "\"";
        }
        auto& family = by_counter[metric_word(c.name)];
        if (family.help.empty()) family.help = counter_help(c.name);
        const auto* kept = keep(std::move(labels));
        if (family.seen.insert(*kept).second) family.rows.emplace_back(kept, c.value);
      }
    }
    for (auto& s : series_of(node)) {
      const auto* labels = keep(std::move(s.labels));
      figure_grade.emplace_back(labels, prometheus_grade_value(s.worst));
      long runs = 0;
      if (s.worst == grade::warn) {
        const auto it = previous.warn_runs.find(*labels);
        const long before = it == previous.warn_runs.end() ? 0 : it->second;
        runs = same_run ? std::max(before, 1L) : before + 1;
      }
      warn_runs.emplace_back(labels, static_cast<double>(runs));
      const auto& line = *s.line;
      // A WARN measured more than once is a transient hdbench run confirmed away; a FAIL measured once, unconfirmed.
      if (line.attempts.size() > 1) tries.emplace_back(labels, static_cast<double>(line.attempts.size()));
      if (line.confirmed == confirmation::unconfirmed) unconfirmed.emplace_back(labels, 1);
      if (line.rule.tolerance) tolerance.emplace_back(labels, *line.rule.tolerance);
      if (line.percent_of_peak) of_peak.emplace_back(labels, *line.percent_of_peak / 100);
      if (!line.value) continue;
      const auto unit = unit_of(line.unit);
      auto& families = by_unit[unit.suffix];
      families.words = unit.words;
      families.value.emplace_back(labels, *line.value * unit.scale);
      if (const auto& band = line.band) {
        families.low.emplace_back(labels, band->low * unit.scale);
        families.high.emplace_back(labels, band->high * unit.scale);
        families.centre.emplace_back(labels, band->centre * unit.scale);
      }
    }
  }
  // One allocation for the text (129 MB at a thousand nodes of 8 GPUs): a sample is its labels,
  // a name of at most 48 characters and a number of at most 24.
  std::size_t bytes = 0;
  const auto count = [&bytes](const samples& rows) {
    for (const auto& [labels, value] : rows) bytes += labels->size() + 76;
  };
  for (const auto* rows : {&node_grade, &measured, &line_counts, &figure_grade, &warn_runs, &tolerance, &of_peak, &tries, &unconfirmed}) {
    count(*rows);
  }
  for (const auto& [suffix, families] : by_unit) {
    for (const auto* rows : {&families.value, &families.low, &families.high, &families.centre}) count(*rows);
  }
  for (const auto& [name, family] : by_counter) count(family.rows);
  std::string out;
  out.reserve(bytes + 64 * 1024);  // and the HELP and TYPE lines
  add_family(out, "hdbench_node_grade",
             "hdbench's verdict on the node: 0 PASS, 1 WARN, 2 FAIL (any FAIL line fails the node; docs/machine-output.md)",
             node_grade);
  add_family(out, measured_name,
             "When the node's graded run measured (meta.json finished_utc, else started_utc), unix seconds", measured);
  add_family(out, "hdbench_node_graded_lines", "The node's graded lines (figures and health) by grade (PASS, WARN, FAIL, INFO)",
             line_counts);
  add_family(out, "hdbench_figure_grade",
             "A figure's or health item's grade on a GPU (gpu=\"\": the node): 0 PASS, 1 WARN, 2 FAIL, -1 INFO (not graded)",
             figure_grade);
  add_family(out, "hdbench_figure_tries",
             "How many times the run measured the figure, where more than once: hdbench run measured it again after it "
             "FAILed (a WARN here is a transient confirmed away, a FAIL one that failed on every try)",
             tries);
  add_family(out, "hdbench_figure_unconfirmed",
             "1 on a FAIL measured once, not confirmed (hdbench run --confirm=off, or graded again by check)", unconfirmed);
  add_family(out, warn_runs_name,
             "Runs in a row, this one included, in which the figure graded WARN (0: not WARN now), as this textfile has "
             "counted them",
             warn_runs);
  for (const auto& [suffix, families] : by_unit) {
    const auto in = ", " + families.words + " (converted from the declared unit: docs/machine-output.md)";
    add_family(out, "hdbench_figure_value" + suffix, "A figure's value as graded (its run's median)" + in, families.value);
    add_family(out, "hdbench_figure_band_low" + suffix, "The low edge of the band the figure was graded against" + in,
               families.low);
    add_family(out, "hdbench_figure_band_high" + suffix, "The high edge of the band the figure was graded against" + in,
               families.high);
    add_family(out, "hdbench_figure_band_centre" + suffix,
               "The centre of that band (the reference set's or the peers')" + in, families.centre);
  }
  add_family(out, "hdbench_figure_tolerance_ratio",
             "The change worse than the band's centre that FAILs the figure (its declared tolerance; 0.03 = 3 %)", tolerance);
  add_family(out, "hdbench_figure_peak_ratio",
             "A figure graded against the traffic class's theoretical peak (no reference set): its value over that peak",
             of_peak);
  for (const auto& [name, family] : by_counter) add_family(out, "hdbench_gpu_" + name, family.help, family.rows);
  return out;
}

}  // namespace

int prometheus_grade_value(grade value) {
  switch (value) {
    case grade::pass: return 0;
    case grade::warn: return 1;
    case grade::fail: return 2;
    case grade::not_graded: return -1;
  }
  return -1;
}

std::string render_prometheus(const check_report& report, std::string_view previous) {
  return render({node_view{report.hostname, report.node_kind, report.overall(), report.measured_unix_seconds, report.lines}},
                previous);
}

std::string render_prometheus(const fleet_report& report, std::string_view previous) {
  std::vector<node_view> nodes;
  nodes.reserve(report.nodes.size());
  for (const auto& node : report.nodes) {
    nodes.push_back(node_view{node.name, node.kind, node.overall(), node.measured_unix_seconds, node.lines});
  }
  return render(nodes, previous);
}

std::string read_prometheus_textfile(const std::filesystem::path& dir) {
  return try_read_text_file(dir / prometheus_textfile_name).value_or("");
}

void write_prometheus_textfile(const std::filesystem::path& dir, std::string_view text) {
  atomic_write_file(dir / prometheus_textfile_name, text);
}

}  // namespace hdb
