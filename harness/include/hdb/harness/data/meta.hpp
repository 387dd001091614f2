#pragma once
// meta.json: the record of a run and of its node (fields in docs/harness.md), made, written and
// read. What it records of the node is gathered by run/node_probe.hpp.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/family_status.hpp"

namespace hdb {

inline constexpr int meta_schema_version = 1;

struct run_identity {
  std::string run_id;
  std::chrono::system_clock::time_point started;
  std::vector<std::string> command_line;
  bool quick = false;
  bool verdict = false;  // --verdict: only the cases check grades and compare gates
};

// The environment variables that change how GPUs and NCCL behave (NCCL_*, CUDA_*, NVSHMEM_*,
// TORCH_SYMM_MEM_*), name -> value, from a NULL-terminated `environ`-style list.
[[nodiscard]] nlohmann::json gpu_environment(const char* const* variables);

// The meta.json object a run starts with ("finished_utc" null, "families" empty).
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
// meta.json gets one holding only them; an unreadable meta.json is left as it is (the plots say
// so). A meta.json that has them is not rewritten.
void update_meta_tables(const std::filesystem::path& run_dir);

// meta.json parsed, or nullopt when missing or unreadable.
[[nodiscard]] std::optional<nlohmann::json> read_meta(const std::filesystem::path& meta_path);

// The node's hostname: meta.json's node.hostname (the probe's), else host.hostname; nullopt
// without either.
[[nodiscard]] std::optional<std::string> hostname_of(const nlohmann::json& meta);

// When the run measured, in unix seconds: its "finished_utc", else its "started_utc" (a run cut
// short never finished); nullopt without either, or for one not of the form 2026-12-01T16:10:37Z.
[[nodiscard]] std::optional<std::int64_t> measured_unix_seconds(const nlohmann::json& meta);

}  // namespace hdb
