#include "hdb/util/lists.hpp"

#include <utility>

namespace hdb {
namespace {

std::string_view trimmed(std::string_view item) {
  const auto first = item.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return item.substr(first, item.find_last_not_of(" \t") - first + 1);
}

}  // namespace

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    items.emplace_back(trimmed(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin)));
    if (end == std::string_view::npos) return items;
    begin = end + 1;
  }
}

std::vector<std::string> split_nonempty(std::string_view text, char separator) {
  std::vector<std::string> items;
  for (auto& item : split_list(text, separator)) {
    if (!item.empty()) items.push_back(std::move(item));
  }
  return items;
}

std::string join_list(const std::vector<std::string>& items, std::string_view separator) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += separator;
    text += items[i];
  }
  return text;
}

bool all_digits(std::string_view text) noexcept {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace hdb
