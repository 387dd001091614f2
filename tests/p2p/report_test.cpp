// The p2p family's report rules: peaks from the topology, matrices per method at the largest
// size, the direct/staged ratio, anomalies, and the one-GPU case.
#include "catch_compat.hpp"
#include "hdb/harness/family_rules.hpp"
#include "report_rows.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace hdb {
family_rules p2p_report_rules();
}

using nlohmann::json;

namespace {

json two_gpu_meta(int links_gpu1 = 18) {
  json gpu = {{"pcie", {{"gen_current", 5}, {"gen_max", 5}, {"width_current", 16}, {"width_max", 16}}}};
  json g0 = gpu, g1 = gpu;
  g0["index"] = 0;
  g1["index"] = 1;
  const auto link = [](int links) {
    return json{{"type", "nvlink"}, {"links", links}, {"per_link_GBps", 26.5625}, {"peak_GBps", links * 26.5625},
                {"via", "direct"}, {"pcie_path", "SYS"}, {"source", "nvml"}};
  };
  json topology = {
      {"gpus",
       {{{"index", 0}, {"nvlink", {{"links_active", 18}, {"per_link_GBps", 26.5625}}}},
        {{"index", 1}, {"nvlink", {{"links_active", links_gpu1}, {"per_link_GBps", 26.5625}}}}}},
      {"pairs",
       {{{"src", 0}, {"dst", 1}, {"can_access_peer", true}, {"performance_rank", 0}, {"native_atomics", true}, {"link", link(18)}},
        {{"src", 1}, {"dst", 0}, {"can_access_peer", true}, {"performance_rank", 0}, {"native_atomics", true},
         {"link", link(links_gpu1)}}}}};
  return {{"node", {{"gpus", {g0, g1}}, {"topology", topology}}}};
}

hdb::result_row median(const std::string& case_name, const std::string& api, const std::string& direction, int src, int dst,
                       std::size_t size, const std::string& metric, double value) {
  const auto endpoint = [](int device) { return device >= 0 ? std::to_string(device) : std::string(); };
  return hdb_test::median_row("p2p", case_name,
                              {{"api", api}, {"direction", direction}, {"src", endpoint(src)}, {"dst", endpoint(dst)},
                               {"size_bytes", std::to_string(size)}},
                              metric, "GB/s", value);
}

constexpr std::size_t gib = std::size_t{1} << 30;

std::vector<hdb::result_row> two_gpu_rows(double slow_pair = 393) {
  return {median("bandwidth", "ce_peer", "uni", 0, 1, gib, "bandwidth", 394),
          median("bandwidth", "ce_peer", "uni", 1, 0, gib, "bandwidth", slow_pair),
          median("bandwidth", "ce_peer", "uni", 0, 1, 1 << 20, "bandwidth", 200),
          median("bandwidth", "staged", "uni", 0, 1, gib, "bandwidth", 52),
          median("bandwidth", "staged", "uni", 1, 0, gib, "bandwidth", 51),
          median("bandwidth", "staged", "uni", 0, 1, gib, "chunk_bytes", 8 << 20),
          median("bandwidth", "ce_peer", "bidir", 0, 1, gib, "bandwidth", 775),
          median("aggregate", "ce_peer", "all_pairs", -1, -1, gib, "bandwidth", 776),
          median("latency", "ce_peer", "uni", 0, 1, 1, "latency", 2.1),
          median("latency", "ce_peer", "uni", 0, 1, 1, "host_latency", 6.5)};
}

}  // namespace

TEST_CASE("peaks: NVLink per pair from the topology, PCIe for staged, x2 both ways", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  const json meta = two_gpu_meta();
  const auto direct = rules.peak(median("bandwidth", "ce_peer", "uni", 0, 1, gib, "bandwidth", 394), meta);
  REQUIRE(direct);
  CHECK(direct->value == hdb_test::Approx(18 * 26.5625));
  CHECK(direct->basis.find("NVLink 18 x") != std::string::npos);
  const auto staged = rules.peak(median("bandwidth", "staged", "uni", 0, 1, gib, "bandwidth", 52), meta);
  REQUIRE(staged);
  CHECK(staged->value == hdb_test::Approx(63.0).epsilon(0.01));
  const auto bidir = rules.peak(median("bandwidth", "ce_peer", "bidir", 0, 1, gib, "bandwidth", 775), meta);
  REQUIRE(bidir);
  CHECK(bidir->value == hdb_test::Approx(2 * 18 * 26.5625));
  CHECK_FALSE(rules.peak(median("bandwidth", "ce_no_peer", "uni", 0, 1, gib, "bandwidth", 40), meta));
  CHECK_FALSE(rules.peak(median("latency", "ce_peer", "uni", 0, 1, 1, "latency", 2), meta));
  const auto all = rules.peak(median("aggregate", "ce_peer", "all_pairs", -1, -1, gib, "bandwidth", 776), meta);
  REQUIRE(all);
  CHECK(all->value == hdb_test::Approx(2 * 18 * 26.5625));
}

TEST_CASE("section: matrices at the largest size and the direct/staged ratio", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  const std::string md = rules.section(two_gpu_rows(), two_gpu_meta());
  INFO(md);
  CHECK(md.find("at 1 GiB") != std::string::npos);
  CHECK(md.find("| GPU 0 | — | 394 |") != std::string::npos);
  CHECK(md.find("| GPU 1 | 393 | — |") != std::string::npos);
  CHECK(md.find("direct / staged") != std::string::npos);
  CHECK(md.find("| GPU 0 | — | 7.6 |") != std::string::npos);  // 394 / 52
  CHECK(md.find("Best staged chunk at 1 GiB: 0->1: 8 MiB") != std::string::npos);
  CHECK(md.find("0 <-> 1") != std::string::npos);
  CHECK(md.find("all pairs") != std::string::npos);
  CHECK(md.find("Small-transfer latency") != std::string::npos);
  CHECK(md.find("NVLink x18 (direct), PCIe SYS") != std::string::npos);
  CHECK(md.find("200") == std::string::npos);  // a smaller size never enters the matrix
}

TEST_CASE("anomalies: a slow pair, a lost link, P2P no better than staging", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  std::vector<std::string> healthy;
  rules.anomalies(two_gpu_rows(), two_gpu_meta(), healthy);
  CHECK(healthy.empty());

  std::vector<std::string> slow;
  rules.anomalies(two_gpu_rows(150), two_gpu_meta(), slow);
  REQUIRE(!slow.empty());
  CHECK(slow.front().find("GPU 1 -> GPU 0 ce_peer at 1 GiB") != std::string::npos);

  std::vector<std::string> degraded;
  rules.anomalies(two_gpu_rows(), two_gpu_meta(16), degraded);
  CHECK(std::any_of(degraded.begin(), degraded.end(),
                    [](const std::string& a) { return a.find("GPU 1 has 16 active NVLinks") != std::string::npos; }));

  auto rows = two_gpu_rows();
  rows.push_back(median("bandwidth", "staged", "uni", 1, 0, gib, "bandwidth", 500));
  rows.erase(rows.begin() + 4);  // the old 1->0 staged row
  std::vector<std::string> inverted;
  rules.anomalies(rows, two_gpu_meta(), inverted);
  CHECK(std::any_of(inverted.begin(), inverted.end(),
                    [](const std::string& a) { return a.find("no faster than staging") != std::string::npos; }));
}

TEST_CASE("one GPU: the section says why the matrices are empty and shows the loopback", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  hdb::result_row skipped = median("bandwidth", "ce_peer", "uni", 0, -1, gib, "bandwidth", 0);
  skipped.value.reset();
  skipped.stat.reset();
  skipped.status = hdb::row_status::skipped;
  skipped.reason = "needs >= 2 GPUs (this run selected 1)";
  const std::vector<hdb::result_row> rows = {skipped, median("bandwidth", "staged", "loopback", 0, 0, gib, "bandwidth", 47)};
  const std::string md = rules.section(rows, json::object());
  INFO(md);
  CHECK(md.find("needs >= 2 GPUs") != std::string::npos);
  CHECK(md.find("GPU 0 -> host -> GPU 0") != std::string::npos);
  CHECK(md.find("P2P bandwidth per pair") == std::string::npos);
}
