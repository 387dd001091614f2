#pragma once
// Theoretical peaks the report compares measurements with (formulas in docs/harness.md).
#include <optional>

namespace hdb {

// PCIe payload peak per direction, GB/s: GT/s x lanes x encoding / 8, with 8b/10b encoding
// for Gen1-2 (2.5, 5 GT/s) and 128b/130b for Gen3+ (8, 16, 32, 64 GT/s). Gen5 x16 = 63.0.
// Packet headers are not subtracted, so real copies top out some 10-15 % lower.
// nullopt for an unknown generation or a non-positive width.
[[nodiscard]] std::optional<double> pcie_peak_gbps(int generation, int lanes);

}  // namespace hdb
