#pragma once
// The one comma-list tokenizer (flags such as --sizes=4K,1M, label values such as device=0,1,
// nvidia-smi CSV lines), and the one test of a list item or label value for a whole number.
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// Every item between separators, each trimmed of spaces and tabs, empty items kept: "a,,b"
// gives {"a", "", "b"} and "" gives {""}, so a strict caller can name the empty item it refuses.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, char separator = ',');

// The same with empty items (after trimming) dropped: "a, ,b," gives {"a", "b"}, "" gives {}.
[[nodiscard]] std::vector<std::string> split_nonempty(std::string_view text, char separator = ',');

// The inverse: the items with `separator` between them ({"a", "b"}, ", " gives "a, b"; {} gives "").
[[nodiscard]] std::string join_list(const std::vector<std::string>& items, std::string_view separator = ",");

// Whether `text` is a non-empty run of the decimal digits 0-9 (no sign, no spaces): an int
// parameter's value, a CUDA index, a size in bytes.
[[nodiscard]] bool all_digits(std::string_view text) noexcept;

}  // namespace hdb
