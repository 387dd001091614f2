#pragma once
// Where the GPU sits in the host: its NUMA node and the CPUs near it, read from sysfs, and the
// placement policy for host buffers and the benchmark thread. On a two-socket node a buffer on
// the far socket can halve host<->device bandwidth, so by default both go to the GPU's node.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Throws usage_error on malformed input.
[[nodiscard]] std::vector<int> parse_cpu_list(std::string_view text);

struct numa_request {
  enum class mode { automatic, none, node };
  mode how = mode::automatic;
  int node = -1;  // for mode::node
};
// "auto", "none" or a node number.
[[nodiscard]] numa_request parse_numa_request(std::string_view text);

struct numa_node_info {
  int id = 0;
  std::string cpu_list;  // as sysfs writes it
};

struct numa_placement {
  bool bind = false;  // pin the thread to `cpu_list` and prefer memory from `node`
  int node = -1;
  std::string cpu_list;
  std::string reason;  // why this placement, for the run context
};

// Pure decision: throws usage_error if an explicit node does not exist.
[[nodiscard]] numa_placement choose_numa_placement(const numa_request& request, int gpu_node,
                                                   const std::vector<numa_node_info>& nodes);

// sysfs readers; `sysfs_root` is "/sys" except in tests.
[[nodiscard]] std::vector<numa_node_info> read_numa_nodes(const std::filesystem::path& sysfs_root);
// -1 when the platform reports none. pci_bus_id as CUDA gives it ("0000:3B:00.0").
[[nodiscard]] int read_pci_numa_node(const std::filesystem::path& sysfs_root, std::string_view pci_bus_id);
[[nodiscard]] std::string read_pci_attribute(const std::filesystem::path& sysfs_root, std::string_view pci_bus_id,
                                             std::string_view attribute);

// Binds the calling thread's CPUs and memory policy. Returns how memory placement was applied
// (libnuma preferred node, or why it could not be).
std::string apply_numa_placement(const numa_placement& placement);

}  // namespace hdb
