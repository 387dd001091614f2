#pragma once
// Transfer sizes as users write them. K, M, G, T are binary (4K = 4096 bytes); rates elsewhere
// are decimal GB/s. Anything else is refused with a message naming the bad token.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "4096", "4K", "4KiB", "64M", "1G" (case-insensitive suffix, optional "B"/"iB").
[[nodiscard]] std::size_t parse_size(std::string_view text);

// Comma-separated items, each a size or a geometric range "FROM:TO:xFACTOR" (FACTOR ≥ 2,
// TO included when reached). Sorted ascending, duplicates removed. "4K:1G:x4", "1M,64M,1G".
[[nodiscard]] std::vector<std::size_t> parse_size_list(std::string_view text);

}  // namespace hdb
