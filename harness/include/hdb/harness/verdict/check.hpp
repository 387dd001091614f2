#pragma once
// `hdbench check RUN_DIR`: is this node healthy? One line per GPU and figure (every gating
// headline of the run and every "checks" entry of its families' declarations), graded against the
// band a healthy node of the same kind reads (the reference set found by the run's node kind,
// reference_set.hpp), or against % of the traffic class's peak when no set matches; then the
// node's health (PCIe link training and replays, NVLinks, throttling, other processes on the
// GPUs, and the GPUs' own record: ECC, row remap, Xid events, fabric, reset flags), each cause its own line with its evidence; then a summary. docs/harness.md, `check`,
// gives the rules and their reasons. Each figure is graded by the one decision (decision.hpp) under
// the judging declaration (judging.hpp); rendering (check_render.cpp) decides nothing.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/graded_line.hpp"
#include "hdb/harness/common/output_format.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/verdict/what_changed.hpp"

namespace hdb {

struct check_options {
  std::optional<std::filesystem::path> reference;  // --reference: a set or a directory of sets
  double alpha = 0.05;  // compare's significance level, family-wise over the gating headlines
  // The declarations whose tolerances judge the figures (schema/<family>.json beside hdbench): the
  // rule is the judging hdbench's, so a run made before tolerances were declared is judged alike.
  // A family without one there is judged by its run's own declaration.
  std::filesystem::path schema_dir = own_directory() / "schema";
};

struct check_report {
  std::string run;                    // run id
  std::string hostname;               // meta.json node.hostname (host.hostname without one)
  std::string node_kind;              // describe(kind_of(meta))
  std::optional<std::int64_t> measured_unix_seconds;  // measured_unix_seconds(meta)
  std::optional<std::string> set;     // the set's directory name ("h200")
  std::filesystem::path set_dir;
  std::size_t set_runs = 0;
  std::vector<std::string> notes;     // how the node was matched to a set, or why it was not
  std::vector<graded_line> lines;     // figures, then health
  int passed = 0, warned = 0, failed = 0, not_graded = 0;
  int unconfirmed = 0;  // of the FAILs: figures measured once (weigh_attempts), which `hdbench run` would measure again
  // With a FAIL line against a set: the fingerprint fields in which this node differs from the
  // set's runs (what_changed.hpp); empty otherwise.
  std::vector<fingerprint_change> what_changed;

  [[nodiscard]] grade overall() const { return failed > 0 ? grade::fail : warned > 0 ? grade::warn : grade::pass; }
  [[nodiscard]] int exit_code() const { return failed > 0 ? 1 : 0; }
};

// The figures and their grades, without health (check_run adds it): the median rows of the run
// that gate (headline, better not neutral) and those its declarations' checks select. Against
// `set`, each figure's band is compare's (`hdbench compare SET RUN --all`: the band a healthy node
// of the kind reads, from the set's spread and this run's own repetitions) and the one decision
// grades it (decide_figure); without a set, its traffic class's peak (grade_by_peak). Failed
// cases are FAIL lines; a check whose case was skipped or not measured is WARN. `meta` is the
// run's meta.json (declarations, node for % of peak); `schema_dir` as check_options'.
[[nodiscard]] std::vector<graded_line> grade_figures(const std::vector<result_row>& rows, const nlohmann::json& meta,
                                                    const reference_set* set, double alpha,
                                                    const std::filesystem::path& schema_dir = {});

// The figures' confirmations: each figure line graded against the set, or by its link's peak (a
// kind without a set), on its case's last attempt (`rows`) gets every attempt, the earlier ones
// from `superseded` (load_run's), and the one rule weighs them (weigh_tries, graded_line.hpp): a
// co-tenant's burst at boot can take a copy below half its link's rate as surely as out of a band.
void weigh_attempts(std::vector<graded_line>& lines, const std::vector<result_row>& rows,
                    const std::vector<result_row>& superseded);

// The node's health from meta.json (check_health.cpp): PCIe link trained below its maximum or
// below the kind's (`kind`: the set's, nullptr without one), PCIe replays or NVLink error counters
// that grew between the run's start and end, NVLinks fewer than the kind's, throttling around a
// family, other compute processes on a measured GPU during a family (naming the `figures` of that
// family on that GPU). One line per GPU and item, PASS lines included, so the evidence of a
// healthy node is printed too. `notes` (when given) gets what was skipped for the node as a whole
// (check's notes: no GPU on an NVSwitch fabric).
[[nodiscard]] std::vector<graded_line> health_lines(const nlohmann::json& meta, const node_kind* kind,
                                                    const std::vector<graded_line>& figures,
                                                    std::vector<std::string>* notes = nullptr);

// The GPU's own health record (check_gpu_record.cpp; health_lines appends it): ECC, row remap or
// retired pages, NVSwitch fabric, the driver's reset flags and the Xid events the run's kernel log
// holds, per GPU, with their counters (graded_line::counters); what was not read is INFO with why.
// A node none of whose GPUs is on a fabric gets a note in `notes` (an INFO line without them).
[[nodiscard]] std::vector<graded_line> gpu_record_lines(const nlohmann::json& meta, std::vector<std::string>* notes = nullptr);

// The whole check of a run directory. Throws harness_error (exit 2) for a missing directory,
// results.csv or meta.json, a meta.json without the node's GPUs, or a --reference that does not
// exist.
[[nodiscard]] check_report check_run(const std::filesystem::path& run_dir, const check_options& options);

// check_render.cpp: text, junit, json or prometheus (the accepted --format; prometheus_render.hpp).
// The text's last line is the summary (summary_line); json is check.json.
inline constexpr std::initializer_list<output_format> check_formats = {output_format::text, output_format::junit,
                                                                       output_format::json, output_format::prometheus};
[[nodiscard]] std::string render_check(const check_report& report, output_format format);
// "hdbench check: <run> PASS — 12 PASS, 0 WARN, 0 FAIL against h200 (6 runs)".
[[nodiscard]] std::string summary_line(const check_report& report);
// "what changed: driver 580.95.05 -> 580.159.04 (the 12 runs of the set agree)", or "" when
// report.what_changed is empty: check.txt's line, check's junit and report.md's verdict print it.
[[nodiscard]] std::string what_changed_line(const check_report& report);

// The verdict where the user and fleet look for it: RUN_DIR/check.txt (the text) and
// RUN_DIR/check.json, each written whole or not at all. What `hdbench run` and `hdbench check`
// both call. Throws harness_error naming the file that cannot be written.
void write_check_files(const std::filesystem::path& run_dir, const check_report& report);

}  // namespace hdb
