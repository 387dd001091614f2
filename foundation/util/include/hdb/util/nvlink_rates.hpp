// NVLink's rates per link and direction, by the generation a GPU's compute capability implies.
// nvidia-smi (`nvlink -s`) and NVML report a link's signalling rate; the data a link carries is
// less by its encoding (NVLink 2: 32/33, NVLink 4 and 5: 16/17). hdbench grades and draws every
// NVLink figure against the data rate, the convention of NVIDIA's "900 GB/s" for an H200 (450 a
// direction) and of PCIe's 63.0 GB/s a direction for Gen5 x16 (after 128b/130b).
#pragma once

#include <optional>

namespace hdb {

struct nvlink_generation {
  int version = 0;
  double reported_GBps = 0;  // what nvidia-smi reports for a link at full rate
  double data_GBps = 0;      // the data that link carries
};

// nullopt for GPUs without NVLink in the table (and for compute capabilities it does not know).
[[nodiscard]] std::optional<nvlink_generation> nvlink_generation_of(int cc_major, int cc_minor);

// The data rate of a link that reports `reported_GBps` on a GPU of that compute capability: the
// generation's data/reported ratio applied to it, so a link that reports half its rate counts
// half. nullopt when the generation is unknown: a rate of another convention is not guessed at.
[[nodiscard]] std::optional<double> nvlink_data_rate(double reported_GBps, int cc_major, int cc_minor);

}  // namespace hdb
