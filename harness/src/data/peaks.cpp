#include "hdb/harness/data/peaks.hpp"

#include <array>

namespace hdb {

std::optional<double> pcie_peak_gbps(int generation, int lanes) {
  constexpr std::array<double, 6> transfers_per_s = {2.5, 5, 8, 16, 32, 64};  // GT/s per lane, Gen1..Gen6
  if (generation < 1 || generation > static_cast<int>(transfers_per_s.size()) || lanes <= 0) return std::nullopt;
  const double encoding = generation <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
  return transfers_per_s[static_cast<std::size_t>(generation - 1)] * lanes * encoding / 8;
}

}  // namespace hdb
