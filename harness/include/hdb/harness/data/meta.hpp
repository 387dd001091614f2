#pragma once
// meta.json: the fingerprint of the node and of the run (fields in docs/harness.md).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/family_status.hpp"

namespace hdb {

inline constexpr int meta_schema_version = 1;

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

struct run_identity {
  std::string run_id;
  std::chrono::system_clock::time_point started;
  std::vector<std::string> command_line;
  bool quick = false;
  bool verdict = false;  // --verdict: only the cases check grades and compare gates
};

// The meta.json object a run starts with ("finished_utc" null, "families" empty).
// The environment variables that change how GPUs and NCCL behave (NCCL_*, CUDA_*, NVSHMEM_*,
// TORCH_SYMM_MEM_*), name -> value, from a NULL-terminated `environ`-style list.
[[nodiscard]] nlohmann::json gpu_environment(const char* const* variables);

[[nodiscard]] nlohmann::json make_meta(const run_identity& run, nlohmann::json host, nlohmann::json node);

// Sets meta["families"] from the statuses (collect adds each family's `schema` and `plots`).
void set_families(nlohmann::json& meta, const std::vector<family_status>& statuses);

// What the harness records in every meta.json it writes, so that the plots read it there instead
// of keeping their own copy: meta["results_csv"] (results.csv's core columns and statistics,
// results_csv_record()) and the link rates (record_link_rates: each GPU's pcie.peak_GBps and
// nvlink.data_per_link_GBps, each NVLink pair's peak_GBps). Leaves anything but an object alone.
void record_harness_tables(nlohmann::json& meta);

// Writes `meta` with record_harness_tables() applied.
void write_meta(const std::filesystem::path& meta_path, const nlohmann::json& meta);

// Before the plots read a run (draw_plots, `hdbench plot`): a meta.json written before it
// recorded the harness's tables gets them (its other fields as they were), a run without
// meta.json gets one holding only them; an unreadable meta.json is left as it is.
enum class meta_update { unchanged, updated, created, unreadable };
meta_update update_meta_tables(const std::filesystem::path& run_dir);

// meta.json parsed, or nullopt when missing or unreadable.
[[nodiscard]] std::optional<nlohmann::json> read_meta(const std::filesystem::path& meta_path);

// The member `key` of `object`, or a null json when `object` is not an object or lacks it:
// meta.json's facts are optional (a source that did not answer), so readers chain this instead
// of checking every level.
[[nodiscard]] const nlohmann::json& field(const nlohmann::json& object, const char* key);
// field() when it is a number, else nullopt: the one reader of an optional number in our JSON.
[[nodiscard]] std::optional<double> number_field(const nlohmann::json& object, const char* key);

// The node's hostname: meta.json's node.hostname (the probe's), else host.hostname; nullopt
// without either.
[[nodiscard]] std::optional<std::string> hostname_of(const nlohmann::json& meta);

// When the run measured, in unix seconds: its "finished_utc", else its "started_utc" (a run cut
// short never finished); nullopt without either, or for one not of the form 2026-12-01T16:10:37Z.
[[nodiscard]] std::optional<std::int64_t> measured_unix_seconds(const nlohmann::json& meta);

}  // namespace hdb
