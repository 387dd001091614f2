#include "hdb/util/nvlink_rates.hpp"

namespace hdb {

std::optional<nvlink_generation> nvlink_generation_of(int cc_major, int cc_minor) {
  // Reported rates as nvidia-smi prints them on each generation (P100 20, V100 25.781, A100 25,
  // H100/H200 26.562, B200/GB200 53.125); data rates from NVIDIA's per-GPU totals (P100 160 GB/s
  // over 4 links, V100 300 over 6, A100 600 over 12, H100/H200 900 over 18, B200 1800 over 18,
  // each both directions).
  if (cc_major == 6 && cc_minor == 0) return nvlink_generation{1, 20.0, 20.0};
  if (cc_major == 7 && cc_minor == 0) return nvlink_generation{2, 25.78125, 25.0};
  if (cc_major == 8 && cc_minor == 0) return nvlink_generation{3, 25.0, 25.0};
  if (cc_major == 9 && cc_minor == 0) return nvlink_generation{4, 26.5625, 25.0};
  if (cc_major == 10) return nvlink_generation{5, 53.125, 50.0};
  return std::nullopt;
}

std::optional<double> nvlink_data_rate(double reported_GBps, int cc_major, int cc_minor) {
  const auto generation = nvlink_generation_of(cc_major, cc_minor);
  if (!generation || reported_GBps <= 0) return std::nullopt;
  return reported_GBps * generation->data_GBps / generation->reported_GBps;
}

}  // namespace hdb
