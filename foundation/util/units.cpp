#include "hdb/util/units.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

namespace hdb {

double gb_per_s(double bytes, double microseconds) { return bytes / microseconds / 1e3; }

std::string format_size(std::uint64_t bytes) {
  for (const auto& [shift, unit] : {std::pair{30, " GiB"}, std::pair{20, " MiB"}, std::pair{10, " KiB"}}) {
    const std::uint64_t scale = std::uint64_t{1} << shift;
    if (bytes >= scale && bytes % scale == 0) return std::to_string(bytes / scale) + unit;
  }
  return std::to_string(bytes) + " B";
}

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", std::round(seconds * 10) / 10);
  return text;
}

}  // namespace hdb
