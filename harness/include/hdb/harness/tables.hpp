#pragma once
// Tables for humans: aligned plain text (terminal) and GitHub markdown (report, PR comments).
#include <cstddef>
#include <string>
#include <vector>

namespace hdb {

using table_rows = std::vector<std::vector<std::string>>;

[[nodiscard]] std::string text_table(const std::vector<std::string>& header, const table_rows& rows);
// Cells have '|' escaped and newlines flattened.
[[nodiscard]] std::string markdown_table(const std::vector<std::string>& header, const table_rows& rows);

// Numbers for humans: three significant digits is as much as a benchmark median deserves.
[[nodiscard]] std::string format_figure(double value);
[[nodiscard]] std::string format_fixed(double value, int decimals);
// Bytes as labels show them: "1 GiB", "64 MiB", "4 KiB" where the size is a whole multiple, else "4097 B".
[[nodiscard]] std::string format_size(std::size_t bytes);

}  // namespace hdb
