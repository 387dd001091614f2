// report.md of the golden run, and the anomaly rules on edited results.
#include <algorithm>

#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/report/report.hpp"
#include "test_support.hpp"

namespace {

struct golden {
  std::vector<hdb::result_row> rows = hdb::read_results_csv(hdb::read_text_file(hdb_test::golden_run() / "results.csv")).rows;
  nlohmann::json meta = *hdb::read_meta(hdb_test::golden_run() / "meta.json");
};

void scale_median(std::vector<hdb::result_row>& rows, const std::string& host_kind, const std::string& direction,
                  const std::string& size, double factor) {
  for (auto& row : rows) {
    if (row.metric == "bandwidth" && row.stat == hdb::statistic::median && row.param("host_kind") == host_kind &&
        row.param("direction") == direction && row.param("size_bytes") == size) {
      *row.value *= factor;
    }
  }
}

}  // namespace

TEST_CASE("report: fingerprint, headline figures against their traffic's peak, skips, failures", "[report]") {
  const golden g;
  const auto report = hdb::render_report(g.rows, g.meta, {"plots/copy_bandwidth.png"});
  CHECK(hdb_test::contains(report, "NVIDIA H200"));
  CHECK(hdb_test::contains(report, "peak 63.0 GB/s per direction"));
  CHECK(hdb_test::contains(report, "### Skipped"));
  CHECK(hdb_test::contains(report, "### Failed cases"));
  CHECK(hdb_test::contains(report, "exited with code 1 after 9 cases"));
  CHECK(hdb_test::contains(report, "[copy_bandwidth](plots/copy_bandwidth.png)"));
  // 16 MiB pinned h2d runs at 54.6 GB/s: 86.7 % of 63.0 (pcie_per_direction, from its label).
  CHECK(hdb_test::contains(report, "| bandwidth | device=0 api=async direction=h2d host_kind=pinned size_bytes=16777216 | bandwidth | "
                                   "54.6 GB/s | 0.31 % | 86.7 % | 63 GB/s: PCIe per direction, GPU 0 |"));
  // The family's summary and what its headline metrics mean come from its declaration.
  CHECK(hdb_test::contains(report, "host<->device and device<->device copy bandwidth"));
  CHECK(hdb_test::contains(report, "| latency | us | lower | device time per small copy, back to back |"));
}

TEST_CASE("report: skipped cases are grouped by reason, with a count and an example", "[report]") {
  golden g;
  const auto skipped_of = [](std::string size, std::string reason) {
    hdb::result_row row;
    row.family = "copy";
    row.case_name = "bandwidth";
    row.device = 0;
    row.params = {{"direction", "p2p"}, {"size_bytes", std::move(size)}};
    row.status = hdb::row_status::skipped;
    row.reason = std::move(reason);
    return row;
  };
  for (const char* size : {"1024", "2048", "4096"}) g.rows.push_back(skipped_of(size, "needs >= 2 GPUs (this run selected 1)"));
  g.rows.push_back(skipped_of("8192", "not enough device memory"));
  const auto report = hdb::render_report(g.rows, g.meta, {});
  CHECK(hdb_test::contains(report, "| reason | cases | example |"));
  CHECK(hdb_test::contains(report, "| needs >= 2 GPUs (this run selected 1) | 3 | bandwidth device=0 direction=p2p size_bytes=1024 |"));
  CHECK(hdb_test::contains(report, "| not enough device memory | 1 | bandwidth device=0 direction=p2p size_bytes=8192 |"));
  CHECK_FALSE(hdb_test::contains(report, "size_bytes=2048"));  // one row per reason, not per case
}

TEST_CASE("report: the check's verdict comes first, with every line that is not PASS", "[report]") {
  golden g;
  hdb::check_report check;
  check.run = "20261129T103122Z-gpu01";
  check.node_kind = "NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0";
  hdb::graded_line fine;
  fine.result = hdb::grade::pass;
  fine.gpus = {0};
  fine.family = "copy";
  fine.figure = "pinned d2h 1 GiB";
  hdb::graded_line slow = fine;
  slow.result = hdb::grade::fail;
  slow.figure = "pinned h2d 1 GiB";
  slow.value = 26.4;
  slow.unit = "GB/s";
  slow.reason = "worse than the band";
  check.lines = {fine, slow};
  check.passed = 1;
  check.failed = 1;
  const auto verdict = hdb::verdict_section(check);
  CHECK(hdb_test::contains(verdict, "## Verdict"));
  CHECK(hdb_test::contains(verdict, hdb::summary_line(check)));
  CHECK(hdb_test::contains(verdict, "| FAIL | GPU 0 | copy | pinned h2d 1 GiB | 26.4 GB/s | worse than the band |"));
  CHECK_FALSE(hdb_test::contains(verdict, "pinned d2h 1 GiB"));  // PASS lines stay in check.txt
  const auto report = hdb::render_report(g.rows, g.meta, {}, verdict);
  CHECK(report.find("## Verdict") < report.find("## Anomalies"));
}

TEST_CASE("report: the node's health record per GPU beside its figures, PASS included", "[report]") {
  golden g;
  hdb::check_report check;
  check.run = "20261129T103122Z-gpu01";
  check.lines = {hdb::health_line(hdb::grade::pass, {0}, "PCIe link", "Gen5 x16", "as it should be"),
                 hdb::health_line(hdb::grade::warn, {0}, "other processes", "pid 7 a.out (10 MiB)", "as it should be"),
                 hdb::health_line(hdb::grade::fail, {0}, "other processes", "pid 8 b.out (20 MiB)", "as it should be"),
                 hdb::health_line(hdb::grade::fail, {1}, "PCIe link", "Gen4 x16", "trained below its maximum Gen5 x16 while copying"),
                 hdb::health_line(hdb::grade::warn, {}, "health not read", "-", "no link counters")};
  const auto section = hdb::health_section(check);
  INFO(section);
  CHECK(hdb_test::contains(section, "## Health per GPU\n\n| GPU | PCIe link | other processes |\n"));
  CHECK(hdb_test::contains(section, "| 0 | PASS Gen5 x16 | WARN pid 7 a.out (10 MiB); FAIL pid 8 b.out (20 MiB) |\n"));
  CHECK(hdb_test::contains(section, "| 1 | FAIL Gen4 x16 | - |\n"));
  CHECK(hdb_test::contains(section, "- health not read: WARN (no link counters)\n"));
  const auto report = hdb::render_report(g.rows, g.meta, {}, hdb::verdict_section(check), section);
  CHECK(report.find("## Headlines per GPU") < report.find("## Health per GPU"));
  CHECK(report.find("## Health per GPU") < report.find("## Anomalies"));
  CHECK(hdb::health_section(hdb::check_report{}).empty());

  SECTION("with a FAIL, the verdict says what changed against the set's runs") {
    const auto& fields = hdb::fingerprint_fields();
    const auto driver = std::find_if(fields.begin(), fields.end(), [](const auto& f) { return f.name == "driver"; });
    REQUIRE(driver != fields.end());
    check.what_changed = {{&*driver, {}, "580.159.04", {{"580.95.05", 3}}}};
    CHECK(hdb_test::contains(hdb::verdict_section(check),
                             "what changed: driver 580.95.05 -> 580.159.04 (the 3 runs of the set agree)\n"));
  }
}

TEST_CASE("report: one headline table for the node, a GPU per row", "[report]") {
  golden g;
  std::vector<hdb::result_row> second;  // the same figures on GPU 1, h2d 20 % slower
  for (auto row : g.rows) {
    if (!row.headline || row.stat != hdb::statistic::median || row.device != 0) continue;
    row.device = 1;
    if (row.metric == "bandwidth" && row.param("direction") == "h2d") *row.value *= 0.8;
    second.push_back(row);
  }
  REQUIRE_FALSE(second.empty());
  g.rows.insert(g.rows.end(), second.begin(), second.end());
  const auto report = hdb::render_report(g.rows, g.meta, {});
  REQUIRE(hdb_test::contains(report, "## Headlines per GPU"));
  const auto table = report.substr(report.find("## Headlines per GPU"));
  // The fixture gates h2d at three sizes: each column names what tells it from its neighbours.
  CHECK(hdb_test::contains(table, "| GPU | copy bandwidth direction=h2d size_bytes=65536 (GB/s) |"));
  CHECK(hdb_test::contains(table, "copy bandwidth direction=d2h size_bytes=16777216 (GB/s)"));
  const auto row_of = [&](const std::string& gpu) {
    const auto start = table.find("\n| " + gpu + " |");
    return start == std::string::npos ? std::string() : table.substr(start + 1, table.find('\n', start + 1) - start - 1);
  };
  CHECK(hdb_test::contains(row_of("0"), "| 54.6 | 55.5 |"));
  CHECK(hdb_test::contains(row_of("1"), "| 43.7 | 55.5 |"));  // 54.6 x 0.8: the slow GPU's own row
  CHECK(report.find("## Headlines per GPU") < report.find("## Anomalies"));
}

TEST_CASE("anomaly rules", "[report]") {
  golden g;
  SECTION("a healthy run has none") { CHECK(hdb::find_anomalies(g.rows, g.meta).empty()); }
  SECTION("PCIe link below its maximum") {
    g.meta["node"]["gpus"][0]["pcie"]["gen_current"] = 4;
    const auto found = hdb::find_anomalies(g.rows, g.meta);
    REQUIRE(found.size() == 1);
    CHECK(hdb_test::contains(found[0], "Gen4 x16, below its maximum Gen5 x16"));
  }
  SECTION("throttled clocks, but idle is fine") {
    g.meta["node"]["gpus"][0]["clocks"]["throttle_reasons"] = "0x0000000000000001";
    CHECK(hdb::find_anomalies(g.rows, g.meta).empty());
    g.meta["node"]["gpus"][0]["clocks"]["throttle_reasons"] = "0x0000000000000004";
    CHECK(hdb::find_anomalies(g.rows, g.meta).size() == 1);
  }
  SECTION("direction asymmetry beyond 10 % at the largest size") {
    scale_median(g.rows, "pinned", "d2h", "16777216", 0.8);
    const auto found = hdb::find_anomalies(g.rows, g.meta);
    REQUIRE(found.size() == 1);
    CHECK(hdb_test::contains(found[0], "differ by"));
  }
  SECTION("pageable faster than pinned") {
    auto pageable = g.rows;
    for (const auto& row : g.rows) {
      if (row.metric == "bandwidth" && row.stat == hdb::statistic::median && row.param("size_bytes") == "1048576") {
        auto copy = row;
        copy.params["host_kind"] = "pageable";
        *copy.value *= 1.2;
        pageable.push_back(copy);
      }
    }
    const auto found = hdb::find_anomalies(pageable, g.meta);
    REQUIRE(found.size() == 1);
    CHECK(hdb_test::contains(found[0], "pageable"));
  }
  SECTION("pageable within noise of pinned, or at overhead-bound sizes, is not an anomaly") {
    const char* size = GENERATE("1048576", "1024");
    const double factor = std::string(size) == "1024" ? 1.2 : 1.03;
    auto pageable = g.rows;
    for (const auto& row : g.rows) {
      if (row.metric == "bandwidth" && row.stat == hdb::statistic::median && row.param("size_bytes") == "1048576") {
        auto copy = row;
        copy.params["host_kind"] = "pageable";
        copy.params["size_bytes"] = size;
        *copy.value *= factor;
        pageable.push_back(copy);
        if (std::string(size) == "1024") {
          auto pinned = row;
          pinned.params["size_bytes"] = size;
          pageable.push_back(pinned);
        }
      }
    }
    CHECK(hdb::find_anomalies(pageable, g.meta).empty());
  }
  SECTION("noisy headline metric: cv of its samples") {
    for (auto& row : g.rows) {
      if (row.stat == hdb::statistic::sample && row.metric == "latency" && row.sample_index == 0) *row.value *= 1.2;
    }
    const auto found = hdb::find_anomalies(g.rows, g.meta);
    REQUIRE(found.size() == 1);
    CHECK(hdb_test::contains(found[0], "copy latency device=0 api=async direction=h2d host_kind=pinned size_bytes=4 latency: cv "));
  }
}

TEST_CASE("a family's own rules add anomalies and a section, % of peak is its traffic's", "[report]") {
  // A stand-in family no generic code knows: its rules say what only it can, its rows' traffic the peak.
  hdb::register_family_rules({
      "standin",
      [](const std::vector<hdb::result_row>& rows, const nlohmann::json&, std::vector<std::string>& out) {
        for (const auto& row : rows) {
          if (row.family != "standin") out.push_back("rule saw a row of family " + row.family);
        }
        out.push_back("stand-in anomaly");
      },
      [](const std::vector<hdb::result_row>&, const nlohmann::json&) { return std::string("### Stand-in matrix\n"); },
      "Measured against the stand-in link.",
  });
  const golden g;
  // A golden headline median as the stand-in's: on GPU 0, the golden node's, and on a GPU 1 that
  // is not on it (so it has no peak).
  auto row = *std::find_if(g.rows.begin(), g.rows.end(), [](const hdb::result_row& r) { return r.headline && r.stat == hdb::statistic::median; });
  row.family = "standin";
  row.case_name = "flow";
  row.params.clear();
  row.metric = "rate";
  row.value = 31.5;
  std::vector<hdb::result_row> rows = {row};
  row.device = 1;
  row.gpu_uuid = "GPU-elsewhere";
  rows.push_back(row);
  rows.insert(rows.end(), g.rows.begin(), g.rows.end());
  const auto report = hdb::render_report(rows, g.meta, {});
  CHECK(hdb_test::contains(report, "| flow | device=0 | rate | 31.5 GB/s |  | 50.0 % | 63 GB/s: PCIe per direction, GPU 0 |"));
  CHECK(hdb_test::contains(report, "| flow | device=1 | rate | 31.5 GB/s |  |  |  |"));
  CHECK(hdb_test::contains(report, "- stand-in anomaly"));
  CHECK_FALSE(hdb_test::contains(report, "rule saw a row of family"));
  CHECK(hdb_test::contains(report, "### Stand-in matrix"));
  CHECK(hdb_test::contains(report, "Measured against the stand-in link."));
  CHECK_FALSE(hdb_test::contains(report, "GPU-elsewhere"));  // parameters show the index, the node table the UUID
}

TEST_CASE("meta.json records the GPU and NCCL environment, nothing else", "[meta]") {
  const char* environment[] = {"NCCL_NVLS_ENABLE=0", "PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=1,0", "NCCL_DEBUG",
                               "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "HOME=/root", nullptr};
  const auto recorded = hdb::gpu_environment(environment);
  CHECK(recorded == nlohmann::json{{"NCCL_NVLS_ENABLE", "0"},
                                   {"CUDA_VISIBLE_DEVICES", "1,0"},
                                   {"NCCL_DEBUG", ""},
                                   {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}});
  CHECK(hdb::gpu_environment(nullptr).empty());
}
