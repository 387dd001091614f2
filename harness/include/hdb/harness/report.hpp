#pragma once
// report.md: the node fingerprint, headline figures next to theoretical peaks, skipped and
// failed cases, anomalies and plot links. Rules in docs/harness.md.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/results.hpp"

namespace hdb {

// One line per anomaly (empty: none), from the probe's node facts and the results.
[[nodiscard]] std::vector<std::string> find_anomalies(const std::vector<result_row>& rows, const nlohmann::json& meta);

// The whole markdown text. `plot_files` are paths relative to the run dir ("plots/x.png").
[[nodiscard]] std::string render_report(const std::vector<result_row>& rows, const nlohmann::json& meta,
                                        const std::vector<std::string>& plot_files);

// The headline medians as indented console lines (cv and % of peak where known).
[[nodiscard]] std::string headline_summary(const std::vector<result_row>& rows, const nlohmann::json& meta);

// Reads results.csv and meta.json of a run dir, writes report.md atomically.
// Throws harness_error when results.csv is missing or malformed.
void write_report(const std::filesystem::path& run_dir);

}  // namespace hdb
