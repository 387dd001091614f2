// The sync family's report rules: each anomaly on both sides of its limit (an empty launch above
// 10 us, launch + sync above 40 us, a graph of >= 100 kernels no faster than its launches, a
// sync call on finished work outside bare processes' range, a scheduling mode that did not change
// how the host waits, a calibration looser than 5 us, keeping
// the value on the GPU below 90 % of never reading back, a never-read-back loop not bound by its
// kernels, a device-side dependency no faster than a host round trip), and the section: launch
// cost and K launches vs one graph per GPU, the sync trap at k = 1 per way of reading back.
#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "report_rows.hpp"
#include "test_helpers.hpp"

#include <string>
#include <vector>

namespace hdb {
family_rules sync_report_rules();
}

namespace {

hdb::result_row median(const std::string& case_name, const std::string& api, hdb_test::label_params params,
                       const std::string& metric, double value, const std::string& device = "0") {
  params.insert(params.begin(), {{"api", api}, {"device", device}});
  return hdb_test::median_row("sync", case_name, params, metric, metric == "relative_throughput" ? "ratio" : "us", value);
}

std::vector<std::string> anomalies(const std::vector<hdb::result_row>& rows) {
  return hdb_test::anomalies(hdb::sync_report_rules(), rows);
}

}  // namespace

TEST_CASE("anomaly: an empty launch above 10 us, launch + sync above 40 us", "[sync][report]") {
  const auto launch = [](double launch_us, double sync_us) {
    return anomalies({median("launch", "empty_kernel", {}, "launch_time", launch_us, "1"),
                      median("launch", "empty_kernel", {}, "launch_sync_time", sync_us, "1")});
  };
  const auto slow_launch = launch(10.5, 12);
  REQUIRE(slow_launch.size() == 1);
  CHECK(hdb_test::contains(slow_launch.front(), "GPU 1: an empty kernel launch costs 10.5 us of host time"));
  CHECK(launch(9.5, 12).empty());
  const auto slow_sync = launch(4, 41);
  REQUIRE(slow_sync.size() == 1);
  CHECK(hdb_test::contains(slow_sync.front(), "launch + cudaStreamSynchronize takes 41 us"));
  CHECK(launch(4, 39).empty());
}

TEST_CASE("anomaly: a graph of 100 or more kernels no faster than the launches", "[sync][report]") {
  const auto graph = [](const std::string& kernels, double launches_us, double graph_us) {
    return anomalies({median("graph", "launches", {{"kernels", kernels}}, "total_time", launches_us),
                      median("graph", "graph", {{"kernels", kernels}}, "total_time", graph_us)});
  };
  const auto flat = graph("100", 450, 450);
  REQUIRE(flat.size() == 1);
  CHECK(hdb_test::contains(flat.front(), "one graph of 100 empty kernels (450 us) is no faster than 100 launches"));
  CHECK(graph("100", 450, 449).empty());
  CHECK(graph("10", 45, 50).empty());  // too few kernels to amortise anything
}

TEST_CASE("anomaly: a sync call on finished work outside bare processes' range by more than 20 %", "[sync][report]") {
  const auto cost = [](double family_us, double low_us, double high_us) {
    return anomalies({median("sync_cost", "cudaStreamSynchronize", {}, "call_time", family_us),
                      median("sync_cost", "cudaStreamSynchronize", {}, "bare_call_time_low", low_us),
                      median("sync_cost", "cudaStreamSynchronize", {}, "bare_call_time_high", high_us)});
  };
  const auto dear = cost(1.75, 1.30, 1.45);  // 1.75 > 1.2 x 1.45 = 1.74
  REQUIRE(dear.size() == 1);
  CHECK(hdb_test::contains(dear.front(), "GPU 0: cudaStreamSynchronize on finished work costs 1.75 us in the family process"));
  CHECK(hdb_test::contains(dear.front(), "1.3-1.45 us in bare processes"));
  CHECK(cost(1.73, 1.30, 1.45).empty());
  CHECK(cost(1.05, 1.30, 1.45).empty());  // 0.8 x 1.30 = 1.04
  CHECK(cost(1.03, 1.30, 1.45).size() == 1);
  // A device sync's per-process level is the API's, not the family's: never flagged.
  CHECK(anomalies({median("sync_cost", "cudaDeviceSynchronize", {}, "call_time", 0.77),
                   median("sync_cost", "cudaDeviceSynchronize", {}, "bare_call_time_low", 0.43),
                   median("sync_cost", "cudaDeviceSynchronize", {}, "bare_call_time_high", 0.47)})
            .empty());
}

TEST_CASE("anomaly: a scheduling mode or event flag that did not change how the host waits", "[sync][report]") {
  const auto busy = [](const std::string& mode, const std::string& api, double percent) {
    return anomalies({median("wakeup", api, {{"mode", mode}}, "cpu_busy", percent)});
  };
  CHECK(busy("blocking_sync", "cudaStreamSynchronize", 51).size() == 1);
  CHECK(hdb_test::contains(busy("blocking_sync", "cudaDeviceSynchronize", 51).at(0), "blocking-sync should sleep"));
  CHECK(busy("blocking_sync", "cudaStreamSynchronize", 49).empty());
  // An event without cudaEventBlockingSync spins in every mode: not an anomaly.
  CHECK(busy("blocking_sync", "cudaEventSynchronize", 99).empty());
  CHECK(hdb_test::contains(busy("spin", "cudaEventSynchronize_BlockingSync", 51).at(0), "should sleep in any mode"));
  CHECK(busy("spin", "cudaEventSynchronize_BlockingSync", 49).empty());
  CHECK(hdb_test::contains(busy("spin", "cudaStreamSynchronize", 49).at(0), "spin mode should spin"));
  CHECK(busy("spin", "cudaStreamSynchronize", 51).empty());
}

TEST_CASE("anomaly: a host <-> GPU clock calibration looser than 5 us", "[sync][report]") {
  const auto calibration = [](double worst) {
    return anomalies({median("wakeup", "cudaStreamSynchronize", {{"mode", "spin"}}, "clock_uncertainty", 0.4),
                      median("wakeup", "cudaDeviceSynchronize", {{"mode", "spin"}}, "clock_uncertainty", worst)});
  };
  const auto loose = calibration(5.5);
  REQUIRE(loose.size() == 1);  // one line per GPU, its worst calibration
  CHECK(hdb_test::contains(loose.front(), "good to +-5.5 us"));
  CHECK(calibration(4.5).empty());
}

TEST_CASE("anomaly: keeping the value on the GPU below 90 % of never reading back", "[sync][report]") {
  const auto kept = [](double throughput) {
    return anomalies({median("trap", "keep_on_gpu", {}, "relative_throughput", throughput)});
  };
  REQUIRE(kept(0.85).size() == 1);
  CHECK(hdb_test::contains(kept(0.85).front(), "reaches only 85 %"));
  CHECK(kept(0.95).empty());
  CHECK(anomalies({median("trap", "readback_pageable", {{"every", "1"}}, "relative_throughput", 0.2)}).empty());  // the trap itself
}

TEST_CASE("anomaly: a never-read-back loop that is not bound by its kernels", "[sync][report]") {
  const auto never_loop = [](double never_step, double kernel) {
    return anomalies({median("trap", "readback_pageable", {{"every", "1"}}, "baseline_time_per_step", never_step + 0.5),
                      median("trap", "sync_only", {{"every", "8"}}, "baseline_time_per_step", never_step),
                      median("trap", "sync_only", {{"every", "8"}}, "step_kernel_time", kernel)});
  };
  const auto faster = never_loop(3.82, 5.0);  // the fastest never loop is the one compared
  REQUIRE(faster.size() == 1);
  CHECK(hdb_test::contains(faster.front(), "GPU 0: "));
  CHECK(hdb_test::contains(faster.front(), "3.82 us per step"));
  CHECK(hdb_test::contains(faster.front(), "disagree"));
  const auto slower = never_loop(5.8, 5.0);
  REQUIRE(slower.size() == 1);
  CHECK(hdb_test::contains(slower.front(), "5.8 us per step"));
  CHECK(hdb_test::contains(slower.front(), "launch rate"));
  CHECK(never_loop(4.97, 5.01).empty());  // a healthy node: the loop is bound by its kernels
  CHECK(never_loop(5.4, 5.01).empty());   // launches near the kernel time still keep it bound
  CHECK(never_loop(4.7, 5.0).size() == 1);  // below 95 % of the kernel
  CHECK(never_loop(4.8, 5.0).empty());
  CHECK(never_loop(5.6, 5.0).size() == 1);  // above 110 %
}

TEST_CASE("anomaly: a cudaStreamWaitEvent dependency no faster than a host round trip", "[sync][report]") {
  const auto gap = [](double wait_event, double host) {
    return anomalies({median("dependency", "cudaStreamWaitEvent", {}, "gap", wait_event),
                      median("dependency", "host_sync_then_launch", {}, "gap", host)});
  };
  REQUIRE(gap(9, 9).size() == 1);
  CHECK(hdb_test::contains(gap(9, 9).front(), "(9 us gap) is no faster than a host round trip (9 us)"));
  CHECK(gap(1.8, 9).empty());
}

TEST_CASE("section: launch figures, launches vs graph, and the trap per way of reading back", "[sync][report]") {
  const auto rules = hdb::sync_report_rules();
  std::vector<hdb::result_row> rows = {
      median("launch", "empty_kernel", {}, "launch_time", 4.5),
      median("launch", "empty_kernel", {}, "launch_sync_time", 9.5),
      median("graph", "launches", {{"kernels", "100"}}, "total_time", 450),
      median("graph", "graph", {{"kernels", "100"}}, "total_time", 90),
      median("trap", "readback_pageable", {{"every", "1"}}, "relative_throughput", 0.25),
      median("trap", "readback_pageable", {{"every", "8"}}, "relative_throughput", 0.7),
      median("trap", "sync_only", {{"every", "1"}}, "relative_throughput", 0.4),
      median("trap", "keep_on_gpu", {}, "relative_throughput", 1.0),
      median("launch", "empty_kernel", {}, "launch_time", 4.0, "1"),
  };
  const std::string md = rules.section(rows, nlohmann::json::object());
  INFO(md);
  CHECK(md.find("| 0 | 4.5 us | 9.5 us | 450 vs 90 us (5x) |") != std::string::npos);
  CHECK(md.find("| 0 | 4x | 2.5x |  | 1x |") != std::string::npos);  // the async read-back was not measured
  CHECK(md.find("| 1 | 4 us |") != std::string::npos);               // every GPU gets its launch row
  CHECK(md.find("| 1 |  |") == std::string::npos);                   // but no empty trap row
  CHECK(md.find("not gated") != std::string::npos);
}

TEST_CASE("section: nothing to show without launch, graph or trap rows", "[sync][report]") {
  const auto rules = hdb::sync_report_rules();
  CHECK(rules.section({median("sync_cost", "cudaEventQuery", {}, "call_time", 1.4)}, nlohmann::json::object()).empty());
}
