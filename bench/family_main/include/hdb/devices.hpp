#pragma once
// Devices as data: which GPUs a run measures, and what every case needs to know about each.
// Nothing in the measurement layer assumes device 0; a case names the devices it measures and
// every result row carries their indices and UUIDs.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// What --devices asked for, checked before any CUDA call: "all" or a list of indices.
struct device_selection {
  bool all = true;
  std::vector<int> indices;  // ascending, no duplicates (when !all)
};

// "all", "0", "0,1", "0-3", "0,2-3". Throws usage_error naming the bad token.
[[nodiscard]] device_selection parse_device_selection(std::string_view text);

// The selected indices on a node with `count` devices. Throws usage_error when an index does
// not exist ("--devices=2 but this node has 2 CUDA devices (0..1)").
[[nodiscard]] std::vector<int> resolve_devices(const device_selection& selection, int count);

// "0,1" for labels and the CSV's device column.
[[nodiscard]] std::string join_indices(const std::vector<int>& indices);

struct device_info {
  int index = 0;             // CUDA runtime index (CUDA_VISIBLE_DEVICES applies)
  std::string uuid;          // "GPU-xxxxxxxx-xxxx-...", stable across reboots and index changes
  std::string name;
  std::string pci_bus_id;    // "0000:3B:00.0"
  int sm_count = 0;
  std::size_t free_memory = 0;   // at start-up, before any case allocated
  std::size_t total_memory = 0;
};

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
[[nodiscard]] std::string format_uuid(const cudaUUID_t& uuid);

// Reads one device's record (sets no current device; creates its context).
[[nodiscard]] device_info read_device_info(int index);

}  // namespace hdb
