#include "hdb/devices.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/sizes.hpp"

#include <algorithm>
#include <charconv>

namespace hdb {
namespace {

constexpr int max_range_devices = 4096;

int parse_index(std::string_view token, std::string_view whole) {
  int value = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size() || value < 0) {
    throw usage_error("bad value for --devices: '" + std::string(whole) +
                      "' (expected all, or device indices >= 0 such as 0,1 or 0-3)");
  }
  return value;
}

}  // namespace

device_selection parse_device_selection(std::string_view text) {
  if (text == "all") return {};
  device_selection selection;
  selection.all = false;
  for (const std::string& entry : split_list(text)) {
    const std::string_view item = entry;
    if (item.empty()) parse_index(item, text);  // "", "0,", ",1": throws with the usage message
    const auto dash = item.find('-');
    const int first = parse_index(item.substr(0, dash), text);
    const int last = dash == std::string_view::npos ? first : parse_index(item.substr(dash + 1), text);
    if (last < first) throw usage_error("bad value for --devices: '" + std::string(text) + "' (range " + std::string(item) + " runs backwards)");
    // Expanded below one index at a time: 0-2147483647 would exhaust memory (and overflow i).
    if (last - first >= max_range_devices) {
      throw usage_error("bad value for --devices: '" + std::string(text) + "' (range " + std::string(item) +
                        " spans more devices than a node has)");
    }
    for (int i = first; i <= last; ++i) selection.indices.push_back(i);
  }
  std::sort(selection.indices.begin(), selection.indices.end());
  selection.indices.erase(std::unique(selection.indices.begin(), selection.indices.end()), selection.indices.end());
  return selection;
}

std::vector<int> resolve_devices(const device_selection& selection, int count) {
  if (selection.all) {
    std::vector<int> all(static_cast<std::size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
  }
  for (int index : selection.indices) {
    if (index >= count) {
      throw usage_error("--devices=" + join_indices(selection.indices) + " but this node has " + std::to_string(count) +
                        " CUDA device" + (count == 1 ? "" : "s") + (count > 0 ? " (0.." + std::to_string(count - 1) + ")" : ""));
    }
  }
  return selection.indices;
}

std::string join_indices(const std::vector<int>& indices) {
  std::string text;
  for (int i : indices) text += (text.empty() ? "" : ",") + std::to_string(i);
  return text;
}

}  // namespace hdb
