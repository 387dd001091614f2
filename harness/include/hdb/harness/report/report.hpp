#pragma once
// report.md, top-down: the node verdict (`hdbench check`), the node fingerprint, anomalies, per
// family the headline figures next to theoretical peaks and skipped and failed cases, plot links.
// Rules in docs/harness.md.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/results.hpp"

namespace hdb {

// One line per anomaly (empty: none), from the probe's node facts and the results.
[[nodiscard]] std::vector<std::string> find_anomalies(const std::vector<result_row>& rows, const nlohmann::json& meta);

// The whole markdown text. `plot_files` are paths relative to the run dir ("plots/x.png");
// `verdict` is the check's section (verdict_section), first after the title; `health` the check's
// health record (health_section), right after the headlines per GPU; empty: none.
[[nodiscard]] std::string render_report(const std::vector<result_row>& rows, const nlohmann::json& meta,
                                        const std::vector<std::string>& plot_files, const std::string& verdict = {},
                                        const std::string& health = {});

// The headline medians as indented console lines (cv and % of peak where known).
[[nodiscard]] std::string headline_summary(const std::vector<result_row>& rows, const nlohmann::json& meta);

struct check_report;
// The report's first section: the check's summary line, its notes, every line that is not PASS
// and, with a FAIL, what changed against the set's runs.
[[nodiscard]] std::string verdict_section(const check_report& report);
// The node's health record beside its figures: a row per GPU and a column per health item of the
// check (PCIe link, replays, NVLinks, clocks, other processes, ...), PASS included, each cell the
// line's grade and reading; the lines about the node as a whole below. Empty without health lines.
[[nodiscard]] std::string health_section(const check_report& report);

// Reads results.csv and meta.json of a run dir, checks the run (check_run with default options;
// a run that cannot be checked says why in its verdict section), writes report.md atomically.
// Throws harness_error when results.csv is missing or malformed.
void write_report(const std::filesystem::path& run_dir);

}  // namespace hdb
