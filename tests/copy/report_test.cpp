// The copy family's report rules, and the peaks of the traffic classes its rates carry (PCIe per
// direction of the GPU, the sum of the links for all GPUs at once, the slowest GPU's link for its
// share, twice one link for bidir, HBM read + write for d2d). The two anomalies on both sides of
// their limits (pageable beating pinned by more than 5 % from 64 KiB, h2d/d2h asymmetry above
// 10 %), and the bidir section at each GPU's largest size.
#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/data/traffic.hpp"
#include "report_rows.hpp"
#include "test_helpers.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace hdb {
family_rules copy_report_rules();
}

using nlohmann::json;

namespace {

hdb::result_row median(const std::string& direction, std::size_t size, const std::string& metric, double value,
                       const std::string& device = "0", const std::string& host_kind = "pinned") {
  return hdb_test::median_row("copy", "bandwidth",
                              {{"direction", direction}, {"host_kind", host_kind}, {"api", "async"},
                               {"size_bytes", std::to_string(size)}, {"device", device}},
                              metric, "GB/s", value);
}

// Two GPUs: GPU 0 at PCIe Gen5 x16 (63.0 GB/s per direction), GPU 1 at Gen4 x16 (31.5), HBM 4800 GB/s.
json two_gpu_meta() {
  const auto gpu = [](int index, int gen) {
    return json{{"index", index},
                {"uuid", hdb_test::gpu_uuid(index)},
                {"pcie", {{"gen_current", gen}, {"gen_max", gen}, {"width_current", 16}, {"width_max", 16}}},
                {"hbm_peak_GBps", 4800.0}};
  };
  return {{"node", {{"gpus", {gpu(0, 5), gpu(1, 4)}}}}};
}

constexpr std::size_t gib = std::size_t{1} << 30;
constexpr std::size_t kib = 1024;

}  // namespace

TEST_CASE("peaks of the traffic classes copy's rates carry", "[copy][report]") {
  const json meta = two_gpu_meta();
  const auto peak = [&](hdb::result_row row, const std::string& traffic) {
    row.traffic = traffic;
    return hdb::row_peak(row, meta);
  };
  const auto h2d = peak(median("h2d", gib, "bandwidth", 55), "pcie_per_direction");
  REQUIRE(h2d);
  CHECK(h2d->value == hdb_test::Approx(63.0).epsilon(0.01));
  CHECK(h2d->traffic_factor == 1);
  const auto slow_link = peak(median("d2h", gib, "bandwidth", 25, "1"), "pcie_per_direction");
  REQUIRE(slow_link);
  CHECK(slow_link->value == hdb_test::Approx(31.5).epsilon(0.01));  // the GPU it ran on, not GPU 0
  const auto both_gpus = peak(median("h2d", gib, "bandwidth", 80, "0,1"), "pcie_per_direction");
  REQUIRE(both_gpus);
  CHECK(both_gpus->value == hdb_test::Approx(63.0 + 31.5).epsilon(0.01));
  const auto slowest = peak(median("h2d", gib, "bandwidth_slowest_gpu", 30, "0,1"), "pcie_per_direction_per_gpu");
  REQUIRE(slowest);
  CHECK(slowest->value == hdb_test::Approx(31.5).epsilon(0.01));
  const auto bidir = peak(median("bidir", gib, "bandwidth", 100), "pcie_both_directions");
  REQUIRE(bidir);
  CHECK(bidir->value == hdb_test::Approx(2 * 63.0).epsilon(0.01));
  const auto d2d = peak(median("d2d", gib, "bandwidth", 2000, "0", "device"), "hbm_read_write");
  REQUIRE(d2d);
  CHECK(d2d->value == hdb_test::Approx(4800.0));
  CHECK(d2d->traffic_factor == 2);  // each counted byte is read and written
  CHECK(hdb::percent_of_peak(2000, *d2d) == hdb_test::Approx(2000 * 2 / 4800.0 * 100));
  CHECK_FALSE(peak(median("h2d", gib, "time_per_copy", 17), ""));
  CHECK_FALSE(peak(median("h2d", gib, "bandwidth", 55, "7"), "pcie_per_direction"));  // a GPU meta.json does not know
}

TEST_CASE("anomaly: pageable faster than pinned by more than 5 %, from 64 KiB up", "[copy][report]") {
  const auto rules = hdb::copy_report_rules();
  const auto with_pageable = [&](std::size_t size, double pageable) {
    return hdb_test::anomalies(rules, {median("h2d", size, "bandwidth", 50), median("h2d", size, "bandwidth", pageable, "0", "pageable")});
  };
  const auto faster = with_pageable(gib, 52.6);  // 5.2 % faster
  REQUIRE(faster.size() == 1);
  CHECK(hdb_test::contains(faster.front(), "pageable (52.6 GB/s) is faster than pinned (50 GB/s)"));
  CHECK(with_pageable(gib, 52.4).empty());        // 4.8 %: within the noise margin
  CHECK(with_pageable(64 * kib, 60).size() == 1);  // the smallest size the check applies to
  CHECK(with_pageable(16 * kib, 60).empty());      // below it both are bound by per-call overhead
}

TEST_CASE("anomaly: h2d and d2h pinned differ by more than 10 % at the largest size", "[copy][report]") {
  const auto rules = hdb::copy_report_rules();
  const auto with_d2h = [&](double d2h) {
    return hdb_test::anomalies(rules, {median("h2d", gib, "bandwidth", 55), median("d2h", gib, "bandwidth", d2h),
                                       // a smaller size far apart never counts: the largest one is the figure
                                       median("h2d", gib / 4, "bandwidth", 55), median("d2h", gib / 4, "bandwidth", 20)});
  };
  const auto lopsided = with_d2h(49);  // 10.9 %
  REQUIRE(lopsided.size() == 1);
  CHECK(hdb_test::contains(lopsided.front(), "h2d 55 GB/s vs d2h 49 GB/s differ by 11 % (> 10 %)"));
  CHECK(with_d2h(50).empty());  // 9.1 %
  CHECK(with_d2h(61.5).size() == 1);  // either way round: 10.6 %
}

TEST_CASE("section: the bidir total and its shares at each GPU's largest size", "[copy][report]") {
  const auto rules = hdb::copy_report_rules();
  const std::vector<hdb::result_row> rows = {
      median("bidir", gib / 4, "bandwidth", 101), median("bidir", gib, "bandwidth", 92),
      median("bidir", gib, "bandwidth_h2d", 46),  median("bidir", gib, "bandwidth_d2h", 51),
      median("bidir", gib, "bandwidth", 97, "1"), median("h2d", gib, "bandwidth", 55),
  };
  const std::string md = rules.section(rows, json::object());
  INFO(md);
  CHECK(md.find("| 0 | 1 GiB | 92 GB/s | 46 GB/s | 51 GB/s |") != std::string::npos);
  CHECK(md.find("| 1 | 1 GiB | 97 GB/s |  |  |") != std::string::npos);
  CHECK(md.find("101") == std::string::npos);  // a smaller size is not the figure
  CHECK(rules.section({median("h2d", gib, "bandwidth", 55)}, json::object()).empty());
}
