#pragma once
// `hdbench check RUN_DIR`: is this node healthy? One line per GPU and figure (every gating
// headline of the run and every "checks" entry of its families' declarations), graded against the
// band a healthy node of the same kind reads (the reference set found by the run's node kind,
// reference_set.hpp), or against % of the traffic class's peak when no set matches; then the
// node's health (PCIe link training and replays, NVLinks, throttling, other processes on the
// GPUs), each cause its own line with its evidence; then a summary. docs/harness.md, `check`,
// gives the rules and their reasons. Rendering (check_render.cpp) decides nothing.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/compare_model.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/reference_set.hpp"
#include "hdb/harness/traffic.hpp"

namespace hdb {

// Severity order. not_graded: a figure with neither a reference entry nor a peak to judge by.
enum class grade { fail, warn, pass, not_graded };

// "FAIL", "WARN", "PASS", "INFO".
[[nodiscard]] std::string_view to_string(grade value);

// The cut-offs of the peaks-only grading (no reference set of this node's kind): a healthy link
// moves 85-90 % of its theoretical rate (docs/harness.md, Peaks), so below 75 % something is
// wrong or contended, and below 50 % it is broken.
inline constexpr double peak_pass_percent = 75;
inline constexpr double peak_warn_percent = 50;

// What a figure was held against.
struct figure_expectation {
  std::optional<expected_band> band;  // against the reference set
  std::optional<peak_ref> peak;       // peaks only
  std::optional<double> percent_of_peak;
};

struct check_line {
  grade result = grade::not_graded;
  std::vector<int> gpus;  // CUDA indices (node.gpus[i].index); empty: the node as a whole
  std::string family;     // the figure's family; "health" for a health line
  std::string label;      // "pinned h2d 1 GiB", "PCIe replays"
  std::optional<double> value;
  std::string unit;
  std::string reading;  // a health line's reading instead of a value: "Gen4 x16", "0 -> 17"
  figure_expectation expected;
  std::string reason;
  // A figure's: the row it grades, and the tolerance and host wording that judged it.
  std::optional<metric_key> key;
  std::optional<better> better_direction;  // the row's (check.json "better"): fleet grades by it
  std::optional<double> tolerance;
  bool host_bound = false;
};

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
  std::string node_kind;              // describe(kind_of(meta))
  std::optional<std::string> set;     // the set's directory name ("h200")
  std::filesystem::path set_dir;
  std::size_t set_runs = 0;
  std::vector<std::string> notes;     // how the node was matched to a set, or why it was not
  std::vector<check_line> lines;      // figures, then health
  int passed = 0, warned = 0, failed = 0, not_graded = 0;

  [[nodiscard]] grade overall() const { return failed > 0 ? grade::fail : warned > 0 ? grade::warn : grade::pass; }
  [[nodiscard]] int exit_code() const { return failed > 0 ? 1 : 0; }
};

// The figures and their grades, without health (check_run adds it): the median rows of the run
// that gate (headline, better not neutral) and those its declarations' checks select. Against
// `set`, each figure reads compare's decision for it (`hdbench compare SET RUN --all`: the band a
// healthy node of the kind reads, from the set's spread and this run's own repetitions) and then
// its tolerance (judge_figure); without a set, its traffic class's peak. Failed cases are FAIL
// lines; a check whose case was skipped or not measured is WARN. `meta` is the run's meta.json
// (declarations, node for % of peak); `schema_dir` as check_options'.
[[nodiscard]] std::vector<check_line> grade_figures(const std::vector<result_row>& rows, const nlohmann::json& meta,
                                                    const reference_set* set, double alpha,
                                                    const std::filesystem::path& schema_dir = {});

// How much worse `value` is than `centre` in the bad direction, as a fraction (0.05: 5 % slower;
// negative when better); 0 for neutral. compare's sign convention: (1 - v/c) when higher is better,
// (v/c - 1) when lower is.
[[nodiscard]] double worse_by(double value, double centre, better direction);

// The one rule of a figure against a set (docs/harness.md, "check"): compare's decision says
// whether it lies outside the band healthy nodes of the kind read; the tolerance says whether the
// difference matters for a node. SLOWER and worse by more than the tolerance: FAIL; SLOWER within
// it: WARN; FASTER: WARN (a host line: PASS, a faster host); SAME: PASS. No tolerance: SLOWER is FAIL.
[[nodiscard]] grade judge_figure(verdict decision, double worse, std::optional<double> tolerance, bool host_bound);

// The node's health from meta.json (check_health.cpp): PCIe link trained below its maximum or
// below the kind's (`kind`: the set's, nullptr without one), PCIe replays or NVLink error counters
// that grew between the run's start and end, NVLinks fewer than the kind's, throttling around a
// family, other compute processes on a measured GPU during a family (naming the `figures` of that
// family on that GPU). One line per GPU and item, PASS lines included, so the evidence of a
// healthy node is printed too.
[[nodiscard]] std::vector<check_line> health_lines(const nlohmann::json& meta, const node_kind* kind,
                                                   const std::vector<check_line>& figures);

// The whole check of a run directory. Throws harness_error (exit 2) for a missing directory,
// results.csv or meta.json, a meta.json without the node's GPUs, or a --reference that does not
// exist.
[[nodiscard]] check_report check_run(const std::filesystem::path& run_dir, const check_options& options);

enum class check_format { text, junit, json };

// "text" | "junit" | "json"; throws harness_error otherwise.
[[nodiscard]] check_format parse_check_format(std::string_view text);

// check_render.cpp. The text's last line is the summary (summary_line).
[[nodiscard]] std::string render_check(const check_report& report, check_format format);
// "hdbench check: <run> PASS — 12 PASS, 0 WARN, 0 FAIL against h200 (6 runs)".
[[nodiscard]] std::string summary_line(const check_report& report);

}  // namespace hdb
