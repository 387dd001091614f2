// hdbench fleet, the grading: read each node's check.json and meta.json, group by kind, and grade
// each figure against the kind's set (check.json's own grades) or the node's peers (a robust
// leave-one-out band, then check's rule). docs/fleet.md gives the method and its reasons.
#include "hdb/harness/fleet.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <map>
#include <numbers>
#include <set>
#include <utility>

#include "hdb/harness/installed_declarations.hpp"
#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/noise_model.hpp"
#include "hdb/harness/reference_set.hpp"
#include "hdb/harness/results.hpp"
#include "hdb/harness/student_t.hpp"
#include "hdb/harness/tables.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool is_run_dir(const fs::path& dir) { return fs::exists(dir / "meta.json") || fs::exists(dir / "check.json"); }

// meta.json without its families (declarations and activity snapshots: most of a one-H200 run's
// 156 KB): a thousand nodes are parsed in a fraction of the time and memory.
std::optional<json> read_meta_lean(const fs::path& file) {
  const auto text = try_read_text_file(file);
  if (!text) return std::nullopt;
  const json::parser_callback_t drop_families = [](int depth, json::parse_event_t event, json& parsed) {
    return !(depth == 1 && event == json::parse_event_t::key && parsed == "families");
  };
  auto meta = json::parse(*text, drop_families, false);
  if (meta.is_discarded() || !meta.is_object()) return std::nullopt;
  return meta;
}

std::optional<json> read_json_file(const fs::path& file) {
  const auto text = try_read_text_file(file);
  if (!text) return std::nullopt;
  auto value = json::parse(*text, nullptr, false);
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  return value;
}

std::optional<double> number_or_null(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

grade grade_from_text(const std::string& text) {
  if (text == "FAIL") return grade::fail;
  if (text == "WARN") return grade::warn;
  if (text == "PASS") return grade::pass;
  return grade::not_graded;
}

fleet_line line_from_check_json(const json& entry) {
  fleet_line line;
  line.result = grade_from_text(entry.value("grade", std::string()));
  if (const auto gpus = entry.find("gpus"); gpus != entry.end() && gpus->is_array()) {
    for (const auto& g : *gpus) {
      if (g.is_number_integer()) line.gpus.push_back(g.get<int>());
    }
  }
  line.family = entry.value("family", std::string());
  line.label = entry.value("figure", std::string());
  line.unit = entry.value("unit", std::string());
  line.reading = entry.value("reading", std::string());
  line.reason = entry.value("reason", std::string());
  line.value = number_or_null(entry, "value");
  line.tolerance = number_or_null(entry, "tolerance");
  line.host_bound = entry.value("host_bound", false);
  // check.json's "better" (written since hdbench check carries the row's direction); an older
  // check.json has none, and the declarations give it (direction_finder).
  if (const auto b = entry.find("better"); b != entry.end() && b->is_string()) {
    try {
      line.direction = parse_better(b->get<std::string>());
    } catch (const std::exception&) {
      // an unknown word: the declarations decide, as for an older check.json
    }
  }
  line.figure = line.family != "health" && !line.label.empty();
  if (const auto expected = entry.find("expected"); expected != entry.end() && expected->is_object()) {
    line.centre = number_or_null(*expected, "centre");
    line.low = number_or_null(*expected, "low");
    line.high = number_or_null(*expected, "high");
    line.peers = expected->value("runs", std::size_t{0});
  }
  line.basis = "check";
  return line;
}

fleet_line line_from_check(const check_line& source) {
  fleet_line line;
  line.result = source.result;
  line.gpus = source.gpus;
  line.family = source.family;
  line.label = source.label;
  line.unit = source.unit;
  line.reading = source.reading;
  line.reason = source.reason;
  line.value = source.value;
  line.tolerance = source.tolerance;
  line.host_bound = source.host_bound;
  line.direction = source.better_direction;
  line.figure = source.family != "health";
  if (const auto& band = source.expected.band) {
    line.centre = band->centre;
    line.low = band->low;
    line.high = band->high;
    line.peers = band->runs;
  }
  line.basis = "set";
  return line;
}

fleet_line node_line(std::string label, std::string reason) {
  fleet_line line;
  line.result = grade::fail;
  line.family = "node";
  line.label = std::move(label);
  line.reason = std::move(reason);
  line.basis = "node";
  return line;
}

// What one directory says about its node, before any grading.
struct loaded_node {
  fleet_node node;
  std::optional<json> meta;         // lean (no families)
  std::optional<node_kind> kind;
  bool has_check = false;
  bool check_against_set = false;   // check.json's "reference" names a set
};

loaded_node load_node(const fs::path& given) {
  // "nodes/gpu01/" names gpu01, as "nodes/gpu01" does.
  const auto dir = given.filename().empty() ? given.parent_path() : given;
  loaded_node loaded;
  auto& node = loaded.node;
  node.dir = dir;
  node.run = dir.filename().string();
  node.hostname = dir.filename().string();
  node.kind = "unknown";
  node.has_results = fs::exists(dir / "results.csv");
  loaded.meta = read_meta_lean(dir / "meta.json");
  if (loaded.meta) {
    const auto& meta = *loaded.meta;
    node.run = meta.value("run_id", node.run);
    if (const auto n = meta.find("node"); n != meta.end() && n->is_object() && n->contains("hostname") &&
                                          (*n)["hostname"].is_string()) {
      node.hostname = (*n)["hostname"].get<std::string>();
    } else if (const auto h = meta.find("host"); h != meta.end() && h->is_object() && h->contains("hostname") &&
                                                 (*h)["hostname"].is_string()) {
      node.hostname = (*h)["hostname"].get<std::string>();
    }
    try {
      loaded.kind = kind_of(meta);
      node.kind = describe(*loaded.kind);
    } catch (const harness_error&) {
      // a run whose probe failed has no kind: it is graded alone, as unknown
    }
  }
  const auto check = read_json_file(dir / "check.json");
  if (!loaded.meta && !check) {
    const bool empty = !fs::exists(dir / "results.csv");
    node.lines.push_back(node_line("run", empty ? "no run directory: the run did not start, or crashed before writing meta.json"
                                                : "no meta.json or check.json: the run did not finish"));
    return loaded;
  }
  if (!check) {
    node.lines.push_back(node_line("check.json", fs::exists(dir / "check.json") ? "check.json unreadable: the run did not finish cleanly"
                                                                                : "no check.json: the run did not finish"));
    return loaded;
  }
  loaded.has_check = true;
  loaded.check_against_set = check->contains("reference") && (*check)["reference"].is_object();
  if (const auto lines = check->find("lines"); lines != check->end() && lines->is_array()) {
    for (const auto& entry : *lines) {
      if (entry.is_object()) node.lines.push_back(line_from_check_json(entry));
    }
  }
  if (!loaded.kind) node.lines.push_back(node_line("meta.json", "no node kind in meta.json (the probe did not run): graded alone"));
  return loaded;
}

// The direction of a figure from its family's declaration: a check's label names its metric; a
// gating headline's label is "<case> <metric> (parameters)", or "<metric> (...)" where case and
// metric share the name (check.cpp's labels).
std::optional<better> direction_in(const family_declaration& declaration, const std::string& label) {
  for (const auto& check : declaration.checks) {
    if (label == check.label || label.starts_with(check.label + " ")) {
      if (const auto* metric = declaration.metric(check.metric)) return metric->direction;
    }
  }
  const auto head = label.substr(0, label.find(" ("));
  const auto space = head.rfind(' ');
  if (const auto* metric = declaration.metric(space == std::string::npos ? head : head.substr(space + 1))) {
    return metric->direction;
  }
  return std::nullopt;
}

// The declarations that give the figures their direction where check.json does not (one written
// before check wrote "better"): the judging hdbench's installed ones (as check judges by them),
// else the first node's meta.json of the kind that records the family.
class direction_finder {
 public:
  explicit direction_finder(fs::path schema_dir) : schema_dir_(std::move(schema_dir)) {}

  std::optional<better> find(const std::string& family, const std::string& label, const std::vector<fs::path>& metas) {
    const auto key = family + "\x1f" + label;
    if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
    const auto* declaration = declaration_of(family, metas);
    auto direction = declaration ? direction_in(*declaration, label) : std::nullopt;
    cache_.emplace(key, direction);
    return direction;
  }

 private:
  const family_declaration* declaration_of(const std::string& family, const std::vector<fs::path>& metas) {
    if (const auto it = declarations_.find(family); it != declarations_.end()) return it->second ? &*it->second : nullptr;
    std::optional<family_declaration> found;
    const auto installed = schema_dir_ / (family + ".json");
    if (fs::exists(installed)) {
      try {
        found = read_declaration(installed);
      } catch (const harness_error&) {
        // unreadable beside hdbench: the runs' own declaration below
      }
    }
    for (std::size_t i = 0; !found && i < metas.size() && i < 8; ++i) {
      const auto meta = read_json_file(metas[i]);
      if (!meta) continue;
      const auto families = meta->find("families");
      if (families == meta->end() || !families->contains(family)) continue;
      const auto& schema = (*families)[family];
      if (!schema.contains("schema") || !schema["schema"].is_object()) continue;
      try {
        found = parse_declaration(nlohmann::ordered_json(schema["schema"]));
      } catch (const declaration_error&) {
      }
    }
    auto& slot = declarations_[family];
    slot = std::move(found);
    return slot ? &*slot : nullptr;
  }

  fs::path schema_dir_;
  std::map<std::string, std::optional<family_declaration>> declarations_;
  std::map<std::string, std::optional<better>> cache_;
};

std::string percent_text(double fraction) {
  return format_fixed(100 * fraction, 1) + " %";
}

std::string signed_percent(double fraction) { return (fraction >= 0 ? "+" : "") + percent_text(fraction); }

// check's rule on one figure against its peers' band.
void grade_against_peers(fleet_line& line, const peer_band& band, better direction) {
  const double value = *line.value;
  verdict decision = verdict::same;
  const bool below = value < band.low, above = value > band.high;
  if (below || above) {
    const bool bad = direction == better::lower ? above : direction == better::higher ? below : true;
    decision = bad ? verdict::slower : verdict::faster;
  }
  const double worse = worse_by(value, band.centre, direction);
  line.result = judge_figure(decision, worse, line.tolerance, line.host_bound);
  line.centre = band.centre;
  line.low = band.low;
  line.high = band.high;
  line.peers = band.peers;
  line.basis = "peers";
  const auto centre = " (centre " + format_figure(band.centre) + ", " + std::to_string(band.peers) + " peers)";
  const std::string host = line.host_bound ? "host line: " : "";
  switch (decision) {
    case verdict::same:
      line.reason = host + "within its peers' band (" + signed_percent(value / band.centre - 1) + " from their centre " +
                    format_figure(band.centre) + ", " + std::to_string(band.peers) + " peers)";
      break;
    case verdict::faster:
      line.reason = host + "better than its peers by " + percent_text(-worse) + centre + ", outside their band" +
                    (line.host_bound ? ": a faster host" : "");
      break;
    case verdict::slower: {
      const auto tolerance = line.tolerance ? "the " + format_figure(100 * *line.tolerance) + " % that matters for a node"
                                            : std::string("no tolerance declared");
      line.reason = host + "worse than its peers by " + percent_text(worse) + centre + ", outside their band " +
                    (line.result == grade::fail ? "and beyond " + tolerance : "but within " + tolerance);
      break;
    }
  }
}

std::string figure_key(const fleet_line& line) {
  std::string key = line.family + "\x1f" + line.label + "\x1f";
  for (const int g : line.gpus) key += std::to_string(g) + ",";
  return key;
}

struct kind_group {
  std::optional<node_kind> kind;
  std::vector<std::size_t> members;  // indices into the loaded nodes
};

void grade_by_peers(std::vector<loaded_node>& loaded, const kind_group& group, fleet_kind& summary, double alpha,
                    direction_finder& directions) {
  std::vector<fs::path> metas;
  for (const auto i : group.members) metas.push_back(loaded[i].node.dir / "meta.json");
  struct slot {
    std::size_t node, line;
  };
  std::map<std::string, std::vector<slot>> figures;  // in key order: deterministic
  std::size_t no_direction = 0;
  for (const auto i : group.members) {
    auto& node = loaded[i].node;
    for (std::size_t l = 0; l < node.lines.size(); ++l) {
      auto& line = node.lines[l];
      if (!line.figure || !line.value || !(*line.value > 0)) continue;
      if (!line.direction) line.direction = directions.find(line.family, line.label, metas);
      if (!line.direction) {
        ++no_direction;
        continue;
      }
      figures[figure_key(line)].push_back({i, l});
    }
  }
  std::size_t tests = 0;
  for (const auto& [key, slots] : figures) {
    if (slots.size() > fleet_min_peers) tests += slots.size();
  }
  summary.tests = tests;
  std::size_t widest = 0;
  for (const auto& [key, slots] : figures) {
    if (slots.size() <= fleet_min_peers) {
      for (const auto& s : slots) {
        auto& line = loaded[s.node].node.lines[s.line];
        line.reason = "fewer than " + std::to_string(fleet_min_peers) + " peers measured it: check.json's grade kept; " + line.reason;
      }
      continue;
    }
    std::vector<double> values;
    values.reserve(slots.size());
    for (const auto& s : slots) values.push_back(*loaded[s.node].node.lines[s.line].value);
    const double k = fleet_band_k(alpha, tests, slots.size() - 1);
    if (slots.size() > widest) {
      widest = slots.size();
      summary.k = k;
    }
    const auto bands = leave_one_out_bands(values, k);
    for (std::size_t j = 0; j < slots.size(); ++j) {
      auto& line = loaded[slots[j].node].node.lines[slots[j].line];
      if (bands[j]) grade_against_peers(line, *bands[j], *line.direction);
    }
  }
  summary.basis = "peers";
  if (no_direction > 0) {
    summary.notes.push_back(std::to_string(no_direction) +
                            " figure line(s) carry no \"better\" and name no metric of their family's declaration: "
                            "check.json's grade kept");
  }
}

void grade_by_set(std::vector<loaded_node>& loaded, const kind_group& group, fleet_kind& summary,
                  const reference_set& set, const fleet_options& options) {
  summary.set = set.dir.filename().string();
  summary.set_dir = set.dir;
  summary.basis = "set " + *summary.set + " (" + std::to_string(set.runs.size()) + " runs)";
  for (const auto i : group.members) {
    auto& l = loaded[i];
    if (!l.has_check) continue;
    if (l.check_against_set) {
      for (auto& line : l.node.lines) {
        if (line.basis == "check") line.basis = "set";
      }
      continue;
    }
    // Made against peaks only (the set came later): graded again against it, which needs the
    // node's results.csv; without one its peaks grades stand.
    if (!l.node.has_results) continue;
    check_options check;
    check.reference = options.reference;
    check.alpha = options.alpha;
    const auto report = check_run(l.node.dir, check);
    l.node.lines.clear();
    for (const auto& line : report.lines) l.node.lines.push_back(line_from_check(line));
    ++summary.regraded;
  }
  if (summary.regraded > 0) {
    summary.notes.push_back(std::to_string(summary.regraded) +
                            " node(s) had a check.json made without the set: graded again against it (their results.csv)");
  }
}

int severity(grade g) {
  switch (g) {
    case grade::fail: return 0;
    case grade::warn: return 1;
    case grade::pass: return 2;
    case grade::not_graded: return 3;
  }
  return 3;
}

}  // namespace

double fleet_band_k(double alpha, std::size_t tests, std::size_t peers) {
  if (tests == 0 || peers == 0) return 0;
  const double df = std::max(1.0, 0.37 * (static_cast<double>(peers) - 1));
  const double p = 1 - alpha / (2 * static_cast<double>(tests));
  return student_t_quantile(p, df) * std::sqrt(1 + std::numbers::pi / (2 * static_cast<double>(peers)));
}

std::vector<std::optional<peer_band>> leave_one_out_bands(const std::vector<double>& values, double k, double spread_floor) {
  const std::size_t n = values.size();
  std::vector<std::optional<peer_band>> bands(n);
  std::vector<std::pair<double, std::size_t>> sorted;  // (ln value, index) of the positive values
  for (std::size_t i = 0; i < n; ++i) {
    if (values[i] > 0 && std::isfinite(values[i])) sorted.emplace_back(std::log(values[i]), i);
  }
  std::sort(sorted.begin(), sorted.end());
  const std::size_t m = sorted.size();
  if (m < fleet_min_peers + 1) return bands;
  // The median of a sorted sequence with element `removed` left out.
  const auto median_without = [](const auto& seq, std::size_t removed, auto get) {
    const std::size_t count = seq.size() - 1;
    const auto at = [&](std::size_t j) { return get(seq[j < removed ? j : j + 1]); };
    return count % 2 == 1 ? at(count / 2) : (at(count / 2 - 1) + at(count / 2)) / 2;
  };
  // The others' centre takes only a few values (it depends on which side of the middle the
  // left-out value lies), so the sorted deviations are computed once per centre.
  std::map<double, std::vector<std::pair<double, std::size_t>>> deviations;  // centre -> sorted (|x - c|, rank)
  for (std::size_t r = 0; r < m; ++r) {
    const double centre = median_without(sorted, r, [](const auto& e) { return e.first; });
    auto& dev = deviations[centre];
    if (dev.empty()) {
      dev.reserve(m);
      for (std::size_t j = 0; j < m; ++j) dev.emplace_back(std::abs(sorted[j].first - centre), j);
      std::sort(dev.begin(), dev.end());
    }
    const auto own = std::find_if(dev.begin(), dev.end(), [&](const auto& e) { return e.second == r; });
    const double mad = median_without(dev, static_cast<std::size_t>(own - dev.begin()), [](const auto& e) { return e.first; });
    peer_band band;
    band.spread = std::max(1.4826 * mad, spread_floor);
    band.centre = std::exp(centre);
    band.low = std::exp(centre - k * band.spread);
    band.high = std::exp(centre + k * band.spread);
    band.peers = m - 1;
    bands[sorted[r].second] = band;
  }
  return bands;
}

int fleet_report::failed_nodes() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const fleet_node& n) { return n.failed > 0; }));
}

std::vector<std::string> fleet_report::failing_hostnames() const {
  std::set<std::string> names;
  for (const auto& node : nodes) {
    if (node.failed > 0) names.insert(node.hostname);
  }
  return {names.begin(), names.end()};
}

std::vector<fs::path> fleet_run_dirs(const std::vector<fs::path>& args) {
  std::vector<fs::path> dirs;
  for (const auto& arg : args) {
    if (!fs::is_directory(arg)) throw harness_error("not a directory: " + arg.string());
    if (is_run_dir(arg)) {
      dirs.push_back(arg);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(arg)) {
      if (entry.is_directory() && is_run_dir(entry.path())) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) found.push_back(arg);  // a node whose run never started: a FAIL of its own
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  return dirs;
}

fleet_report grade_fleet(const std::vector<fs::path>& run_dirs, const fleet_options& options) {
  if (run_dirs.empty()) throw harness_error("fleet needs at least one run directory");
  std::vector<loaded_node> loaded;
  loaded.reserve(run_dirs.size());
  for (const auto& dir : run_dirs) loaded.push_back(load_node(dir));

  std::map<node_kind, kind_group> groups;
  kind_group unknown;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i].kind) {
      auto& group = groups[*loaded[i].kind];
      group.kind = loaded[i].kind;
      group.members.push_back(i);
    } else {
      unknown.members.push_back(i);
    }
  }

  fleet_report report;
  report.alpha = options.alpha;
  direction_finder directions(options.schema_dir);
  for (auto& [kind, group] : groups) {
    fleet_kind summary;
    summary.kind = describe(kind);
    summary.fingerprint = to_json(kind);
    summary.nodes = group.members.size();
    // find_reference_set needs a run's meta.json; any member's gives the kind.
    const auto set = find_reference_set(*loaded[group.members.front()].meta, options.reference);
    if (set) {
      grade_by_set(loaded, group, summary, *set, options);
    } else {
      grade_by_peers(loaded, group, summary, options.alpha, directions);
    }
    report.kinds.push_back(std::move(summary));
  }
  if (!unknown.members.empty()) {
    fleet_kind summary;
    summary.kind = "unknown";
    summary.basis = "none (no readable meta.json node kind)";
    summary.nodes = unknown.members.size();
    report.kinds.push_back(std::move(summary));
  }

  std::map<std::string, int> hostname_count;
  for (const auto& l : loaded) ++hostname_count[l.node.hostname];
  for (auto& l : loaded) {
    auto& node = l.node;
    node.name = hostname_count[node.hostname] > 1 ? node.hostname + " (" + node.dir.filename().string() + ")" : node.hostname;
    std::stable_sort(node.lines.begin(), node.lines.end(),
                     [](const fleet_line& a, const fleet_line& b) { return severity(a.result) < severity(b.result); });
    for (const auto& line : node.lines) {
      node.passed += line.result == grade::pass;
      node.warned += line.result == grade::warn;
      node.failed += line.result == grade::fail;
    }
    report.nodes.push_back(std::move(node));
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const fleet_node& a, const fleet_node& b) {
    if (severity(a.overall()) != severity(b.overall())) return severity(a.overall()) < severity(b.overall());
    if (a.failed != b.failed) return a.failed > b.failed;
    if (a.warned != b.warned) return a.warned > b.warned;
    return a.name < b.name;
  });
  return report;
}

std::string slurm_hostlist(std::vector<std::string> hostnames) {
  std::sort(hostnames.begin(), hostnames.end());
  hostnames.erase(std::unique(hostnames.begin(), hostnames.end()), hostnames.end());
  // (prefix, digit count) -> numbers; names without a trailing number stand alone.
  std::map<std::pair<std::string, std::size_t>, std::vector<long long>> numbered;
  std::vector<std::string> parts;
  std::vector<std::pair<std::string, std::pair<std::string, std::size_t>>> order;  // first name of each group
  for (const auto& name : hostnames) {
    std::size_t digits = 0;
    while (digits < name.size() && digits < 18 && std::isdigit(static_cast<unsigned char>(name[name.size() - 1 - digits]))) ++digits;
    if (digits == 0 || digits == name.size()) {
      order.push_back({name, {}});
      continue;
    }
    const std::pair<std::string, std::size_t> group{name.substr(0, name.size() - digits), digits};
    if (!numbered.contains(group)) order.push_back({name, group});
    numbered[group].push_back(std::stoll(name.substr(name.size() - digits)));
  }
  std::sort(order.begin(), order.end());
  for (const auto& [first, group] : order) {
    if (group.first.empty() && group.second == 0) {
      parts.push_back(first);
      continue;
    }
    auto numbers = numbered[group];
    std::sort(numbers.begin(), numbers.end());
    const auto padded = [&](long long v) {
      auto text = std::to_string(v);
      if (text.size() < group.second) text.insert(0, group.second - text.size(), '0');
      return text;
    };
    if (numbers.size() == 1) {
      parts.push_back(group.first + padded(numbers.front()));
      continue;
    }
    std::string ranges;
    for (std::size_t i = 0; i < numbers.size();) {
      std::size_t j = i;
      while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
      ranges += (ranges.empty() ? "" : ",") + padded(numbers[i]) + (j > i ? "-" + padded(numbers[j]) : "");
      i = j + 1;
    }
    parts.push_back(group.first + "[" + ranges + "]");
  }
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}

}  // namespace hdb
