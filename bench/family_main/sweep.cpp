#include "hdb/sweep.hpp"

#include "hdb/devices.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/sizes.hpp"  // usage_error

#include <algorithm>
#include <charconv>
#include <set>
#include <string>

namespace hdb {
namespace {

int parse_index(std::string_view flag, std::string_view whole, std::string_view text) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw usage_error("bad value for --" + std::string(flag) + ": '" + std::string(whole) + "' (expected " +
                      (flag == "sweep-pairs" ? "all, none or pairs such as 0>1,0>4)" : "all or indices such as 0,4)"));
  }
  return value;
}

// A check's cases, by the declaration's one selection rule (a check's and a gate's alike).
bool matches_check(const case_shape& c, const std::vector<check_decl>& checks) {
  return std::any_of(checks.begin(), checks.end(), [&](const check_decl& check) {
    return selection_matches(check.case_kind, check.parameters, *c.kind,
                             [&](std::string_view name) { return label_value(*c.labels, name); });
  });
}

// A power of 64 (1, 64, 4 KiB, 256 KiB, 16 MiB, 1 GiB): four or five points per decade of
// sizes, enough to see that a curve has the shape of its class's representative.
bool short_sweep_size(const std::string& digits) {
  unsigned long long size = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
  if (ec != std::errc() || end != digits.data() + digits.size() || size == 0) return false;
  while (size % 64 == 0) size /= 64;
  return size == 1;
}

// The case's identity without its size: kind, devices and every other label.
std::string without_size(const case_shape& c) {
  std::string key = *c.kind + "|" + join_indices(*c.devices);
  for (const auto& [k, v] : *c.labels) {
    if (k != "size_bytes") key += "|" + k + "=" + v;
  }
  return key;
}

// A pair case's direction: its src and dst labels where it has them (the devices list is
// ascending), else the devices in order.
std::pair<int, int> ordered_pair(const case_shape& c) {
  const std::string* src = label_value(*c.labels, "src");
  const std::string* dst = label_value(*c.labels, "dst");
  if (src && dst) return {std::stoi(*src), std::stoi(*dst)};
  return {(*c.devices)[0], (*c.devices)[1]};
}

}  // namespace

sweep_selection parse_sweep_selection(std::string_view devices, std::string_view pairs) {
  sweep_selection selection;
  if (devices != "all") {
    std::vector<int> indices;
    for (const std::string& item : split_list(devices)) indices.push_back(parse_index("sweep-devices", devices, item));
    if (indices.empty()) parse_index("sweep-devices", devices, "");
    std::sort(indices.begin(), indices.end());
    selection.devices = std::move(indices);
  }
  if (pairs != "all") {
    std::vector<std::pair<int, int>> list;
    if (pairs != "none") {
      for (const std::string& item : split_list(pairs)) {
        const auto arrow = item.find('>');
        if (arrow == std::string::npos) parse_index("sweep-pairs", pairs, "");
        list.emplace_back(parse_index("sweep-pairs", pairs, std::string_view(item).substr(0, arrow)),
                          parse_index("sweep-pairs", pairs, std::string_view(item).substr(arrow + 1)));
      }
      if (list.empty()) parse_index("sweep-pairs", pairs, "");
    }
    selection.pairs = std::move(list);
  }
  return selection;
}

void require_selected(const sweep_selection& selection, const std::vector<int>& selected) {
  const auto check = [&](std::string_view flag, int index) {
    if (std::find(selected.begin(), selected.end(), index) != selected.end()) return;
    std::string list;
    for (const int d : selected) list += (list.empty() ? "" : ",") + std::to_string(d);
    throw usage_error("--" + std::string(flag) + " names GPU " + std::to_string(index) + ", which is not one of this run's GPUs (" +
                      list + ")");
  };
  if (selection.devices) {
    for (const int d : *selection.devices) check("sweep-devices", d);
  }
  if (selection.pairs) {
    for (const auto& [src, dst] : *selection.pairs) {
      check("sweep-pairs", src);
      check("sweep-pairs", dst);
    }
  }
}

std::vector<bool> cases_in_sweep(const std::vector<case_shape>& cases, const sweep_selection& selection,
                                 std::size_t selected_devices, const std::vector<check_decl>& checks) {
  if (!selection.devices && !selection.pairs) return std::vector<bool>(cases.size(), true);
  std::vector<bool> keep(cases.size(), false);
  std::vector<bool> point(cases.size(), false);
  std::set<std::string> point_shapes;  // the tier points' identities without their size
  for (std::size_t i = 0; i < cases.size(); ++i) {
    point[i] = cases[i].headline || matches_check(cases[i], checks);
    if (point[i]) point_shapes.insert(without_size(cases[i]));
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const case_shape& c = cases[i];
    const std::vector<int>& devices = *c.devices;
    const bool whole_node = devices.size() == selected_devices;
    bool full = whole_node;
    if (!full && !label_value(*c.labels, "ranks")) {
      if (devices.size() == 1) {
        full = !selection.devices || std::binary_search(selection.devices->begin(), selection.devices->end(), devices[0]);
      } else if (devices.size() == 2) {
        full = !selection.pairs || std::find(selection.pairs->begin(), selection.pairs->end(), ordered_pair(c)) !=
                                       selection.pairs->end();
      }
    }
    // Pairs outnumber GPUs (56 ordered pairs on 8), so a pair outside the sweep keeps its
    // headline and checked sizes only.
    const std::string* size = label_value(*c.labels, "size_bytes");
    const bool short_sweep =
        devices.size() == 1 && size && short_sweep_size(*size) && point_shapes.contains(without_size(c));
    keep[i] = full || point[i] || short_sweep;
  }
  return keep;
}

}  // namespace hdb
