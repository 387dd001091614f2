#pragma once
// % of peak for every family: a row's `traffic` names the link its bytes crossed, and the class,
// composed from the link rates meta.json records for the row's GPUs, gives the theoretical rate.
// The standard classes are one table in hdb_contract (declaration.cpp); a family may add classes of its own in its
// declaration (`traffic_classes`), composed the same way. Formulas in docs/harness.md.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/installed_declarations.hpp"
#include "hdb/harness/data/results.hpp"

namespace hdb {

// A theoretical rate a median is compared with: % of peak = value x traffic_factor / peak.
struct peak_ref {
  double value = 0;           // in the row's unit (GB/s)
  double traffic_factor = 1;  // bytes the hardware moves per byte the metric counts
  std::string basis;          // "PCIe per direction, GPU 1", "NVLink 18 x 25 GB/s, GPU 0->1", ...
};

// The standard classes (builtin_traffic_classes) and find_traffic_class are the declaration
// model's, hdb/contract/declaration.hpp: the parser checks a metric's classes against them.

// The CUDA indices of the GPUs a row measured, in device order: its gpu_uuid list resolved
// against meta.json node.gpus. A row without UUIDs that spans one GPU is its `device`. Empty when
// a UUID is not on this node or the row names no GPU.
[[nodiscard]] std::vector<int> row_devices(const result_row& row, const nlohmann::json& meta);

// The meta.json record (node.gpus[i]) of a CUDA index; a null JSON when the node has no such GPU.
[[nodiscard]] const nlohmann::json& gpu_record(const nlohmann::json& meta, int device_index);
// One GPU's PCIe per-direction peak at its maximum link (current link when max is unknown).
[[nodiscard]] std::optional<double> gpu_pcie_peak_gbps(const nlohmann::json& gpu);
// One GPU's NVLink data rate per link and direction: the rate nvidia-smi reported
// (node.gpus[i].nvlink.per_link_GBps; in a meta.json written before that field existed,
// node.topology.gpus[i].nvlink.per_link_GBps) as data, by the GPU's generation
// (node.gpus[i].compute_capability; hdb/util/nvlink_rates.hpp). nullopt when either is unknown.
[[nodiscard]] std::optional<double> nvlink_data_per_link_gbps(const nlohmann::json& meta, int device_index);

// Writes into meta.json the link rates the plots read rather than compute (write_meta calls it):
// node.gpus[i].pcie.peak_GBps, one direction's PCIe peak of the GPU's link (gpu_pcie_peak_gbps, the
// one PCIe table: peaks.cpp; null when the link is unknown); node.gpus[i].nvlink.data_per_link_GBps
// (nvlink_data_per_link_gbps; null when unknown) and, where only node.topology.gpus has them (a
// meta.json written before the fingerprint recorded them per GPU), nvlink.links_active and
// per_link_GBps; and node.topology.pairs[k].link.peak_GBps, the pair's NVLinks x the slower
// end's data rate (a meta.json written before the data rate convention held the reported rate).
void record_link_rates(nlohmann::json& meta);

// The peak of `row` through `class_name` on this node, composed over `devices`. `family` supplies
// the family's own classes (nullptr: built-in only). nullopt when the class is unknown or a rate
// it needs is not in meta.json.
[[nodiscard]] std::optional<peak_ref> traffic_peak(std::string_view class_name, const result_row& row,
                                                   const std::vector<int>& devices, const nlohmann::json& meta,
                                                   const family_declaration* family);

// The peak of a row whose `traffic` is set, the family's classes read from meta.json
// families.<family>.schema; nullopt when `traffic` is empty or the peak is unknown.
[[nodiscard]] std::optional<peak_ref> row_peak(const result_row& row, const nlohmann::json& meta);

// value x traffic_factor / peak x 100.
[[nodiscard]] double percent_of_peak(double value, const peak_ref& peak);

}  // namespace hdb
