// raw/ -> results.csv: the golden file, truncated and garbage JSON, aggregates-only output.
//
// Golden file: fixtures/copy_run/20261129T103122Z-gpu01/results.csv is what `hdbench collect`
// must produce from raw/copy.json and raw/copy.status.json next to it. After an intended
// change of the CSV, regenerate it and review the diff:
//   HDB_UPDATE_GOLDEN=1 build/harness/tests/test_harness "[golden]"
#include <cstdlib>
#include <set>

#include "catch_compat.hpp"
#include "hdb/harness/collect.hpp"
#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/raw_json.hpp"
#include "test_support.hpp"

using hdb_test::Approx;

namespace {

std::vector<const hdb::result_row*> select(const std::vector<hdb::result_row>& rows, const std::string& metric,
                                           hdb::statistic stat) {
  std::vector<const hdb::result_row*> found;
  for (const auto& row : rows) {
    if (row.metric == metric && row.stat == stat) found.push_back(&row);
  }
  return found;
}

}  // namespace

TEST_CASE("collect reproduces the golden results.csv byte for byte", "[collect][golden]") {
  const auto run = hdb::collect_run(hdb_test::golden_run());
  const auto csv = hdb::write_results_csv(run.rows);
  const auto golden_path = hdb_test::golden_run() / "results.csv";
  if (std::getenv("HDB_UPDATE_GOLDEN") != nullptr) hdb::atomic_write_file(golden_path, csv);
  CHECK(csv == hdb::read_text_file(golden_path));
}

TEST_CASE("the golden run has every kind of row", "[collect]") {
  const auto run = hdb::collect_run(hdb_test::golden_run());
  REQUIRE(run.statuses.size() == 1);
  CHECK(run.statuses[0].state == hdb::family_state::failed);  // exit code 1: a case failed
  CHECK(run.statuses[0].cases == 9);
  const auto& rows = run.rows;

  SECTION("samples come from iterations only; statistics are the harness's own") {
    // 4 single-direction cases and the bidir case, 5 repetitions each.
    CHECK(select(rows, "bandwidth", hdb::statistic::sample).size() == 25);
    CHECK(select(rows, "bandwidth", hdb::statistic::median).size() == 5);
    CHECK(select(rows, "time_per_call", hdb::statistic::sample).size() == 3);
    for (const auto* cv : select(rows, "bandwidth", hdb::statistic::cv)) CHECK(cv->unit == "%");
  }
  SECTION("skipped and failed cases keep their parameters and reason") {
    std::set<std::string> reasons;
    for (const auto& row : rows) {
      if (row.status == hdb::row_status::skipped) {
        CHECK(row.params.get("host_kind") == "pageable");
        CHECK(hdb_test::contains(row.reason, "cannot be queued"));
        CHECK_FALSE(row.reason.starts_with("skipped:"));
      }
      if (row.status == hdb::row_status::failed && !row.case_name.empty()) {
        CHECK(hdb_test::contains(row.reason, "verification failed"));
      }
      if (row.status != hdb::row_status::ok) reasons.insert(row.reason);
    }
    CHECK(reasons.size() == 3);  // and the family's own: exited with code 1
  }
  SECTION("headline only where the label says so; unknown label keys go to extra") {
    for (const auto* row : select(rows, "host_time_per_copy", hdb::statistic::median)) CHECK_FALSE(row->headline);
    for (const auto* row : select(rows, "latency", hdb::statistic::median)) {
      CHECK(row->headline);
      CHECK(row->params.extra == "batch=64;timing=gated");
    }
  }
  SECTION("one alpha-beta fit for the three pinned h2d sizes") {
    const auto fits = select(rows, "fit_bandwidth", hdb::statistic::fit);
    REQUIRE(fits.size() == 1);
    CHECK(fits[0]->params.get("direction") == "h2d");
    CHECK(fits[0]->params.get("size_bytes").empty());
    CHECK(*fits[0]->value == Approx(55).epsilon(0.01));  // the fixture was drawn from 2.5 us + n / 55 GB/s
    CHECK(*select(rows, "fit_latency", hdb::statistic::fit)[0]->value == Approx(2.5).epsilon(0.02));
  }
}

TEST_CASE("a JSON cut mid-object keeps every complete case", "[collect][truncated]") {
  const auto output = hdb::read_raw_json(hdb::read_text_file(hdb_test::fixture("truncated_copy.json")));
  CHECK_FALSE(output.complete);
  CHECK(output.metrics.size() == 10);
  CHECK(hdb::count_cases(output) == 3);  // the fourth case was being written when the cut came

  hdb::family_raw raw;
  raw.output = output;
  raw.status.family = "copy";
  raw.status.state = hdb::family_state::crashed;
  raw.status.signal = 9;
  hdb::reconcile_status(raw.status, raw);
  const auto rows = hdb::family_rows("run", raw);
  REQUIRE_FALSE(rows.empty());
  CHECK(rows.front().case_name.empty());
  CHECK(rows.front().status == hdb::row_status::failed);
  CHECK(rows.front().reason == "crashed (signal 9, SIGKILL) after 3 cases");
  CHECK(select(rows, "bandwidth", hdb::statistic::median).size() == 3);
  CHECK(select(rows, "fit_latency", hdb::statistic::fit).size() == 1);
}

TEST_CASE("unreadable output fails the family, never the harness", "[collect]") {
  SECTION("garbage") {
    CHECK_THROWS_AS(hdb::read_raw_json("not json {{{"), hdb::harness_error);
  }
  SECTION("cut before the context ended") {
    CHECK_THROWS_AS(hdb::read_raw_json("{\"context\": {\"hdbench.family\": \"co"), hdb::harness_error);
  }
  SECTION("a status that says ok without JSON becomes failed") {
    hdb::family_raw raw;
    raw.status.family = "copy";
    raw.output_error = "missing copy.json";
    hdb::reconcile_status(raw.status, raw);
    CHECK(raw.status.state == hdb::family_state::failed);
    CHECK(hdb::failure_reason(raw.status) == "no valid JSON output (missing copy.json)");
  }
}

TEST_CASE("non-finite numbers and Google Benchmark 1.8 skips", "[collect]") {
  const std::string text = R"({"context": {"hdbench.metrics": "{\"bandwidth\": {\"unit\": \"GB/s\", \"better\": \"higher\"}}"},
    "benchmarks": [
      {"run_name": "a", "run_type": "iteration", "repetition_index": 0, "bandwidth": NaN, "label": "case=bw;note=NaN"},
      {"run_name": "a", "run_type": "iteration", "repetition_index": 1, "bandwidth": 2.0, "label": "case=bw;note=NaN"},
      {"run_name": "b", "run_type": "iteration", "skipped": true, "skip_message": "skipped: one GPU only", "label": "case=p2p"}
    ]})";
  const auto output = hdb::read_raw_json(text);
  REQUIRE(output.runs.size() == 3);
  CHECK_FALSE(output.runs[0].numbers.contains("bandwidth"));
  CHECK(output.runs[0].label == "case=bw;note=NaN");  // strings are left alone
  CHECK(output.runs[2].outcome == hdb::run_outcome::skipped);
  CHECK(output.runs[2].message == "one GPU only");
}

TEST_CASE("aggregates only (--benchmark_report_aggregates_only)", "[collect]") {
  const std::string text = R"({"context": {"hdbench.metrics": "{\"bandwidth\": {\"unit\": \"GB/s\", \"better\": \"higher\"}}"},
    "benchmarks": [
      {"run_name": "a", "run_type": "aggregate", "aggregate_name": "mean", "bandwidth": 50.0, "label": "case=bw"},
      {"run_name": "a", "run_type": "aggregate", "aggregate_name": "median", "bandwidth": 51.0, "label": "case=bw"},
      {"run_name": "a", "run_type": "aggregate", "aggregate_name": "stddev", "bandwidth": 0.5, "label": "case=bw"},
      {"run_name": "a", "run_type": "aggregate", "aggregate_name": "cv", "bandwidth": 0.01, "label": "case=bw"}
    ]})";
  hdb::family_raw raw;
  raw.output = hdb::read_raw_json(text);
  raw.status.family = "x";
  const auto rows = hdb::family_rows("run", raw);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].stat == hdb::statistic::median);
  CHECK(*rows[0].value == 51);
  CHECK(rows[3].stat == hdb::statistic::cv);
  CHECK(*rows[3].value == Approx(1.0));  // Google Benchmark's fraction, as percent
  CHECK(select(rows, "bandwidth", hdb::statistic::sample).empty());
}
