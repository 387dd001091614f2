// The overlap family's report rules, each anomaly on both sides of its limit: the best
// multi-stream pinned pass below 1.1x one stream, overlap efficiency below 70 % (or above 115 %)
// on >= 3 pinned non-blocking streams, pageable faster than pinned by more than 5 %, the legacy
// default stream or a host sync after each chunk costing less than 1.15x non-blocking streams, the
// per-thread default stream more than 1.15x slower, a CUDA graph more than 1.1x slower than stream
// launches, a calibrated kernel/copy ratio more than 1.3x off its target. And the section: best
// speedup per regime and stream count with its efficiency and chunk count, the movement tax, the
// stream-semantics variants.
#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "report_rows.hpp"
#include "test_helpers.hpp"

#include <string>
#include <vector>

namespace hdb {
family_rules overlap_report_rules();
}

namespace {

struct pass {
  int streams = 4;
  int chunks = 8;
  std::string host_kind = "pinned";
  std::string regime = "balanced";
  std::string api = "nonblocking";
  std::string device = "0";
};

hdb::result_row pipeline(const std::string& metric, double value, const pass& p) {
  const std::string unit = metric == "efficiency" ? "%" : metric == "throughput" ? "GB/s" : "ratio";
  return hdb_test::median_row("overlap", "pipeline",
                              {{"api", p.api}, {"host_kind", p.host_kind}, {"streams", std::to_string(p.streams)},
                               {"chunks", std::to_string(p.chunks)}, {"regime", p.regime}, {"device", p.device}},
                              metric, unit, value);
}

// A stream-semantics or graph case: balanced, pinned, one pipeline time per api.
hdb::result_row variant(const std::string& case_name, const std::string& api, const std::string& metric, double value) {
  return hdb_test::median_row("overlap", case_name,
                              {{"api", api}, {"host_kind", "pinned"}, {"regime", "balanced"}, {"device", "0"}}, metric,
                              metric == "speedup" ? "ratio" : "us", value);
}

hdb::result_row calibration(const std::string& regime, double ratio) {
  return hdb_test::median_row("overlap", "calibration", {{"regime", regime}, {"device", "0"}}, "kernel_copy_ratio", "ratio",
                              ratio);
}

std::vector<std::string> anomalies(const std::vector<hdb::result_row>& rows) {
  return hdb_test::anomalies(hdb::overlap_report_rules(), rows);
}

}  // namespace

TEST_CASE("anomaly: overlap efficiency below 70 % on three or more pinned streams", "[overlap][report]") {
  const auto low = anomalies({pipeline("efficiency", 69, {.streams = 4, .chunks = 8}),
                              pipeline("efficiency", 90, {.streams = 4, .chunks = 16})});
  REQUIRE(low.size() == 1);  // the worst chunk count of the (GPU, regime) is named
  CHECK(hdb_test::contains(low.front(), "GPU 0: balanced pipeline, pinned, 4 streams x 8 chunks: overlap efficiency 69 %"));
  CHECK(hdb_test::contains(low.front(), "expected >= 70 %"));
  CHECK(anomalies({pipeline("efficiency", 71, {.streams = 3})}).empty());
  CHECK(anomalies({pipeline("efficiency", 69, {.streams = 3})}).size() == 1);
  // The boundary itself: 70 % is enough, a tenth below is not.
  CHECK(anomalies({pipeline("efficiency", 70, {.streams = 3})}).empty());
  CHECK(anomalies({pipeline("efficiency", 69.9, {.streams = 3})}).size() == 1);
  CHECK(anomalies({pipeline("efficiency", 70.1, {.streams = 3})}).empty());
  // Two streams cannot reach the bound, and pageable or other issue modes are not judged.
  CHECK(anomalies({pipeline("efficiency", 40, {.streams = 2})}).empty());
  CHECK(anomalies({pipeline("efficiency", 40, {.host_kind = "pageable"})}).empty());
  CHECK(anomalies({pipeline("efficiency", 40, {.api = "graph"})}).empty());
  // One line per regime.
  CHECK(anomalies({pipeline("efficiency", 60, {}), pipeline("efficiency", 60, {.regime = "copy_heavy"})}).size() == 2);
}

TEST_CASE("anomaly: overlap efficiency above 115 % beats the bound", "[overlap][report]") {
  const auto high = anomalies({pipeline("efficiency", 116, {.chunks = 32}), pipeline("efficiency", 100, {.chunks = 8})});
  REQUIRE(high.size() == 1);
  CHECK(hdb_test::contains(high.front(), "4 streams x 32 chunks: overlap efficiency 116 % beats the ideal bound"));
  // The bound now comes from the probe beside each pass, not from a start-up calibration.
  CHECK(hdb_test::contains(high.front(), "the probe beside its passes measured the link or the kernel slower"));
  CHECK(anomalies({pipeline("efficiency", 114, {})}).empty());
  // The boundary itself: 115 % is still within the bound's reach, a tenth above it is not.
  CHECK(anomalies({pipeline("efficiency", 115, {})}).empty());
  CHECK(anomalies({pipeline("efficiency", 114.9, {})}).empty());
  CHECK(anomalies({pipeline("efficiency", 115.1, {})}).size() == 1);
}

TEST_CASE("anomaly: the best multi-stream pinned pass below 1.1x one stream", "[overlap][report]") {
  const auto flat = anomalies({pipeline("speedup", 1.0, {.streams = 1}), pipeline("speedup", 1.05, {.streams = 2, .chunks = 4}),
                               pipeline("speedup", 1.08, {.streams = 4, .chunks = 8})});
  REQUIRE(flat.size() == 1);
  CHECK(hdb_test::contains(flat.front(), "balanced pipeline, pinned: the best multi-stream pass is only 1.08x faster"));
  // One good chunk count is enough.
  CHECK(anomalies({pipeline("speedup", 1.05, {.streams = 2, .chunks = 4}), pipeline("speedup", 1.12, {.streams = 2, .chunks = 8})})
            .empty());
  CHECK(anomalies({pipeline("speedup", 1.0, {.streams = 4, .host_kind = "pageable"})}).empty());
}

TEST_CASE("anomaly: pageable faster than pinned by more than 5 % at the same stream count", "[overlap][report]") {
  const auto with_pageable = [](double pageable) {
    return anomalies({pipeline("throughput", 20, {.streams = 2}), pipeline("throughput", pageable, {.streams = 2, .host_kind = "pageable"}),
                      pipeline("throughput", 40, {.streams = 4, .host_kind = "pageable"})});  // no pinned at 4 streams
  };
  const auto faster = with_pageable(21.2);
  REQUIRE(faster.size() == 1);
  CHECK(hdb_test::contains(faster.front(), "balanced pipeline on 2 streams: pageable (21.2 GB/s) is faster than pinned (20 GB/s)"));
  CHECK(with_pageable(20.9).empty());
}

TEST_CASE("anomaly: stream semantics that did not show", "[overlap][report]") {
  const auto semantics = [](const std::string& api, double time) {
    return anomalies({variant("stream_semantics", "nonblocking", "pipeline_time", 100),
                      variant("stream_semantics", api, "pipeline_time", time)});
  };
  CHECK(hdb_test::contains(semantics("legacy_default", 110).at(0), "legacy default stream costs only 1.1x"));
  CHECK(semantics("legacy_default", 120).empty());
  CHECK(hdb_test::contains(semantics("host_sync", 110).at(0), "host sync after every chunk costs only 1.1x"));
  CHECK(semantics("host_sync", 120).empty());
  CHECK(hdb_test::contains(semantics("per_thread_default", 120).at(0), "per-thread default stream pipeline is 1.2x slower"));
  CHECK(semantics("per_thread_default", 110).empty());
  // Without the non-blocking reference nothing is judged.
  CHECK(anomalies({variant("stream_semantics", "legacy_default", "pipeline_time", 100)}).empty());
}

TEST_CASE("anomaly: a CUDA graph more than 1.1x slower than stream launches", "[overlap][report]") {
  const auto graph = [](double time) {
    return anomalies({variant("graph", "nonblocking", "pipeline_time", 100), variant("graph", "graph", "pipeline_time", time)});
  };
  CHECK(hdb_test::contains(graph(111).at(0), "the CUDA-graph pipeline (111 us) is slower than launching it stream by stream (100 us)"));
  CHECK(graph(109).empty());
}

TEST_CASE("anomaly: a calibrated kernel/copy ratio more than 1.3x off its target", "[overlap][report]") {
  CHECK(hdb_test::contains(anomalies({calibration("balanced", 1.35)}).at(0), "balanced regime: the kernel takes 1.35x the copy time"));
  CHECK(anomalies({calibration("balanced", 1.25)}).empty());
  CHECK(anomalies({calibration("balanced", 0.75)}).size() == 1);
  CHECK(anomalies({calibration("balanced", 0.8)}).empty());
  CHECK(anomalies({calibration("compute_heavy", 5.3)}).size() == 1);  // target 4
  CHECK(anomalies({calibration("compute_heavy", 5.1)}).empty());
  CHECK(anomalies({calibration("copy_heavy", 0.19)}).size() == 1);  // target 0.25
  CHECK(anomalies({calibration("copy_heavy", 0.2)}).empty());
}

TEST_CASE("section: best speedup per regime and stream count, the movement tax, the variants", "[overlap][report]") {
  const auto rules = hdb::overlap_report_rules();
  const std::vector<hdb::result_row> rows = {
      pipeline("speedup", 1.0, {.streams = 1, .chunks = 1}),
      pipeline("speedup", 1.6, {.streams = 4, .chunks = 8}),
      pipeline("speedup", 1.9, {.streams = 4, .chunks = 16}),
      pipeline("efficiency", 70, {.streams = 4, .chunks = 8}),
      pipeline("efficiency", 88, {.streams = 4, .chunks = 16}),
      hdb_test::median_row("overlap", "movement_tax", {{"api", "round_trip"}, {"regime", "balanced"}, {"device", "0"}},
                           "tax_ratio", "ratio", 3.5),
      variant("stream_semantics", "legacy_default", "speedup", 1.0),
      variant("graph", "graph", "speedup", 1.7),
  };
  const std::string md = rules.section(rows, nlohmann::json::object());
  INFO(md);
  CHECK(hdb_test::contains(md, "| GPU | regime | memory | 1 stream | 4 streams |"));
  CHECK(hdb_test::contains(md, "| 0 | balanced | pinned | 1x @1 | 1.9x (88 %) @16 |"));  // the efficiency of the best chunk count
  CHECK(hdb_test::contains(md, "| 0 | balanced | 3.5x |  |  |"));
  CHECK(hdb_test::contains(md, "| 0 | legacy_default | 1x |"));
  CHECK(hdb_test::contains(md, "| 0 | 4 streams, graph | 1.7x |"));
  CHECK(rules.section({calibration("balanced", 1.0)}, nlohmann::json::object()).empty());
}
