#pragma once
// What `hdbench run` learns of the node for meta.json (fields in docs/harness.md): the host's
// facts, read by the harness itself, and the GPUs', from hdbench-probe.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hdb {

struct iommu_state {
  std::optional<bool> enabled;  // nullopt: no evidence either way
  std::string evidence;         // how it was decided
};

// Decides from the number of entries in /sys/class/iommu and the kernel command line.
// sysfs_entries is nullopt when /sys/class/iommu cannot be read (containers).
[[nodiscard]] iommu_state detect_iommu(std::optional<std::size_t> sysfs_entries, std::string_view kernel_cmdline);

// PRETTY_NAME from /etc/os-release text ("" when absent).
[[nodiscard]] std::string os_pretty_name(std::string_view os_release);

// Hostname, Slurm's node name (SLURMD_NODENAME; null outside Slurm), CPU model and cores, memory,
// OS, kernel, IOMMU, read from /proc, /sys, /etc and the environment.
[[nodiscard]] nlohmann::json gather_host_facts();

// Runs hdbench-probe and returns its JSON object. Never throws: a missing binary, bad output
// or a non-zero exit (2 = no GPU) is recorded in the object's "error" and "probe" fields.
[[nodiscard]] nlohmann::json run_probe(const std::filesystem::path& probe_binary);

}  // namespace hdb
