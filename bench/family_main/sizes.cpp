#include "hdb/sizes.hpp"

#include "hdb/util/lists.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace hdb {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::size_t multiplier_for(std::string_view suffix, std::string_view whole) {
  std::string s;
  for (char c : suffix) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.empty() || s == "B") return 1;
  if (s.size() >= 2 && s.substr(s.size() - 2) == "IB") s.resize(s.size() - 2);
  else if (s.size() >= 2 && s.back() == 'B') s.pop_back();
  if (s == "K") return std::size_t{1} << 10;
  if (s == "M") return std::size_t{1} << 20;
  if (s == "G") return std::size_t{1} << 30;
  if (s == "T") return std::size_t{1} << 40;
  throw usage_error("bad size " + quoted(whole) + ": unknown unit " + quoted(suffix) +
                    " (use plain bytes or K, M, G, T — binary: 4K = 4096 bytes)");
}

void append_range(std::string_view item, std::vector<std::size_t>& sizes) {
  const auto parts = split_list(item, ':');
  if (parts.size() != 3 || parts[2].empty() || (parts[2][0] != 'x' && parts[2][0] != 'X')) {
    throw usage_error("bad size range " + quoted(item) + ": expected FROM:TO:xFACTOR, e.g. 4K:1G:x4");
  }
  const std::size_t from = parse_size(parts[0]);
  const std::size_t to = parse_size(parts[1]);
  std::size_t factor = 0;
  const std::string_view factor_text = parts[2].substr(1);
  const auto [end, ec] = std::from_chars(factor_text.data(), factor_text.data() + factor_text.size(), factor);
  if (ec != std::errc() || end != factor_text.data() + factor_text.size() || factor < 2) {
    throw usage_error("bad size range " + quoted(item) + ": the factor must be a whole number >= 2");
  }
  if (from == 0 || from > to) {
    throw usage_error("bad size range " + quoted(item) + ": need 0 < FROM <= TO");
  }
  for (std::size_t s = from; s <= to; s *= factor) {
    sizes.push_back(s);
    if (s > std::numeric_limits<std::size_t>::max() / factor) break;
  }
}

}  // namespace

std::size_t parse_size(std::string_view text) {
  if (text.empty()) throw usage_error("bad size '': empty");
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) ++digits;
  if (digits == 0) {
    throw usage_error("bad size " + quoted(text) + ": expected a whole number of bytes, optionally with K, M or G");
  }
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) throw usage_error("bad size " + quoted(text) + ": too large");
  const std::size_t multiplier = multiplier_for(text.substr(digits), text);
  if (value > std::numeric_limits<std::size_t>::max() / multiplier) {
    throw usage_error("bad size " + quoted(text) + ": too large");
  }
  return value * multiplier;
}

std::vector<std::size_t> parse_size_list(std::string_view text) {
  if (text.empty()) throw usage_error("empty size list");
  std::vector<std::size_t> sizes;
  for (const std::string& item : split_list(text)) {
    if (item.empty()) throw usage_error("bad size list '" + std::string(text) + "': empty item");
    if (item.find(':') != std::string_view::npos) append_range(item, sizes);
    else sizes.push_back(parse_size(item));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace hdb
