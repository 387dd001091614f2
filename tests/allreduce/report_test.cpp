// The allreduce family's report rules: busbw at the largest size below half of the slowest GPU's
// NVLink line rate (PCIe per direction without NVLink) on both sides of the limit, never for the
// P2P-disabled cases or smaller sizes; wrong values, failed or counted; and the section: scaling
// per rank count against n = 2, NVLink vs NCCL_P2P_DISABLE=1, communication/compute overlap, and the
// straggler table with its lesson on both sides of the 90 % wait share.
#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "report_rows.hpp"
#include "test_helpers.hpp"

#include <string>
#include <vector>

namespace hdb {
family_rules allreduce_report_rules();
}

using nlohmann::json;

namespace {

constexpr double per_link = 26.5625;  // as nvidia-smi reports NVLink 4: 25 GB/s of data

// `n` GPUs at PCIe Gen5 x16; `links[i]` active NVLinks on GPU i (none: a PCIe-only node).
json node_meta(const std::vector<int>& links) {
  json gpus = json::array();
  for (std::size_t i = 0; i < links.size(); ++i) {
    json gpu = {{"index", i},
                {"uuid", hdb_test::gpu_uuid(static_cast<int>(i))},
                {"compute_capability", "9.0"},
                {"pcie", {{"gen_current", 5}, {"gen_max", 5}, {"width_current", 16}, {"width_max", 16}}},
                {"hbm_peak_GBps", 4800.0}};
    if (links[i] > 0) gpu["nvlink"] = {{"links_active", links[i]}, {"per_link_GBps", per_link}};
    gpus.push_back(gpu);
  }
  return {{"node", {{"gpus", gpus}}}};
}

struct curve {
  std::string api = "all_reduce";
  int gpus = 2;
  std::string interconnect = "default";
  std::string placement = "out_of_place";
  std::string traffic = "nvlink_bus";  // the bench's pick for busbw with the default transports
};

std::string device_list(int gpus) {
  std::string list;
  for (int i = 0; i < gpus; ++i) list += (i == 0 ? "" : ",") + std::to_string(i);
  return list;
}

hdb::result_row median(const std::string& case_name, const std::string& metric, double value, std::size_t size,
                       const curve& c = {}) {
  const std::string unit = metric == "busbw" || metric == "algbw" ? "GB/s" : metric == "wrong_values" ? "count" : "us";
  return hdb_test::median_row("allreduce", case_name,
                              {{"api", c.api}, {"dtype", "float"}, {"size_bytes", std::to_string(size)},
                               {"ranks", std::to_string(c.gpus)}, {"placement", c.placement},
                               {"interconnect", c.interconnect}, {"device", device_list(c.gpus)},
                               {"traffic", metric == "busbw" && c.interconnect == "default" ? c.traffic : ""}},
                              metric, unit, value);
}

hdb::result_row busbw(double value, std::size_t size, const curve& c = {}) { return median("collective", "busbw", value, size, c); }

std::vector<std::string> anomalies(const std::vector<hdb::result_row>& rows, const json& meta) {
  auto out = hdb_test::anomalies(hdb::allreduce_report_rules(), rows, meta);
  for (const auto& line : out) UNSCOPED_INFO(line);
  return out;
}

constexpr std::size_t gib = std::size_t{1} << 30;
constexpr std::size_t mib = std::size_t{1} << 20;

}  // namespace

TEST_CASE("anomaly: busbw at the largest size below half the NVLink line rate", "[allreduce][report]") {
  const json meta = node_meta({18, 18});  // 450 GB/s per direction
  const auto low = anomalies({busbw(216, gib), busbw(40, mib)}, meta);
  REQUIRE(low.size() == 1);  // the largest size only: small sizes are latency-bound
  CHECK(hdb_test::contains(low.front(), "busbw 216 GB/s at the largest size is 48 % of the NVLink"));
  CHECK(hdb_test::contains(low.front(), "(450 GB/s)"));
  CHECK(anomalies({busbw(230, gib), busbw(40, mib)}, meta).empty());  // 51 %
  // NCCL_P2P_DISABLE=1 goes through host memory: never held to the NVLink rate.
  CHECK(anomalies({busbw(20, gib, {.interconnect = "p2p_disabled"})}, meta).empty());
  // Each curve on its own: the reduce-scatter half is judged apart from the all-reduce.
  CHECK(anomalies({busbw(400, gib), busbw(200, gib, {.api = "reduce_scatter"})}, meta).size() == 1);
}

TEST_CASE("anomaly: the busbw floor is half of the SLOWEST GPU's links", "[allreduce][report]") {
  // GPU 1 has 9 links: 225 GB/s is the line rate of the case, so 200 GB/s is 89 % of it.
  CHECK(anomalies({busbw(200, gib)}, node_meta({18, 9})).empty());
  CHECK(anomalies({busbw(110, gib)}, node_meta({18, 9})).size() == 1);
}

TEST_CASE("anomaly: without NVLink, busbw against PCIe per direction", "[allreduce][report]") {
  // A case on a node without NVLink that picks one GPU's PCIe per direction for its busbw.
  const json meta = node_meta({0, 0});  // 63 GB/s per direction
  const auto low = anomalies({busbw(30, gib, {.traffic = "pcie_per_direction_per_gpu"})}, meta);
  REQUIRE(low.size() == 1);
  CHECK(hdb_test::contains(low.front(), "PCIe per direction"));
  CHECK(anomalies({busbw(33, gib, {.traffic = "pcie_per_direction_per_gpu"})}, meta).empty());
  CHECK(anomalies({busbw(30, gib)}, meta).empty());  // nvlink_bus on a node without NVLink: no peak, no verdict
}

TEST_CASE("anomaly: wrong values, from a failed verification or counted", "[allreduce][report]") {
  const json meta = node_meta({18, 18});
  hdb::result_row failed = median("collective", "busbw", 0, gib);
  failed.value.reset();
  failed.stat.reset();
  failed.status = hdb::row_status::failed;
  failed.reason = "verification failed: wrong values at element 17";
  const auto found = anomalies({failed, busbw(400, gib)}, meta);
  REQUIRE(found.size() == 1);
  CHECK(hdb_test::contains(found.front(), "wrong values: verification failed: wrong values at element 17"));
  const auto counted = anomalies({median("collective", "wrong_values", 3, gib), busbw(400, gib)}, meta);
  REQUIRE(counted.size() == 1);
  CHECK(hdb_test::contains(counted.front(), "wrong values: 3 wrong"));
  CHECK(anomalies({median("collective", "wrong_values", 0, gib), busbw(400, gib)}, meta).empty());
}

TEST_CASE("section: scaling against n = 2, NVLink vs P2P disabled, overlap", "[allreduce][report]") {
  const auto rules = hdb::allreduce_report_rules();
  const json meta = node_meta({18, 18, 18, 18});
  const std::vector<hdb::result_row> rows = {
      median("collective", "algbw", 1500, gib, {.gpus = 1}),
      busbw(360, gib),
      busbw(120, mib),
      median("collective", "time", 20, 4, {.gpus = 2}),
      busbw(342, gib, {.gpus = 4}),
      busbw(40, gib, {.interconnect = "p2p_disabled"}),
      median("overlap", "comm_hidden", 0.75, 64 * mib),
      median("overlap", "comm_time", 300, 64 * mib),
  };
  const std::string md = rules.section(rows, meta);
  INFO(md);
  CHECK(hdb_test::contains(md, "All-reduce scaling"));
  CHECK(hdb_test::contains(md, "| 1 | 1073741824 | algbw 1500 |"));
  CHECK(hdb_test::contains(md, "| 2 | 1073741824 | busbw 360 |"));
  CHECK(hdb_test::contains(md, "| 1.00 | 20 us @ 4 B |"));
  CHECK(hdb_test::contains(md, "| 0.95 |"));  // 342 / 360 at n = 4
  CHECK(hdb_test::contains(md, "| 2 | 1073741824 | 360 | 40 | 9.0x |"));
  CHECK(hdb_test::contains(md, "| 300 |"));
  CHECK(hdb_test::contains(md, "| 0.75 |"));
  CHECK(rules.section({}, meta).empty());
}

namespace {

// One straggler row of rank `rank` (of 2, the late one being rank 1) at `delay` us.
hdb::result_row straggler(const std::string& metric, double value, int delay, int rank) {
  const std::string unit = metric == "slowest_fastest" ? "ratio" : metric == "wrong_values" ? "count" : "us";
  return hdb_test::median_row("allreduce", "straggler",
                              {{"api", "all_reduce"}, {"dtype", "float"}, {"placement", "out_of_place"},
                               {"interconnect", "default"}, {"ranks", "2"}, {"size_bytes", std::to_string(64 * mib)},
                               {"launch", "stream"}, {"straggler_rank", "1"}, {"delay_us", std::to_string(delay)},
                               {"rank", std::to_string(rank)}, {"device", "0,1"}},
                              metric, unit, value);
}

// Both ranks at delay 0 and 1000: rank 0 (punctual) rises by rise0, rank 1 (late) by rise1.
std::vector<hdb::result_row> straggler_rows(double rise0, double rise1) {
  return {straggler("rank_time", 200, 0, 0),
          straggler("rank_time", 202, 0, 1),
          straggler("time_in_collective", 200, 0, 0),
          straggler("time_in_collective", 199, 0, 1),
          straggler("slowest_fastest", 1.01, 0, 0),
          straggler("rank_time", 200 + rise0, 1000, 0),
          straggler("rank_time", 202 + rise1, 1000, 1),
          straggler("time_in_collective", 200 + rise0, 1000, 0),
          straggler("time_in_collective", 201, 1000, 1),
          straggler("slowest_fastest", 6.0, 1000, 1)};
}

}  // namespace

TEST_CASE("section: the straggler table, and its lesson when every rank waited", "[allreduce][report]") {
  const auto rules = hdb::allreduce_report_rules();
  const json meta = node_meta({18, 18});
  const std::string md = rules.section(straggler_rows(1004, 1003), meta);
  INFO(md);
  CHECK(hdb_test::contains(md, "#### Straggler: one rank enters every all-reduce late"));
  // Only straggler rows: no empty scaling table before it.
  CHECK_FALSE(hdb_test::contains(md, "All-reduce scaling"));
  CHECK(hdb_test::contains(md, "| 0 | 0 | 200 | 200 | 0 | 1.01 |"));
  CHECK(hdb_test::contains(md, "| 1000 | 0 | 1204 | 1204 | 1004 | - |"));
  CHECK(hdb_test::contains(md, "| 1000 | 1 (late) | 1205 | 201 | 1003 | 6.00 |"));
  CHECK(hdb_test::contains(md, "With one rank 1000 us late, every rank took at least 1003 us longer per collective than "
                               "with none (the least rise over 2 ranks): the collective waits for its slowest member"));
  CHECK(hdb_test::contains(md, "Inside NCCL the late rank spent 201 us per collective, the ranks that waited up to 1204 us"));
  // 901 of 1000 us is still a wait (above 90 %); 899 is not, and the lesson is not claimed.
  CHECK(hdb_test::contains(rules.section(straggler_rows(901, 1003), meta), "waits for its slowest member"));
  const std::string short_wait = rules.section(straggler_rows(899, 1003), meta);
  CHECK_FALSE(hdb_test::contains(short_wait, "waits for its slowest member"));
  CHECK(hdb_test::contains(short_wait, "at least 899 us longer"));
  CHECK(hdb_test::contains(short_wait, "less than 90 % of the delay"));
}

TEST_CASE("section: no straggler lesson without a no-delay row for every rank", "[allreduce][report]") {
  const auto rules = hdb::allreduce_report_rules();
  const json meta = node_meta({18, 18});
  std::vector<hdb::result_row> rows = straggler_rows(1004, 1003);
  rows.erase(rows.begin() + 1);  // rank 1's rank_time at delay 0
  const std::string md = rules.section(rows, meta);
  INFO(md);
  CHECK(hdb_test::contains(md, "| 1000 | 1 (late) | 1205 | 201 | - | 6.00 |"));
  CHECK_FALSE(hdb_test::contains(md, "With one rank"));
  // Rows of other cases alone say nothing about stragglers.
  CHECK_FALSE(hdb_test::contains(rules.section({busbw(360, gib)}, meta), "Straggler"));
}
