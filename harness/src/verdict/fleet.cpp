// hdbench fleet, the grading: read each node's check.json and meta.json, group by kind, and grade
// each figure against the kind's set (the band check.json holds) or the node's peers (a robust
// leave-one-out band), both by the one decision under the judging declaration. docs/fleet.md gives
// the method and its reasons.
#include "hdb/harness/verdict/fleet.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <map>
#include <numbers>
#include <set>
#include <thread>
#include <utility>

#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/verdict/judging.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/verdict/student_t.hpp"

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

graded_line node_line(std::string label, std::string reason) {
  graded_line line;
  line.result = grade::fail;
  line.basis = grade_basis::node;
  line.family = "node";
  line.figure = std::move(label);
  line.reason = std::move(reason);
  return line;
}

// What one directory says about its node, before any grading.
struct loaded_node {
  fleet_node node;
  std::optional<json> meta;         // lean (no families)
  std::optional<node_kind> kind;
  bool has_check = false;
  std::optional<std::string> check_set;  // the set check.json was made against (its name), if any
  std::size_t check_set_runs = 0;
  // Each figure's values in the node's earlier runs, oldest first, by figure_identity.
  std::map<std::string, std::vector<std::optional<double>>> earlier_tries;
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
    node.measured_unix_seconds = measured_unix_seconds(meta);
    node.hostname = hostname_of(meta).value_or(node.hostname);
    if (const auto& slurm = field(field(meta, "host"), "slurm_node_name"); slurm.is_string()) {
      node.slurm_node_name = slurm.get<std::string>();
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
  // Another version's lines name their figures and rules otherwise: check writes this one again.
  const auto version = check->find("version");
  if (version == check->end() || !version->is_number_integer() || version->get<int>() != check_json_version) {
    throw harness_error((dir / "check.json").string() + ": check.json version " +
                        (version == check->end() ? std::string("1 (no \"version\")") : version->dump()) + "; this hdbench reads version " +
                        std::to_string(check_json_version) + ": run `hdbench check " + dir.string() + "` to write it again");
  }
  loaded.has_check = true;
  if (const auto reference = check->find("reference"); reference != check->end() && reference->is_object()) {
    loaded.check_set = reference->value("name", std::string());
    loaded.check_set_runs = reference->value("runs", std::size_t{0});
  }
  if (const auto lines = check->find("lines"); lines != check->end() && lines->is_array()) {
    for (const auto& entry : *lines) node.lines.push_back(graded_line_from_json(entry));
  }
  if (!loaded.kind) node.lines.push_back(node_line("meta.json", "no node kind in meta.json (the probe did not run): graded alone"));
  return loaded;
}

// Every node's files, read and parsed on up to as many threads as the machine has cores: each
// node's read is its own (a thousand nodes' check.json are 150 MB of JSON, a quarter of a fleet's
// time), in run_dirs' order whatever the threads. A failure rethrows the first node's in order.
std::vector<loaded_node> load_nodes(const std::vector<fs::path>& run_dirs) {
  std::vector<loaded_node> loaded(run_dirs.size());
  std::vector<std::exception_ptr> failures(run_dirs.size());
  constexpr std::size_t nodes_per_thread = 64;  // below that a thread costs more than it saves
  const std::size_t threads =
      std::clamp<std::size_t>(run_dirs.size() / nodes_per_thread, 1, std::max(1U, std::thread::hardware_concurrency()));
  const auto load_every = [&](std::size_t first) {
    for (std::size_t i = first; i < run_dirs.size(); i += threads) {
      try {
        loaded[i] = load_node(run_dirs[i]);
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) workers.emplace_back(load_every, t);
  load_every(0);
  for (auto& worker : workers) worker.join();
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  return loaded;
}

// check itself on the node's results.csv: what fleet does with a check.json it cannot judge.
// False (the lines stay as check.json has them) without a results.csv or when check refuses it.
bool check_again(loaded_node& l, const fleet_options& options, std::vector<std::string>& problems) {
  if (!l.node.has_results) return false;
  check_options check;
  check.reference = options.reference;
  check.alpha = options.alpha;
  check.schema_dir = options.schema_dir;
  try {
    const auto report = check_run(l.node.dir, check);
    l.node.lines = report.lines;
    l.check_set = report.set;
    l.check_set_runs = report.set_runs;
    return true;
  } catch (const harness_error& e) {
    problems.push_back(l.node.name.empty() ? l.node.dir.string() + ": " + e.what() : l.node.name + ": " + e.what());
    return false;
  }
}

// A figure line the decision can grade: its row, a positive value and a direction.
bool gradable(const graded_line& line) { return line.is_figure() && line.key && line.direction && line.value && *line.value > 0; }

// One figure across nodes: its row, on the same GPUs.
std::string figure_identity(const graded_line& line) {
  std::string id = describe(*line.key);
  for (const int g : line.gpus) id += "\x1f" + std::to_string(g);
  return id;
}

// Which node a run is of: its directory, its hostname (or Slurm's name for it) and its GPUs'
// UUIDs. Runs of one host kept apart are nodes apart (a test's stand-in nodes; holdouts kept one
// to a folder); "" where a run cannot be told apart.
std::string node_identity(const loaded_node& l) {
  if (!l.meta) return {};  // a run that never started: nothing to tell it by
  std::vector<std::string> uuids;
  const auto& gpus = field(field(*l.meta, "node"), "gpus");
  if (gpus.is_array()) {
    for (const auto& gpu : gpus) {
      if (const auto& uuid = field(gpu, "uuid"); uuid.is_string() && !uuid.get<std::string>().empty()) {
        uuids.push_back(uuid.get<std::string>());
      }
    }
  }
  if (uuids.empty()) return {};  // GPUs without UUIDs: no telling two machines apart
  std::sort(uuids.begin(), uuids.end());
  std::string identity = fs::absolute(l.node.dir).lexically_normal().parent_path().string() + "\x1f" +
                         (l.node.slurm_node_name.empty() ? l.node.hostname : l.node.slurm_node_name);
  for (const auto& uuid : uuids) identity += "\x1f" + uuid;
  return identity;
}

// A node given more than once, re-run into its directory after a FAIL its run could not confirm
// (one graded against peers): its latest run is the node, and each earlier run's value of a figure
// is an earlier try of it, weighed as `hdbench run` weighs its own tries, so a FAIL stands only when
// it failed on every try. What a retry cannot undo stays: an earlier run's health FAIL (an Xid, an
// uncorrectable error) is the node's FAIL too; another process that was on the GPU then, or an
// earlier run that did not finish, a WARN.
graded_line from_earlier_run(graded_line line, const std::string& run) {
  if (line.family == "node" || line.figure == "other processes") line.result = grade::warn;
  line.reason = "in the earlier run " + run + ": " + line.reason;
  return line;
}

void fold_earlier_runs(std::vector<loaded_node>& loaded) {
  std::map<std::string, std::vector<std::size_t>> runs_of;
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (auto identity = node_identity(loaded[i]); !identity.empty()) runs_of[std::move(identity)].push_back(i);
  }
  std::vector<bool> folded(loaded.size(), false);
  for (auto& [identity, runs] : runs_of) {
    if (runs.size() < 2) continue;
    std::stable_sort(runs.begin(), runs.end(), [&](std::size_t a, std::size_t b) {
      return std::pair(loaded[a].node.measured_unix_seconds.value_or(0), loaded[a].node.run) <
             std::pair(loaded[b].node.measured_unix_seconds.value_or(0), loaded[b].node.run);
    });
    auto& latest = loaded[runs.back()];
    for (auto it = runs.begin(); it + 1 != runs.end(); ++it) {
      const auto& earlier = loaded[*it];
      latest.node.earlier_runs.push_back(earlier.node.run);
      for (const auto& line : earlier.node.lines) {
        if (line.is_figure() && line.key) {
          latest.earlier_tries[figure_identity(line)].push_back(line.value);
        } else if (line.result == grade::fail) {
          latest.node.lines.push_back(from_earlier_run(line, earlier.node.run));
        }
      }
      folded[*it] = true;
    }
  }
  std::vector<loaded_node> kept;
  kept.reserve(loaded.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (!folded[i]) kept.push_back(std::move(loaded[i]));
  }
  loaded = std::move(kept);
}

// The line's tries: the node's earlier runs' values first, then its latest run's own tries.
void add_earlier_tries(graded_line& line, const loaded_node& l) {
  const auto earlier = l.earlier_tries.find(figure_identity(line));
  if (earlier == l.earlier_tries.end()) return;
  std::vector<attempt_reading> tries;
  for (const auto& value : earlier->second) tries.push_back({0, value, grade::not_graded});
  if (line.attempts.empty()) {
    tries.push_back({0, line.value, line.result});
  } else {
    tries.insert(tries.end(), line.attempts.begin(), line.attempts.end());
  }
  for (std::size_t i = 0; i < tries.size(); ++i) tries[i].attempt = static_cast<int>(i) + 1;
  line.attempts = std::move(tries);
}

// The one decision on a figure line of `node` against `band`, under the rule the judging
// declaration gives (judging_rule: the installed declaration's, as check's), and the reason for it,
// every try of it weighed: the node's earlier runs' and its latest run's own.
void decide_line(graded_line& line, const loaded_node& node, const figure_band& band, band_source source,
                 const judging_declarations& judging) {
  add_earlier_tries(line, node);
  const auto judged = judging_rule(judging, line.family, line.check, line.key->metric, line.rule);
  line.rule = judged.rule;
  line.band = band;
  line.basis = source == band_source::set ? grade_basis::set : grade_basis::peers;
  const auto decided = decide_figure(*line.value, band, *line.direction, line.rule);
  line.result = decided.result;
  line.reason = decision_reason(decided, *line.value, band, line.rule, source, line.unit);
  if (!judged.installed && line.result != grade::pass) {
    line.reason += "; " + not_installed_note(line.family, "its check.json holds");
  }
  weigh_tries(line);  // every try against this band, as check weighs a run's own
}

// Peers see a node unlike the others, never a fault every node shares (a fleet whose links all
// read a third of their rate), and a few peers' band is wide: a figure graded against its link's
// peak (check's grade, a kind without a set) keeps that grade where it is the worse. The line keeps
// its peers' band, so the fleet's figures draw it.
struct peak_grade {
  grade result;
  std::string reason;
  confirmation confirmed;                 // as the node's own run weighed its tries,
  std::vector<attempt_reading> attempts;  // each graded against the peak
};

std::optional<peak_grade> peak_grade_of(const graded_line& line) {
  if (line.basis != grade_basis::peak) return std::nullopt;
  return peak_grade{line.result, line.reason, line.confirmed, line.attempts};
}

void keep_worse_peak_grade(graded_line& line, const std::optional<peak_grade>& against_peak) {
  if (!against_peak || !(against_peak->result < line.result)) return;
  line.reason = against_peak->reason + "; " + std::string(to_string(line.result)) + " against its " +
                std::to_string(line.band->runs) + " peers, whose band cannot see what every node shares and is wide in a small fleet";
  line.result = against_peak->result;
  line.confirmed = against_peak->confirmed;
  line.attempts = against_peak->attempts;
}

struct kind_group {
  std::optional<node_kind> kind;
  std::vector<std::size_t> members;  // indices into the loaded nodes
};

void grade_by_peers(std::vector<loaded_node>& loaded, const kind_group& group, fleet_kind& summary, double alpha,
                    const judging_declarations& judging) {
  struct slot {
    std::size_t node, line;
  };
  std::map<std::string, std::vector<slot>> figures;  // by figure_identity, in its order: deterministic
  for (const auto i : group.members) {
    auto& node = loaded[i].node;
    for (std::size_t l = 0; l < node.lines.size(); ++l) {
      const auto& line = node.lines[l];
      if (gradable(line)) figures[figure_identity(line)].push_back({i, l});
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
      if (!bands[j]) continue;
      const auto& b = *bands[j];
      auto& line = loaded[slots[j].node].node.lines[slots[j].line];
      const auto against_peak = peak_grade_of(line);
      decide_line(line, loaded[slots[j].node], figure_band{b.low, b.high, b.centre, b.peers, std::nullopt}, band_source::peers,
                  judging);
      keep_worse_peak_grade(line, against_peak);
    }
  }
  summary.basis = grade_basis::peers;
}

void grade_by_set(std::vector<loaded_node>& loaded, const kind_group& group, fleet_kind& summary, const reference_set& set,
                  const fleet_options& options, const judging_declarations& judging) {
  summary.set = set.dir.filename().string();
  summary.set_dir = set.dir;
  summary.set_runs = set.runs.size();
  summary.basis = grade_basis::set;
  std::size_t kept = 0;
  std::vector<std::string> problems;
  for (const auto i : group.members) {
    auto& l = loaded[i];
    if (!l.has_check) continue;
    // A check.json made against another set than this one (none, or another set's runs): check
    // again against this one.
    if (l.check_set != summary.set || l.check_set_runs != summary.set_runs) {
      const bool again = check_again(l, options, problems);
      ++(again ? summary.regraded : kept);
      if (!again || l.earlier_tries.empty()) continue;  // check's grades stand, or check.json's
    }
    for (auto& line : l.node.lines) {
      if (!gradable(line) || !line.band) continue;
      decide_line(line, l, *line.band, band_source::set, judging);
    }
  }
  if (summary.regraded > 0) {
    summary.notes.push_back(std::to_string(summary.regraded) +
                            " node(s) had a check.json made without this set: checked again against it (their results.csv)");
  }
  if (kept > 0) {
    summary.notes.push_back(std::to_string(kept) +
                            " node(s) had a check.json made without this set and no results.csv to check again: their "
                            "check.json grades stand");
  }
  for (const auto& p : problems) summary.notes.push_back("check again refused: " + p);
}

}  // namespace

bool is_fleet_output(const fs::path& dir) { return fs::exists(dir / fleet_output_marker); }

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

std::vector<std::string> fleet_report::failing_slurm_nodes() const {
  std::set<std::string> names;
  for (const auto& node : nodes) {
    if (node.failed > 0) names.insert(node.slurm_node_name.empty() ? node.hostname : node.slurm_node_name);
  }
  return {names.begin(), names.end()};
}

std::vector<fs::path> fleet_run_dirs(const std::vector<fs::path>& args, std::vector<fs::path>* skipped) {
  std::vector<fs::path> dirs;
  for (const auto& arg : args) {
    if (!fs::is_directory(arg)) throw harness_error("not a directory: " + arg.string());
    if (is_fleet_output(arg)) {
      if (skipped) skipped->push_back(arg);
      continue;
    }
    if (is_run_dir(arg)) {
      dirs.push_back(arg);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(arg)) {
      if (!entry.is_directory()) continue;
      if (is_fleet_output(entry.path())) {
        if (skipped) skipped->push_back(entry.path());
      } else if (is_run_dir(entry.path())) {
        found.push_back(entry.path());
      }
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) found.push_back(arg);  // a node whose run never started: a FAIL of its own
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  return dirs;
}

fleet_report grade_fleet(const std::vector<fs::path>& run_dirs, const fleet_options& options) {
  if (run_dirs.empty()) throw harness_error("fleet needs at least one run directory");
  std::vector<loaded_node> loaded = load_nodes(run_dirs);
  fold_earlier_runs(loaded);

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
  const judging_declarations judging(options.schema_dir);
  for (auto& [kind, group] : groups) {
    fleet_kind summary;
    summary.kind = describe(kind);
    summary.fingerprint = to_json(kind);
    summary.nodes = group.members.size();
    // find_reference_set needs a run's meta.json; any member's gives the kind.
    const auto set = find_reference_set(*loaded[group.members.front()].meta, options.reference);
    if (set) {
      grade_by_set(loaded, group, summary, *set, options, judging);
    } else {
      grade_by_peers(loaded, group, summary, options.alpha, judging);
    }
    report.kinds.push_back(std::move(summary));
  }
  if (!unknown.members.empty()) {
    fleet_kind summary;
    summary.kind = "unknown";
    summary.nodes = unknown.members.size();
    summary.notes.push_back("no readable meta.json node kind: graded alone, check.json's grades stand");
    report.kinds.push_back(std::move(summary));
  }

  std::map<std::string, int> hostname_count;
  for (const auto& l : loaded) ++hostname_count[l.node.hostname];
  for (auto& l : loaded) {
    auto& node = l.node;
    node.name = hostname_count[node.hostname] > 1 ? node.hostname + " (" + node.dir.filename().string() + ")" : node.hostname;
    std::stable_sort(node.lines.begin(), node.lines.end(),
                     [](const graded_line& a, const graded_line& b) { return a.result < b.result; });
    for (const auto& line : node.lines) {
      node.passed += line.result == grade::pass;
      node.warned += line.result == grade::warn;
      node.failed += line.result == grade::fail;
    }
    report.nodes.push_back(std::move(node));
  }
  for (const auto& node : report.nodes) {
    if (node.earlier_runs.empty()) continue;
    std::string earlier;
    for (const auto& run : node.earlier_runs) earlier += (earlier.empty() ? "" : ", ") + run;
    for (auto& kind : report.kinds) {
      if (kind.kind == node.kind) {
        kind.notes.push_back(node.name + ": graded on its latest run " + node.run + ", with " + earlier +
                             " as its earlier tries (a FAIL stands only when it failed on every try)");
      }
    }
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(), [](const fleet_node& a, const fleet_node& b) {
    if (a.overall() != b.overall()) return a.overall() < b.overall();
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
