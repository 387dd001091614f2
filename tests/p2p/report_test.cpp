// The p2p family's report rules, and the peaks its traffic classes give from the topology.
// Rules: matrices per method at the largest size, the direct/staged ratio, the one-GPU case, and
// the anomalies on both sides of their limits: a pair below 80 % of the MEDIAN of the other pairs
// with the same link (three GPUs, so the median is not any one pair), ce_peer below half its
// NVLink peak, a GPU with fewer active links, direct P2P no faster than staging.
#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/data/traffic.hpp"
#include "report_rows.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace hdb {
family_rules p2p_report_rules();
}

using nlohmann::json;

namespace {

// `n` H200s at PCIe Gen5 x16, every pair joined by NVLink 4 (nvidia-smi reports 26.5625 GB/s a
// link, 25 of data); GPU 1 has `links_gpu1` active links.
json nvlink_meta(int n, int links_gpu1 = 18) {
  constexpr double per_link = 26.5625;
  json gpus = json::array();
  json topology_gpus = json::array();
  json pairs = json::array();
  for (int i = 0; i < n; ++i) {
    const int links = i == 1 ? links_gpu1 : 18;
    gpus.push_back({{"index", i},
                    {"uuid", hdb_test::gpu_uuid(i)},
                    {"compute_capability", "9.0"},
                    {"pcie", {{"gen_current", 5}, {"gen_max", 5}, {"width_current", 16}, {"width_max", 16}}},
                    {"nvlink", {{"links_active", links}, {"per_link_GBps", per_link}}}});
    topology_gpus.push_back({{"index", i}, {"nvlink", {{"links_active", links}, {"per_link_GBps", per_link}}}});
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const int pair_links = i == 1 ? links_gpu1 : 18;
      pairs.push_back({{"src", i}, {"dst", j}, {"can_access_peer", true}, {"performance_rank", 0}, {"native_atomics", true},
                       {"link", {{"type", "nvlink"}, {"links", pair_links}, {"per_link_GBps", per_link},
                                 {"peak_GBps", pair_links * 25.0}, {"via", "direct"}, {"pcie_path", "SYS"},
                                 {"source", "nvml"}}}});
    }
  }
  return {{"node", {{"gpus", gpus}, {"topology", {{"gpus", topology_gpus}, {"pairs", pairs}}}}}};
}

json two_gpu_meta(int links_gpu1 = 18) { return nvlink_meta(2, links_gpu1); }

// A p2p median as labelled: src/dst parameters, and the device list of the GPUs it spans (both
// GPUs of a pair, every GPU for all pairs at once: -1, -1).
hdb::result_row median(const std::string& case_name, const std::string& api, const std::string& direction, int src, int dst,
                       std::size_t size, const std::string& metric, double value) {
  const auto endpoint = [](int device) { return device >= 0 ? std::to_string(device) : std::string(); };
  const std::string devices = src < 0 ? "0,1"
                              : src == dst || dst < 0 ? std::to_string(src)
                                                      : std::to_string(std::min(src, dst)) + "," + std::to_string(std::max(src, dst));
  // The traffic class the bench picks for a bandwidth (bench/p2p: direct uni per direction, bidir
  // both directions, staged between two GPUs the smaller link, a loopback its GPU's link).
  std::string traffic;
  if (metric == "bandwidth" && case_name == "bandwidth" && api != "ce_no_peer") {
    traffic = api == "staged" ? (direction == "loopback" ? "pcie_per_direction" : direction == "uni" ? "pcie_per_direction_per_gpu" : "")
              : direction == "bidir" ? "nvlink_both_directions"
                                     : "nvlink_per_direction";
  }
  return hdb_test::median_row("p2p", case_name,
                              {{"api", api}, {"direction", direction}, {"src", endpoint(src)}, {"dst", endpoint(dst)},
                               {"size_bytes", std::to_string(size)}, {"device", devices}, {"traffic", traffic}},
                              metric, "GB/s", value);
}

constexpr std::size_t gib = std::size_t{1} << 30;

std::vector<hdb::result_row> two_gpu_rows(double slow_pair = 393) {
  return {median("bandwidth", "ce_peer", "uni", 0, 1, gib, "bandwidth", 394),
          median("bandwidth", "ce_peer", "uni", 1, 0, gib, "bandwidth", slow_pair),
          median("bandwidth", "ce_peer", "uni", 0, 1, 1 << 20, "bandwidth", 200),
          median("bandwidth", "staged", "uni", 0, 1, gib, "bandwidth", 52),
          median("bandwidth", "staged", "uni", 1, 0, gib, "bandwidth", 51),
          median("bandwidth", "staged", "uni", 0, 1, gib, "best_chunk_bytes", 8 << 20),
          median("bandwidth", "ce_peer", "bidir", 0, 1, gib, "bandwidth", 775),
          median("aggregate", "ce_peer", "all_pairs", -1, -1, gib, "bandwidth", 776),
          median("latency", "ce_peer", "uni", 0, 1, 1, "latency", 2.1),
          median("latency", "ce_peer", "uni", 0, 1, 1, "host_latency", 6.5)};
}

}  // namespace

TEST_CASE("peaks of the traffic classes p2p's rates carry: NVLink per pair, PCIe for staged, x2 both ways", "[p2p][report]") {
  const json meta = two_gpu_meta();
  const auto peak = [&](hdb::result_row row, const std::string& traffic) {
    row.traffic = traffic;
    return hdb::row_peak(row, meta);
  };
  const auto direct = peak(median("bandwidth", "ce_peer", "uni", 0, 1, gib, "bandwidth", 394), "nvlink_per_direction");
  REQUIRE(direct);
  CHECK(direct->value == hdb_test::Approx(18 * 25.0));
  const auto reverse = peak(median("bandwidth", "ce_peer", "uni", 1, 0, gib, "bandwidth", 394), "nvlink_per_direction");
  REQUIRE(reverse);
  CHECK(reverse->value == hdb_test::Approx(18 * 25.0));
  const auto staged = peak(median("bandwidth", "staged", "uni", 0, 1, gib, "bandwidth", 52), "pcie_per_direction_per_gpu");
  REQUIRE(staged);
  CHECK(staged->value == hdb_test::Approx(63.0).epsilon(0.01));
  const auto bidir = peak(median("bandwidth", "ce_peer", "bidir", 0, 1, gib, "bandwidth", 775), "nvlink_both_directions");
  REQUIRE(bidir);
  CHECK(bidir->value == hdb_test::Approx(2 * 18 * 25.0));
  // A lost link lowers its pair's peak, read from the topology.
  const auto degraded = hdb::row_peak([&] {
    auto row = median("bandwidth", "ce_peer", "uni", 1, 0, gib, "bandwidth", 300);
    row.traffic = "nvlink_per_direction";
    return row;
  }(), two_gpu_meta(16));
  REQUIRE(degraded);
  CHECK(degraded->value == hdb_test::Approx(16 * 25.0));
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

namespace {

// ce_peer uni at 1 GiB for every pair of three GPUs, in this order.
std::vector<hdb::result_row> three_gpu_rows(const std::vector<double>& values) {
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}};
  std::vector<hdb::result_row> rows;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    rows.push_back(median("bandwidth", "ce_peer", "uni", pairs[i].first, pairs[i].second, gib, "bandwidth", values.at(i)));
  }
  return rows;
}

}  // namespace

TEST_CASE("anomaly: a pair below 80 % of the median of its peers, not of any one peer", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  const json meta = nvlink_meta(3);
  // 1 -> 2 at 300 is 75 % of its peers' median (400), but twice the broken 0 -> 1 pair that comes first.
  const auto two_slow = hdb_test::anomalies(rules, three_gpu_rows({150, 400, 400, 300, 400, 400}), meta);
  for (const auto& line : two_slow) UNSCOPED_INFO(line);
  CHECK(hdb_test::count_containing(two_slow, "below the median of the 5 other pair(s)") == 2);
  CHECK(hdb_test::count_containing(two_slow, "GPU 0 -> GPU 1 ce_peer at 1 GiB: 150 GB/s, ") == 1);
  CHECK(hdb_test::count_containing(two_slow, "GPU 1 -> GPU 2 ce_peer at 1 GiB: 300 GB/s, 25 % below") == 1);
  // One fast pair first: the others sit at the median, so none is flagged.
  CHECK(hdb_test::anomalies(rules, three_gpu_rows({600, 390, 390, 390, 390, 390}), meta).empty());
  // Both sides of 80 %: 315 and 325 against a median of 400.
  CHECK(hdb_test::count_containing(hdb_test::anomalies(rules, three_gpu_rows({400, 400, 315, 400, 400, 400}), meta),
                                   "GPU 1 -> GPU 0") == 1);
  CHECK(hdb_test::anomalies(rules, three_gpu_rows({400, 400, 325, 400, 400, 400}), meta).empty());
  // And a quarter of a per cent either side: 319 is named, 321 is not; 320, 80 % itself, is not.
  CHECK(hdb_test::anomalies(rules, three_gpu_rows({400, 400, 320, 400, 400, 400}), meta).empty());
  CHECK(hdb_test::count_containing(hdb_test::anomalies(rules, three_gpu_rows({400, 400, 319, 400, 400, 400}), meta),
                                   "GPU 1 -> GPU 0") == 1);
  CHECK(hdb_test::anomalies(rules, three_gpu_rows({400, 400, 321, 400, 400, 400}), meta).empty());
}

namespace {

// Three GPUs: 0 <-> 1 and 0 <-> 2 over NVLink x18, 1 <-> 2 over PCIe only (through the CPU).
json mixed_link_meta() {
  json meta = nvlink_meta(3);
  for (auto& pair : meta["node"]["topology"]["pairs"]) {
    const int src = pair["src"], dst = pair["dst"];
    if ((src == 1 && dst == 2) || (src == 2 && dst == 1)) {
      pair["link"] = {{"type", "pcie"}, {"links", nullptr}, {"per_link_GBps", nullptr}, {"peak_GBps", nullptr},
                      {"via", nullptr}, {"pcie_path", "SYS"}, {"source", "nvml"}};
    }
  }
  return meta;
}

}  // namespace

TEST_CASE("anomaly: a pair is held to the pairs with the same link, not to every pair", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  const json meta = mixed_link_meta();
  // three_gpu_rows' order: 0->1, 0->2, 1->0, 1->2, 2->0, 2->1. The PCIe pairs move a tenth of
  // what the NVLink pairs do, as they should: against every pair (median 390) both would be named.
  const auto healthy = hdb_test::anomalies(rules, three_gpu_rows({390, 390, 390, 50, 390, 50}), meta);
  for (const auto& line : healthy) UNSCOPED_INFO(line);
  CHECK(hdb_test::count_containing(healthy, "below the median") == 0);
  // A slow PCIe pair against its one PCIe peer, a slow NVLink pair against its three NVLink peers.
  const auto slow = hdb_test::anomalies(rules, three_gpu_rows({300, 390, 390, 35, 390, 50}), meta);
  for (const auto& line : slow) UNSCOPED_INFO(line);
  CHECK(hdb_test::count_containing(slow, "below the median") == 2);
  CHECK(hdb_test::count_containing(slow, "GPU 1 -> GPU 2 ce_peer at 1 GiB: 35 GB/s, 30 % below the median of the 1 other "
                                         "pair(s) with the same link (pcie SYS, 50 GB/s)") == 1);
  CHECK(hdb_test::count_containing(slow, "GPU 0 -> GPU 1 ce_peer at 1 GiB: 300 GB/s, 23.1 % below the median of the 3 other "
                                         "pair(s) with the same link (nvlink x18 SYS, 390 GB/s)") == 1);
}

TEST_CASE("anomaly: ce_peer below half of its NVLink peak", "[p2p][report]") {
  const auto rules = hdb::p2p_report_rules();
  const json meta = nvlink_meta(3);
  const double peak = 18 * 25.0;  // NVLink 4's data rate, 450 GB/s
  const auto low = hdb_test::anomalies(rules, three_gpu_rows(std::vector<double>(6, 0.49 * peak)), meta);
  for (const auto& line : low) UNSCOPED_INFO(line);
  CHECK(hdb_test::count_containing(low, "GB/s is 49 % of its NVLink per direction") == 6);
  CHECK(hdb_test::anomalies(rules, three_gpu_rows(std::vector<double>(6, 0.51 * peak)), meta).empty());
}
