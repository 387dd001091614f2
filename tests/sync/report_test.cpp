// The sync family's report section: launch cost and K launches vs one graph per GPU, and the
// sync trap at k = 1 as "times slower than never" for each way of reading back.
#include "catch_compat.hpp"
#include "hdb/harness/family_rules.hpp"
#include "report_rows.hpp"
#include "test_helpers.hpp"

#include <string>
#include <vector>

namespace hdb {
family_rules sync_report_rules();
}

namespace {

hdb::result_row median(const std::string& case_name, const std::string& api, const std::string& extra,
                       const std::string& metric, double value, const std::string& device = "0") {
  return hdb_test::median_row("sync", case_name, {{"api", api}, {"device", device}}, metric,
                              metric == "relative_throughput" ? "ratio" : "us", value, extra);
}

}  // namespace

TEST_CASE("section: launch figures, launches vs graph, and the trap per way of reading back", "[sync][report]") {
  const auto rules = hdb::sync_report_rules();
  std::vector<hdb::result_row> rows = {
      median("launch", "empty_kernel", "", "launch_time", 4.5),
      median("launch", "empty_kernel", "", "launch_sync_time", 9.5),
      median("graph", "launches", "kernels=100", "total_time", 450),
      median("graph", "graph", "kernels=100", "total_time", 90),
      median("trap", "readback_pageable", "every=1", "relative_throughput", 0.25),
      median("trap", "readback_pageable", "every=8", "relative_throughput", 0.7),
      median("trap", "sync_only", "every=1", "relative_throughput", 0.4),
      median("trap", "keep_on_gpu", "", "relative_throughput", 1.0),
      median("launch", "empty_kernel", "", "launch_time", 4.0, "1"),
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
  CHECK(rules.section({median("sync_cost", "cudaEventQuery", "", "call_time", 1.4)}, nlohmann::json::object()).empty());
}

TEST_CASE("anomaly: a never-read-back loop that is not bound by its kernels", "[sync][report]") {
  const auto rules = hdb::sync_report_rules();
  const auto anomalies = [&](double never_step, double kernel) {
    std::vector<std::string> out;
    rules.anomalies({median("trap", "readback_pageable", "every=1", "baseline_time_per_step", never_step + 0.5),
                     median("trap", "sync_only", "every=8", "baseline_time_per_step", never_step),
                     median("trap", "sync_only", "every=8", "step_kernel_time", kernel)},
                    nlohmann::json::object(), out);
    return out;
  };
  const auto faster = anomalies(3.82, 5.0);  // the fastest never loop is the one compared
  REQUIRE(faster.size() == 1);
  CHECK(hdb_test::contains(faster.front(), "GPU 0: "));
  CHECK(hdb_test::contains(faster.front(), "3.82 us per step"));
  CHECK(hdb_test::contains(faster.front(), "disagree"));
  const auto slower = anomalies(5.8, 5.0);
  REQUIRE(slower.size() == 1);
  CHECK(hdb_test::contains(slower.front(), "5.8 us per step"));
  CHECK(hdb_test::contains(slower.front(), "launch rate"));
  CHECK(anomalies(4.97, 5.01).empty());  // a healthy node: the loop is bound by its kernels
  CHECK(anomalies(5.4, 5.01).empty());   // launches near the kernel time still keep it bound
}
