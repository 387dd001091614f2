#pragma once
// How the GPUs of a node are joined: for every ordered pair, what CUDA says about peer access
// (can access, performance rank, native atomics) and the link (NVLink with its link count and
// per-link rate, or the PCIe path PIX/PXB/PHB/NODE/SYS); for every GPU, its PCIe link, NUMA node
// and CPU affinity. Sources, best first: the CUDA runtime, NVML (libnvidia-ml.so.1 opened at run
// time; there is no nvml.h), `nvidia-smi topo -m` / `nvidia-smi nvlink -s`, sysfs. Every fact
// group records which source answered; what nobody answers is "unknown", never guessed.
//
// Reading is split in two so the logic is unit-tested without a GPU: read_gpu_topology gathers
// raw answers (topology_inputs) and assemble_topology, a pure function, turns them into JSON.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// --- parsers of nvidia-smi text (pure) ---------------------------------------------------------

// One cell of `nvidia-smi topo -m`: "X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS".
struct topo_cell {
  enum class kind { self, nvlink, pcie, unknown };
  kind what = kind::unknown;
  int nvlinks = 0;        // for nvlink: the bonded link count (NV#)
  std::string pcie_path;  // for pcie: PIX, PXB, PHB, NODE or SYS
};
[[nodiscard]] topo_cell parse_topo_cell(std::string_view cell);

// The GPU rows of `nvidia-smi topo -m`, indexed by nvidia-smi's GPU index (PCI bus order, which
// is not necessarily CUDA's order). NIC rows and columns and the legend are ignored; terminal
// escape sequences (bold/underline headers) are stripped.
struct smi_topology {
  struct gpu_row {
    std::vector<topo_cell> to_gpu;  // to_gpu[j]: the link from this GPU to GPU j
    std::string cpu_affinity;       // "0-55,112-167", or "" when N/A
    int numa_node = -1;             // -1 when N/A
  };
  std::vector<gpu_row> gpus;
};
// nullopt when the text has no "GPU0 ..." header with matching rows.
[[nodiscard]] std::optional<smi_topology> parse_smi_topology(std::string_view text);

// `nvidia-smi nvlink -s`: per GPU UUID, the rate of every link (nullopt = inactive/down).
[[nodiscard]] std::map<std::string, std::vector<std::optional<double>>> parse_smi_nvlink_status(std::string_view text);

// `nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader`: nvidia-smi index -> bus id
// (normalised).
[[nodiscard]] std::map<int, std::string> parse_smi_bus_ids(std::string_view text);

// "00000000:3B:00.0" or "0000:3b:00.0" -> "0000:3b:00.0" (NVML writes 8 domain digits, CUDA 4);
// the text unchanged (lower-cased) when it is not a PCI address.
[[nodiscard]] std::string normalize_pci_bus_id(std::string_view id);

// nvmlGpuTopologyLevel_t value -> "PIX", "PXB", "PHB", "NODE", "SYS" ("" for unknown values).
[[nodiscard]] std::string pcie_path_from_nvml_level(unsigned int level);

// One GPU's NVLinks from its `nvidia-smi nvlink -s` block (one rate per link, nullopt = down):
// the active links and the rate most of them report, else, when it has active links, the rate
// nvidia-smi reports for its generation (hdb/util/nvlink_rates.hpp). The one rule the topology
// and the fingerprint (meta.json node.gpus[i].nvlink.per_link_GBps, the reported rate the
// harness's NVLink peaks turn into a data rate) share.
struct nvlink_summary {
  int links_active = 0;
  std::optional<double> per_link_GBps;
  std::string rate_source;  // "nvidia-smi nvlink -s", "table by compute capability" or ""
};
[[nodiscard]] nvlink_summary summarize_nvlinks(const std::vector<std::optional<double>>& smi_rates, int cc_major,
                                               int cc_minor);
// The same when another source (NVML) counted the active links and nvidia-smi may not have
// answered (`smi_rates` null).
[[nodiscard]] std::optional<double> nvlink_per_link_rate(const std::vector<std::optional<double>>* smi_rates,
                                                         int links_active, int cc_major, int cc_minor,
                                                         std::string& rate_source);

// --- facts as gathered, and their assembly (pure) ----------------------------------------------

struct gpu_topology_input {
  int index = 0;            // CUDA index
  std::string uuid;         // "GPU-..."
  std::string pci_bus_id;   // normalised
  int cc_major = 0;
  int cc_minor = 0;
  // NVML, when it answered for this GPU.
  bool nvml_ok = false;
  std::vector<std::string> nvlink_remotes;  // normalised bus id of the far end of each active link
  std::optional<unsigned int> nvlink_version;
  std::optional<int> pcie_gen_current, pcie_gen_max, pcie_width_current, pcie_width_max;
  // sysfs (or nothing): -1 / "" when unknown.
  int numa_node = -1;
  std::string cpu_affinity;
  std::optional<int> sysfs_gen_current, sysfs_gen_max, sysfs_width_current, sysfs_width_max;
};

struct peer_input {
  int src = 0;  // CUDA indices
  int dst = 0;
  bool can_access_peer = false;
  int performance_rank = -1;  // cudaDevP2PAttrPerformanceRank (lower = closer)
  bool native_atomics = false;
  bool access_supported = false;
  std::string nvml_pcie_path;  // from nvmlDeviceGetTopologyCommonAncestor, "" when unknown
};

struct topology_inputs {
  std::vector<gpu_topology_input> gpus;  // the devices asked for, in that order
  std::vector<peer_input> pairs;         // every ordered pair of them
  std::string nvml_status;               // "ok" or why NVML is not used
  // Raw nvidia-smi output, nullopt when it did not run.
  std::optional<std::string> smi_topo, smi_nvlink, smi_bus_ids;
};

// The JSON layout (meta.json node.topology and the p2p binary's `p2p.topology` context):
// {
//   "sources": {"cuda": "ok", "nvml": "ok" | why not, "nvidia_smi": "ok" | why not},
//   "gpus": [{"index", "uuid", "pci_bus_id",
//             "pcie": {"gen_current", "gen_max", "width_current", "width_max", "source"},
//             "numa_node", "cpu_affinity", "placement_source",
//             "nvlink": {"links_active", "per_link_GBps", "version", "source", "rate_source"}}],
//   "pairs": [{"src", "dst", "can_access_peer", "performance_rank", "native_atomics",
//              "access_supported", "peer_source": "cuda",
//              "link": {"type": "nvlink"|"pcie"|"unknown", "links", "per_link_GBps",
//                       "peak_GBps" (links x the data rate of per_link_GBps, per direction:
//                       hdb/util/nvlink_rates.hpp), "via": "direct"|"nvswitch",
//                       "pcie_path", "source", "rate_source"}}]
// }
// Unknown numbers are null; every group's "source" names where it came from.
[[nodiscard]] nlohmann::json assemble_topology(const topology_inputs& inputs);

// Gathers the inputs (CUDA runtime for every device and ordered pair, NVML, nvidia-smi, sysfs)
// and assembles them. Never throws for a missing source; throws cuda_error only when the CUDA
// runtime itself fails on a device it listed.
[[nodiscard]] nlohmann::json read_gpu_topology(const std::vector<int>& devices);

}  // namespace hdb
