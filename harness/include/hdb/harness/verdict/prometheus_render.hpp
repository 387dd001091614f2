#pragma once
// The verdict where operators look: check's or fleet's graded lines as Prometheus series, in the
// text format node_exporter's textfile collector reads (gauges, HELP and TYPE lines, no
// timestamps). docs/machine-output.md, "Prometheus", lists every series. Nothing here grades: a
// series is a graded line's grade, value, band or rule as check or fleet decided it, or the node's
// verdict as its report holds it.
#include <filesystem>
#include <string>
#include <string_view>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/verdict/fleet.hpp"

namespace hdb {

// What --prometheus DIR writes in DIR (node_exporter reads DIR/*.prom).
inline constexpr const char* prometheus_textfile_name = "hdbench.prom";

// A grade as a number, in every series that holds one: 0 PASS, 1 WARN, 2 FAIL, -1 INFO (not
// graded), so max() over series is the worst.
[[nodiscard]] int prometheus_grade_value(grade value);

// The series of one node (check) or of every node (fleet). `previous`: the textfile this one
// replaces ("" for none), read for one thing only: how many runs in a row each figure has been
// WARN (hdbench_figure_warn_runs), which a textfile cannot otherwise remember. A run rendered
// again (the same node's measured time as in `previous`) counts once.
[[nodiscard]] std::string render_prometheus(const check_report& report, std::string_view previous = {});
[[nodiscard]] std::string render_prometheus(const fleet_report& report, std::string_view previous = {});

// DIR/hdbench.prom as it is ("" when there is none yet).
[[nodiscard]] std::string read_prometheus_textfile(const std::filesystem::path& dir);
// DIR/hdbench.prom, whole or not at all (a temporary file in DIR, renamed over it), so the
// collector never reads half a file. Throws harness_error naming the file that cannot be written.
void write_prometheus_textfile(const std::filesystem::path& dir, std::string_view text);

}  // namespace hdb
