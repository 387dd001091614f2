#pragma once
// The few NVML entry points the topology reader needs, declared here because no nvml.h exists on
// the nodes we run on: the driver's libnvidia-ml.so.1 is opened at run time with dlopen. Types
// and values follow NVML's public API reference (nvml.h of CUDA 12/13); only what is called is
// declared. Private to the probe (bench/probe).
#include <optional>
#include <string>

namespace hdb::nvml {

using result = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
inline constexpr result success = 0;
using device = struct device_st*;  // nvmlDevice_t

// nvmlPciInfo_t (the layout the _v2/_v3 entry points fill).
struct pci_info {
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device_number;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];
};

// nvmlGpuTopologyLevel_t: the closest common PCIe ancestor of two GPUs.
enum class topology_level : unsigned int {
  internal = 0,     // the same board
  single = 10,      // one PCIe switch (nvidia-smi: PIX)
  multiple = 20,    // several switches, no host bridge (PXB)
  host_bridge = 30, // through a host bridge (PHB)
  node = 40,        // host bridges within one NUMA node (NODE)
  system = 50,      // across the SMP interconnect between NUMA nodes (SYS)
};

// NVML links of one GPU are numbered 0 .. max_links-1 (NVML_NVLINK_MAX_LINKS: 18 on Hopper and Blackwell).
inline constexpr unsigned int max_links = 18;

// One opened and initialised NVML; shuts it down and closes the library when destroyed.
class library {
 public:
  // nullopt (and `why` says why) when the library is missing or nvmlInit_v2 fails.
  static std::optional<library> open(std::string& why);
  ~library();
  library(library&& other) noexcept;
  library& operator=(library&&) = delete;
  library(const library&) = delete;
  library& operator=(const library&) = delete;

  // Each returns NVML's result code; a missing entry point answers not-supported (3).
  result handle_by_pci_bus_id(const char* bus_id, device* out) const;
  result nvlink_state(device d, unsigned int link, unsigned int* active) const;
  result nvlink_version(device d, unsigned int link, unsigned int* version) const;
  result nvlink_remote_pci(device d, unsigned int link, pci_info* out) const;
  result common_ancestor(device a, device b, topology_level* out) const;
  result pcie_generation(device d, bool maximum, unsigned int* out) const;
  result pcie_width(device d, bool maximum, unsigned int* out) const;
  [[nodiscard]] std::string error_text(result code) const;

 private:
  library() = default;
  void* handle_ = nullptr;
  // Entry points (nullptr when this driver's NVML lacks one).
  result (*shutdown_)() = nullptr;
  result (*by_bus_id_)(const char*, device*) = nullptr;
  result (*nvlink_state_)(device, unsigned int, unsigned int*) = nullptr;
  result (*nvlink_version_)(device, unsigned int, unsigned int*) = nullptr;
  result (*nvlink_remote_pci_)(device, unsigned int, pci_info*) = nullptr;
  result (*common_ancestor_)(device, device, topology_level*) = nullptr;
  result (*curr_gen_)(device, unsigned int*) = nullptr;
  result (*max_gen_)(device, unsigned int*) = nullptr;
  result (*curr_width_)(device, unsigned int*) = nullptr;
  result (*max_width_)(device, unsigned int*) = nullptr;
  const char* (*error_string_)(result) = nullptr;
};

}  // namespace hdb::nvml
