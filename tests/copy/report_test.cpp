// The copy family's report section: both directions at once at the largest size per GPU, with
// the h2d and d2h shares (the bidir total does not gate, so the report is where it shows).
#include "catch_compat.hpp"
#include "hdb/harness/family_rules.hpp"
#include "report_rows.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace hdb {
family_rules copy_report_rules();
}

namespace {

hdb::result_row median(const std::string& direction, std::size_t size, const std::string& metric, double value,
                       const std::string& device = "0") {
  return hdb_test::median_row("copy", "bandwidth",
                              {{"direction", direction}, {"host_kind", "pinned"}, {"api", "async"},
                               {"size_bytes", std::to_string(size)}, {"device", device}},
                              metric, "GB/s", value);
}

constexpr std::size_t gib = std::size_t{1} << 30;

}  // namespace

TEST_CASE("section: the bidir total and its shares at each GPU's largest size", "[copy][report]") {
  const auto rules = hdb::copy_report_rules();
  const std::vector<hdb::result_row> rows = {
      median("bidir", gib / 4, "bandwidth", 101), median("bidir", gib, "bandwidth", 92),
      median("bidir", gib, "bandwidth_h2d", 46),  median("bidir", gib, "bandwidth_d2h", 51),
      median("bidir", gib, "bandwidth", 97, "1"), median("h2d", gib, "bandwidth", 55),
  };
  const std::string md = rules.section(rows, nlohmann::json::object());
  INFO(md);
  CHECK(md.find("| 0 | 1 GiB | 92 GB/s | 46 GB/s | 51 GB/s |") != std::string::npos);
  CHECK(md.find("| 1 | 1 GiB | 97 GB/s |  |  |") != std::string::npos);
  CHECK(md.find("101") == std::string::npos);  // a smaller size is not the figure
  CHECK(rules.section({median("h2d", gib, "bandwidth", 55)}, nlohmann::json::object()).empty());
}
