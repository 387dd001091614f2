#pragma once
// The words of a verdict, once: a figure's or a health line's grade (check, fleet) and a
// comparison's verdict (compare), each in severity order, so sorting by the enum sorts worst first.
#include <optional>
#include <string_view>

namespace hdb {

// not_graded: a figure with neither a band nor a peak to judge it by (printed INFO).
enum class grade { fail, warn, pass, not_graded };
enum class verdict { slower, same, faster };

// "FAIL", "WARN", "PASS", "INFO".
[[nodiscard]] std::string_view to_string(grade value);
// "SLOWER", "SAME", "FASTER".
[[nodiscard]] std::string_view to_string(verdict value);
// The inverse of to_string(grade); nullopt for any other text.
[[nodiscard]] std::optional<grade> grade_from_string(std::string_view text);

}  // namespace hdb
