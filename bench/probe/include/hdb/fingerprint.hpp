#pragma once
// What a number was measured on: the GPU, its link, clocks and placement. CUDA 13 dropped the
// clock fields from cudaDeviceProp and there is no nvml.h, so the runtime answers what it can
// and nvidia-smi (where present) the rest; every field group records its source.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace hdb {

struct gpu_fingerprint {
  nlohmann::json facts;  // one GPU: the probe's per-GPU object (see docs/benchmark-output.md)
};

struct node_fingerprint {
  nlohmann::json facts;  // driver, runtime, hostname, GPU count and a "gpus" array
};

// Reads one GPU. The PCIe link is read while a host-to-device copy keeps it busy, because links
// train down at idle and an idle reading would flag a healthy link as degraded.
[[nodiscard]] gpu_fingerprint read_gpu_fingerprint(int device);
// Driver, runtime, hostname and GPU count (hdbench-probe adds NCCL's version); with include_gpus, every GPU's fingerprint too.
[[nodiscard]] node_fingerprint read_node_fingerprint(bool include_gpus);

// Flattens the node fingerprint and the measured GPUs' (an array of read_gpu_fingerprint facts)
// into "node.*" / "gpu.<index>.*" context pairs.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> context_pairs(const nlohmann::json& node,
                                                                            const nlohmann::json& gpus);

// PCIe generation from a link speed string ("32.0 GT/s PCIe" -> 5), 0 if unknown.
[[nodiscard]] int pcie_generation_from_speed(const std::string& speed);

}  // namespace hdb
