#include "hdb/host_placement.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/sizes.hpp"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <regex>

#if defined(HDB_HAVE_NUMA)
#include <numa.h>
#endif

namespace hdb {
namespace {

int parse_int(std::string_view text, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw usage_error("bad " + std::string(what) + " '" + std::string(text) + "'");
  }
  return value;
}

std::string read_first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) line.pop_back();
  return line;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  for (const std::string& entry : split_list(text)) {
    const std::string_view item = entry;
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_int(item, "CPU list item"));
    } else {
      const int first = parse_int(item.substr(0, dash), "CPU range start");
      const int last = parse_int(item.substr(dash + 1), "CPU range end");
      if (last < first) throw usage_error("bad CPU range '" + entry + "'");
      for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    }
  }
  return cpus;
}

numa_request parse_numa_request(std::string_view text) {
  if (text == "auto") return {numa_request::mode::automatic, -1};
  if (text == "none") return {numa_request::mode::none, -1};
  try {
    return {numa_request::mode::node, parse_int(text, "NUMA node")};
  } catch (const usage_error&) {
    throw usage_error("bad --numa value '" + std::string(text) + "': expected auto, none or a node number");
  }
}

numa_placement choose_numa_placement(const numa_request& request, int gpu_node,
                                     const std::vector<numa_node_info>& nodes) {
  const auto find = [&](int id) {
    return std::find_if(nodes.begin(), nodes.end(), [id](const numa_node_info& n) { return n.id == id; });
  };
  switch (request.how) {
    case numa_request::mode::none:
      return {false, -1, "", "--numa=none: thread and memory left to the OS"};
    case numa_request::mode::node: {
      const auto it = find(request.node);
      if (it == nodes.end()) {
        std::string known;
        for (const auto& n : nodes) known += (known.empty() ? "" : ",") + std::to_string(n.id);
        throw usage_error("--numa=" + std::to_string(request.node) + ": no such NUMA node (this host has: " +
                          (known.empty() ? "none" : known) + ")");
      }
      return {true, it->id, it->cpu_list,
              "--numa=" + std::to_string(it->id) + " requested (GPU's node: " + std::to_string(gpu_node) + ")"};
    }
    case numa_request::mode::automatic: {
      if (gpu_node < 0) return {false, -1, "", "GPU reports no NUMA node: thread and memory left to the OS"};
      const auto it = find(gpu_node);
      if (it == nodes.end()) {
        return {false, -1, "", "GPU's NUMA node " + std::to_string(gpu_node) + " is not listed in sysfs: left to the OS"};
      }
      return {true, it->id, it->cpu_list, "GPU's own NUMA node (auto)"};
    }
  }
  return {};
}

std::vector<numa_node_info> read_numa_nodes(const std::filesystem::path& sysfs_root) {
  std::vector<numa_node_info> nodes;
  const auto dir = sysfs_root / "devices/system/node";
  std::error_code ec;
  static const std::regex node_name("node([0-9]+)");
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, node_name)) continue;
    nodes.push_back({std::stoi(match[1].str()), read_first_line(entry.path() / "cpulist")});
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return nodes;
}

std::string read_pci_attribute(const std::filesystem::path& sysfs_root, std::string_view pci_bus_id,
                               std::string_view attribute) {
  return read_first_line(sysfs_root / "bus/pci/devices" / lower(pci_bus_id) / std::string(attribute));
}

int read_pci_numa_node(const std::filesystem::path& sysfs_root, std::string_view pci_bus_id) {
  const std::string text = read_pci_attribute(sysfs_root, pci_bus_id, "numa_node");
  int node = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), node);
  return (text.empty() || ec != std::errc()) ? -1 : node;
}

std::string apply_numa_placement(const numa_placement& placement) {
  if (!placement.bind) return "not bound";
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : parse_cpu_list(placement.cpu_list)) CPU_SET(cpu, &set);
  std::string outcome;
  if (sched_setaffinity(0, sizeof(set), &set) == 0) outcome = "thread bound to CPUs " + placement.cpu_list;
  else outcome = "thread binding to CPUs " + placement.cpu_list + " failed";
#if defined(HDB_HAVE_NUMA)
  if (numa_available() >= 0) {
    // Preferred, not strict: a buffer that does not fit on the node still gets memory.
    numa_set_preferred(placement.node);
    outcome += "; memory preferred on node " + std::to_string(placement.node) + " (libnuma)";
  } else {
    outcome += "; memory policy not set: libnuma reports NUMA unavailable";
  }
#else
  outcome += "; memory policy not set: built without libnuma";
#endif
  return outcome;
}

}  // namespace hdb
