#pragma once
// Tables for humans: aligned plain text (terminal) and GitHub markdown (report, PR comments).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "hdb/util/units.hpp"  // format_size, for the tables' size cells

namespace hdb {

using table_rows = std::vector<std::vector<std::string>>;

[[nodiscard]] std::string text_table(const std::vector<std::string>& header, const table_rows& rows);
// Cells have '|' escaped and newlines flattened.
[[nodiscard]] std::string markdown_table(const std::vector<std::string>& header, const table_rows& rows);

// Text for an XML attribute or element (the junit renderers of compare and check): & < > " escaped.
[[nodiscard]] std::string xml_escape(std::string_view text);

// Numbers for humans: three significant digits is as much as a benchmark median deserves.
[[nodiscard]] std::string format_figure(double value);
[[nodiscard]] std::string format_fixed(double value, int decimals);
// The one way a relative figure is printed, the fraction 0.05 as "5 %": plain (a tolerance, a
// threshold, a detectable change) to three significant digits, "3 %", "0.25 %"; change (how much
// worse or better) to one decimal, "5.1 %"; signed_change likewise with its sign, "+0.2 %",
// "-51.9 %", "+inf %" for a change from zero.
enum class percent_style { plain, change, signed_change };
[[nodiscard]] std::string percent_text(double fraction, percent_style style = percent_style::plain);
// "GPU 0", "GPU 0,1"; "node" for a line about the node as a whole (no GPU).
[[nodiscard]] std::string gpu_text(const std::vector<int>& gpus);

}  // namespace hdb
