#pragma once
// `hdbench fleet DIR...`: many nodes' runs, one verdict that names the nodes and GPUs that differ
// from their peers (docs/fleet.md). Each node is read from its run's small files only (check.json,
// meta.json), so a thousand nodes judge in seconds. Nodes are grouped by machine kind (kind_of);
// a kind with a reference set grades each figure against the band check.json holds for it (the
// set's, as check made it), a kind without one against the node's peers (a leave-one-out median
// and MAD of ln(value) make the band). Either way the one decision (decide_figure) grades it under
// the rule the judging hdbench's installed declaration gives (judging_rule), as check does, so
// check and fleet cannot grade one figure differently. A check.json that cannot be judged so (an
// older hdbench's, or one made against no set or another one) is made again from the run's
// results.csv by check itself. Health lines are check.json's. Rendering decides nothing.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/graded_line.hpp"
#include "hdb/harness/common/output_format.hpp"

namespace hdb {

// A spread (SD of ln(value)) below this is raised to it: a fleet of copied or quantised readings
// would otherwise have a band of zero width. 0.1 % is below the smallest spread between fresh
// machines of any gated figure (0.15 %, pinned d2h over the twelve H200s), so a real band is
// never widened by it.
inline constexpr double fleet_spread_floor = 0.001;
// Fewer peers than this and a figure is not graded against them (its check.json grade stands,
// with a note): a median of two says nothing about a third.
inline constexpr std::size_t fleet_min_peers = 3;

struct fleet_options {
  std::optional<std::filesystem::path> reference;  // --reference: as check's
  double alpha = 0.05;  // family-wise over every node x figure graded against peers, per kind
  bool plots = true;
  // The declarations whose tolerances judge the figures, as check_options'.
  std::filesystem::path schema_dir = own_directory() / "schema";
};

// The band of one value against the other values of the same figure (leave-one-out).
struct peer_band {
  double centre = 0;  // median of the others (on the log scale, so the geometric median)
  double spread = 0;  // 1.4826 x MAD of the others' ln(value), floored
  double low = 0, high = 0;
  std::size_t peers = 0;
};

// k of the band centre x exp(+-k x spread) for `tests` comparisons of a value against `peers`
// others at family-wise level alpha (two-sided Bonferroni): the t quantile at 1 - alpha/(2 tests)
// with the MAD's effective degrees of freedom (0.37 (peers - 1): the MAD's efficiency at the
// normal), times sqrt(1 + pi / (2 peers)) for the centre's own error (a median's variance is
// pi/2 times a mean's).
[[nodiscard]] double fleet_band_k(double alpha, std::size_t tests, std::size_t peers);

// For each value (> 0), its band against all the others; nullopt where fewer than
// fleet_min_peers others are positive. O(n log n): the others' median and MAD are read from the
// sorted values with one removed. `k` as fleet_band_k's.
[[nodiscard]] std::vector<std::optional<peer_band>> leave_one_out_bands(const std::vector<double>& values, double k,
                                                                        double spread_floor = fleet_spread_floor);

struct fleet_node {
  std::string name;      // hostname; "hostname (run dir)" where hostnames repeat
  std::string hostname;  // meta.json node.hostname; the directory's name without a meta.json
  std::string slurm_node_name;  // meta.json host.slurm_node_name: Slurm's name for it; "" where Slurm did not run it
  std::filesystem::path dir;
  std::string run;       // run id
  std::string kind;      // describe(kind); "unknown" without a readable meta.json
  std::optional<std::int64_t> measured_unix_seconds;  // measured_unix_seconds(meta); nullopt without meta.json
  std::vector<graded_line> lines;  // worst first
  // The node's earlier runs among those fleet was given (its directory, name and GPUs), oldest first:
  // their figures are earlier tries of the latest run's.
  std::vector<std::string> earlier_runs;
  int passed = 0, warned = 0, failed = 0;
  bool has_results = false;       // results.csv present (what --learn needs)

  [[nodiscard]] grade overall() const { return failed > 0 ? grade::fail : warned > 0 ? grade::warn : grade::pass; }
};

struct fleet_kind {
  std::string kind;
  std::optional<nlohmann::json> fingerprint;  // to_json(kind); nullopt: the unknown group
  grade_basis basis = grade_basis::none;      // set, peers, or none (the unknown group)
  std::optional<std::string> set;
  std::size_t set_runs = 0;
  std::filesystem::path set_dir;
  std::size_t nodes = 0, tests = 0, regraded = 0;
  double k = 0;  // the peers' band k (0 with a set)
  std::vector<std::string> notes;
};

struct fleet_report {
  std::vector<fleet_kind> kinds;
  std::vector<fleet_node> nodes;  // worst first, then by name
  double alpha = 0.05;

  [[nodiscard]] int failed_nodes() const;
  [[nodiscard]] int exit_code() const { return failed_nodes() > 0 ? 1 : 0; }
  [[nodiscard]] std::vector<std::string> failing_hostnames() const;  // sorted, unique
  // What scontrol drains them by: each failing node's Slurm name, its hostname where it has none
  // (a run not under Slurm, or one without meta.json: its directory's name); sorted, unique.
  [[nodiscard]] std::vector<std::string> failing_slurm_nodes() const;
};

// A directory `hdbench fleet` wrote (it holds this marker first, then fleet.json): never a node.
inline constexpr const char* fleet_output_marker = ".hdbench-fleet";
[[nodiscard]] bool is_fleet_output(const std::filesystem::path& dir);

// The run directories of the arguments: an argument with meta.json or check.json is one; else its
// subdirectories that are (a parent of runs, as `DIR/<hostname>/` of the batch script); an
// argument with neither is itself a node whose run did not start (a FAIL line of its own). A
// fleet's own output (is_fleet_output) is none of these: it is left out, and `skipped` (when
// given) names it. Throws harness_error for an argument that is not a directory.
[[nodiscard]] std::vector<std::filesystem::path> fleet_run_dirs(const std::vector<std::filesystem::path>& args,
                                                                std::vector<std::filesystem::path>* skipped = nullptr);

// Grades the nodes (fleet_run_dirs' output). Throws harness_error for no nodes.
[[nodiscard]] fleet_report grade_fleet(const std::vector<std::filesystem::path>& run_dirs, const fleet_options& options);

// Slurm's compressed hostlist: "gpu[01-03,07],login1" (equal prefix and digit count share brackets).
[[nodiscard]] std::string slurm_hostlist(std::vector<std::string> hostnames);

// text, junit, json or prometheus (the accepted --format; prometheus_render.hpp).
inline constexpr std::initializer_list<output_format> fleet_formats = {output_format::text, output_format::junit,
                                                                       output_format::json, output_format::prometheus};
[[nodiscard]] nlohmann::json to_json(const fleet_report& report);
[[nodiscard]] std::string render_fleet(const fleet_report& report, output_format format);
// "hdbench fleet: FAIL — 2 of 12 nodes FAIL (vm (a), vm (b)), 0 WARN, 10 PASS"
[[nodiscard]] std::string fleet_summary_line(const fleet_report& report);

// What the fleet figures draw, and only that (plots/fleet_plot.json, plots/plot_fleet.py's input):
// the nodes in report order (name, hostname, grade, and the reason of the worst line no dot or
// cell shows) and, per graded figure (family, label; sorted),
// one entry per node x GPU line with a band: node index, GPU ("GPU 0"), grade, value, low, high,
// centre (6 significant digits) and the index of its rule in the figure's `rules` (better,
// tolerance, host_bound: fleet.json's line's fields, each distinct rule listed once). At a thousand
// nodes x 8 GPUs it is 7 MB, where fleet.json is 65.
[[nodiscard]] nlohmann::json fleet_plot_json(const fleet_report& report);

// --out: fleet.json (`document`: to_json(report) dumped once, also what --format json prints: at a
// thousand nodes it is 65 MB, built once), fleet.txt (every line) and, with `plots`,
// plots/fleet_plot.json and, with a Python with matplotlib, the figures plots/plot_fleet.py draws
// from it (while fleet.json and fleet.txt are written); what happened goes to `log`.
void write_fleet_outputs(const fleet_report& report, const std::string& document, const std::filesystem::path& out_dir,
                         bool plots, std::ostream& log);

// The default --out: fleet-<utc> beside the directories graded, never inside one: in the parent of
// the arguments' deepest common directory (`fleet nodes/*` writes ./fleet-<utc>, `fleet nodes`
// too).
[[nodiscard]] std::filesystem::path default_fleet_out(const std::vector<std::filesystem::path>& args);

// `hdbench fleet --learn SET_DIR`: for each kind, SET_DIR/<kind dir>/ gets every node that did not
// FAIL (add_to_reference_set; WARN nodes stay in, so the set is not trimmed to its own verdict),
// and KEPT_OUT.md names the others and why. Returns one line per kind for the log.
[[nodiscard]] std::vector<std::string> learn_fleet_sets(const fleet_report& report, const std::filesystem::path& set_root);

// The set directory name of a kind: "h200" for one NVIDIA H200, "h200-x8" for eight.
[[nodiscard]] std::string kind_dir_name(const nlohmann::json& fingerprint);

}  // namespace hdb
