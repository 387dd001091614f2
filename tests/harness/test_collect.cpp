// raw/ -> results.csv: the golden file, truncated and garbage JSON, aggregates-only output, and
// what the declaration lets through (only declared counters, labels and traffic picks).
//
// Golden file: fixtures/copy_run/20261129T103122Z-gpu01/results.csv is what `hdbench collect`
// must produce from raw/copy.json and raw/copy.status.json next to it. After an intended
// change of the CSV, regenerate it and review the diff:
//   HDB_UPDATE_GOLDEN=1 build/harness/tests/test_harness "[golden]"
#include <cstdlib>
#include <set>

#include "catch_compat.hpp"
#include "hdb/harness/data/collect.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/raw_json.hpp"
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

// A family "x" whose one case kind `bw` has parameters `direction` (text) and `size_bytes` (int)
// and may set `bandwidth` (a headline, PCIe traffic) and `time`.
const std::string declaration_x = R"({"family": "x", "parameters": {
    "direction": {"type": "text", "values": ["h2d", "d2h"]}, "size_bytes": {"type": "int"}},
  "metrics": {"bandwidth": {"unit": "GB/s", "better": "higher", "traffic": ["pcie_per_direction"]},
              "time": {"unit": "us", "better": "lower"}},
  "cases": {"bw": {"parameters": ["direction", "size_bytes"], "metrics": ["bandwidth", "time"], "headlines": ["bandwidth"]}}})";

// raw JSON of family x with the given entries of its "benchmarks" array.
std::string raw_x(const std::string& entries) {
  return R"({"context": {"hdbench.schema": )" + nlohmann::json(declaration_x).dump() + R"(}, "benchmarks": [)" + entries + "]}";
}

std::vector<hdb::result_row> rows_of_x(const std::string& entries) {
  hdb::family_raw raw;
  raw.output = hdb::read_raw_json(raw_x(entries));
  raw.status.family = "x";
  return hdb::family_rows("run", raw, &*raw.output->declaration);
}

// One iteration entry of case `a` with `label` and extra JSON members.
std::string entry(int repetition, const std::string& label, const std::string& numbers) {
  return R"({"run_name": "a", "run_type": "iteration", "repetition_index": )" + std::to_string(repetition) +
         R"(, "iterations": 8, "real_time": 1.5, "cpu_time": 1.4, "label": ")" + label + "\"" +
         (numbers.empty() ? "" : ", " + numbers) + "}";
}

}  // namespace

TEST_CASE("collect reproduces the golden results.csv byte for byte", "[collect][golden]") {
  const auto run = hdb::collect_run(hdb_test::golden_run(), {});
  const auto csv = hdb::write_results_csv(run.rows, run.param_columns);
  const auto golden_path = hdb_test::golden_run() / "results.csv";
  if (std::getenv("HDB_UPDATE_GOLDEN") != nullptr) hdb::atomic_write_file(golden_path, csv);
  CHECK(csv == hdb::read_text_file(golden_path));
}

TEST_CASE("the golden run has every kind of row", "[collect]") {
  const auto run = hdb::collect_run(hdb_test::golden_run(), {});
  REQUIRE(run.families.size() == 1);
  CHECK(run.families[0].status.state == hdb::family_state::failed);  // exit code 1: a case failed
  CHECK(run.families[0].status.cases == 9);
  REQUIRE(run.families[0].declaration);
  CHECK(run.families[0].declaration->family == "copy");
  // The declaration's parameters, in its order: the CSV's parameter columns.
  CHECK(run.param_columns == std::vector<std::string>{"direction", "host_kind", "api", "size_bytes", "streams"});
  const auto& rows = run.rows;

  SECTION("samples and their median, nothing derived beyond it") {
    // 4 single-direction cases and the bidir case, 5 repetitions each.
    CHECK(select(rows, "bandwidth", hdb::statistic::sample).size() == 25);
    CHECK(select(rows, "bandwidth", hdb::statistic::median).size() == 5);
    CHECK(select(rows, "time_per_call", hdb::statistic::sample).size() == 3);
    for (const auto stat : {hdb::statistic::mean, hdb::statistic::min, hdb::statistic::max, hdb::statistic::stddev,
                            hdb::statistic::cv}) {
      CHECK(std::none_of(rows.begin(), rows.end(), [&](const hdb::result_row& r) { return r.stat == stat; }));
    }
  }
  SECTION("Google Benchmark's own numbers never become rows") {
    for (const auto& row : rows) {
      CHECK(row.metric != "cpu_time");
      CHECK(row.metric != "iterations");
      CHECK(row.metric != "real_time");
    }
  }
  SECTION("skipped and failed cases keep their parameters and reason") {
    std::set<std::string> reasons;
    for (const auto& row : rows) {
      if (row.status == hdb::row_status::skipped) {
        CHECK(row.param("host_kind") == "pageable");
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
  SECTION("device, headline and traffic come from the label") {
    for (const auto* row : select(rows, "host_time_per_copy", hdb::statistic::median)) CHECK_FALSE(row->headline);
    for (const auto* row : select(rows, "latency", hdb::statistic::median)) {
      CHECK(row->headline);
      CHECK(row->device == 0);
      CHECK(row->gpus == 1);
      CHECK(row->gpu_uuid == "GPU-6f1c2e2a-1b7e-4c1e-9d55-0a8d3b7c2f11");
      CHECK(row->traffic.empty());
    }
    for (const auto* row : select(rows, "bandwidth", hdb::statistic::median)) {
      CHECK(row->traffic == (row->param("direction") == "bidir" ? "pcie_both_directions" : "pcie_per_direction"));
    }
    for (const auto* row : select(rows, "bandwidth_h2d", hdb::statistic::median)) CHECK(row->traffic == "pcie_per_direction");
  }
  SECTION("one alpha-beta fit for the three pinned h2d sizes") {
    const auto fits = select(rows, "fit_bandwidth", hdb::statistic::fit);
    REQUIRE(fits.size() == 1);
    CHECK(fits[0]->param("direction") == "h2d");
    CHECK(fits[0]->param("size_bytes").empty());
    CHECK(fits[0]->traffic.empty());
    CHECK(*fits[0]->value == Approx(55).epsilon(0.01));  // the fixture was drawn from 2.5 us + n / 55 GB/s
    CHECK(*select(rows, "fit_latency", hdb::statistic::fit)[0]->value == Approx(2.5).epsilon(0.02));
  }
  SECTION("the fit's rows go under the names the declaration gives, in the units and directions of their roles") {
    const auto named = hdb::alpha_beta_rows(rows, hdb::fit_decl{"time_per_copy", {"beta_of_t", "alpha_of_t", "half_of_t"}});
    REQUIRE(named.size() == 3);
    CHECK(named[0].metric == "beta_of_t");
    CHECK(named[0].unit == "GB/s");
    CHECK(named[0].better_direction == hdb::better::higher);
    CHECK(*named[0].value == Approx(55).epsilon(0.01));
    CHECK(named[1].metric == "alpha_of_t");
    CHECK(named[1].unit == "us");
    CHECK(*named[1].value == Approx(2.5).epsilon(0.02));
    CHECK(named[2].metric == "half_of_t");
    CHECK(named[2].unit == "B");
    CHECK(*named[2].value == Approx(*named[0].value * *named[1].value * 1e3).epsilon(1e-6));
  }
}

TEST_CASE("a JSON cut mid-object keeps every complete case", "[collect][truncated]") {
  const auto output = hdb::read_raw_json(hdb::read_text_file(hdb_test::fixture("truncated_copy.json")));
  CHECK_FALSE(output.complete);
  REQUIRE(output.declaration);
  CHECK(output.declaration->family == "copy");
  CHECK(hdb::count_cases(output) == 3);  // the fourth case was being written when the cut came

  hdb::family_raw raw;
  raw.output = output;
  raw.status.family = "copy";
  raw.status.state = hdb::family_state::crashed;
  raw.status.signal = 9;
  hdb::reconcile_status(raw.status, raw);
  const auto rows = hdb::family_rows("run", raw, &*output.declaration);
  REQUIRE_FALSE(rows.empty());
  CHECK(rows.front().case_name.empty());
  CHECK_FALSE(rows.front().device);
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
  SECTION("a declaration that breaks the rules") {
    CHECK_THROWS_WITH(hdb::read_raw_json(R"({"context": {"hdbench.schema": "{\"family\": \"x\"}"}})"),
                      "context hdbench.schema: x: declaration: needs \"metrics\"");
  }
  SECTION("a status that says ok without JSON becomes failed") {
    hdb::family_raw raw;
    raw.status.family = "copy";
    raw.output_error = "missing copy.json";
    hdb::reconcile_status(raw.status, raw);
    CHECK(raw.status.state == hdb::family_state::failed);
    CHECK(hdb::failure_reason(raw.status) == "no valid JSON output (missing copy.json)");
  }
  SECTION("output without a declaration is one failed-family row") {
    hdb::family_raw raw;
    raw.output = hdb::read_raw_json(R"({"context": {}, "benchmarks": [{"run_name": "a", "bandwidth": 1.0}]})");
    raw.status.family = "x";
    const auto rows = hdb::family_rows("run", raw, nullptr);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status == hdb::row_status::failed);
    CHECK(hdb_test::contains(rows[0].reason, "no declaration"));
  }
}

TEST_CASE("only what the case kind declares becomes a row", "[collect][declaration]") {
  const std::string label = "case=bw;direction=h2d;size_bytes=64;device=0;gpu_uuid=GPU-a;headline=bandwidth;traffic=bandwidth:pcie_per_direction";
  SECTION("declared counters, Google Benchmark's fields ignored, an unset metric has no row") {
    const auto rows = rows_of_x(entry(0, label, R"("bandwidth": 2.0)") + "," + entry(1, label, R"("bandwidth": 4.0)"));
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].stat == hdb::statistic::sample);
    CHECK(rows[2].stat == hdb::statistic::median);
    CHECK(*rows[2].value == 3.0);
    CHECK(rows[2].headline);
    CHECK(rows[2].traffic == "pcie_per_direction");
    CHECK(rows[2].param("size_bytes") == "64");
    CHECK(select(rows, "time", hdb::statistic::median).empty());
  }
  SECTION("an undeclared counter fails the case, naming it, and gives no value") {
    const auto rows = rows_of_x(entry(0, label, R"("bandwidth": 2.0, "steps": 3.0)"));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status == hdb::row_status::failed);
    CHECK(rows[0].reason.starts_with("counter 'steps' is not a declared metric for case kind 'bw'"));
    CHECK(rows[0].param("direction") == "h2d");
  }
  SECTION("labels the declaration refuses fail the case") {
    const auto [bad_label, why] = GENERATE(table<std::string, std::string>({
        {"case=nope;device=0", "case kind 'nope' is not declared"},
        {"case=bw;direction=h2d;size_bytes=64;batch=4;device=0", "parameter 'batch' is not declared for case kind 'bw'"},
        {"case=bw;direction=up;size_bytes=64;device=0", "value 'up' of parameter 'direction' is not one of its declared values"},
        {"case=bw;direction=h2d;size_bytes=64k;device=0", "parameter 'size_bytes' is int, but its value is '64k'"},
        {"case=bw;direction=h2d;size_bytes=64;device=0;headline=time", "headline 'time' is not a declared headline for case kind 'bw'"},
        {"case=bw;direction=h2d;size_bytes=64;device=0;traffic=time:pcie_per_direction",
         "traffic class 'pcie_per_direction' is not allowed for metric 'time'"},
        {"case=bw;direction=h2d;size_bytes=64;device=zero", "device list 'zero' is not comma-separated CUDA indices"},
    }));
    const auto rows = rows_of_x(entry(0, bad_label, R"("bandwidth": 2.0)"));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status == hdb::row_status::failed);
    CHECK(rows[0].reason.starts_with(why));
    CHECK_FALSE(rows[0].value);
  }
  SECTION("the last repetition's label says how many the case took and why it stopped, on every row") {
    const auto rows = rows_of_x(entry(0, label, R"("bandwidth": 2.0)") + "," +
                                entry(1, label + ";repetitions=2;stopped_by=precise", R"("bandwidth": 4.0)"));
    REQUIRE(rows.size() == 3);
    for (const auto& row : rows) {
      CHECK(row.status == hdb::row_status::ok);
      CHECK(row.repetitions == 2);
      CHECK(row.stopped_by == "precise");
    }
    CHECK(*rows[2].value == 3.0);
    // Written before the binaries said so: unset, and the case is measured as ever.
    const auto older = rows_of_x(entry(0, label, R"("bandwidth": 2.0)"));
    REQUIRE(older.size() == 2);
    CHECK_FALSE(older[1].repetitions);
    CHECK(older[1].stopped_by.empty());
  }
  SECTION("a stopping word or count the binaries never write fails the case") {
    const auto [tail, why] = GENERATE(table<std::string, std::string>({
        {";repetitions=2;stopped_by=bored", "stopped_by 'bored' is not a stopping reason"},
        {";repetitions=two;stopped_by=fixed", "repetitions 'two' is not a whole number"},
    }));
    const auto rows = rows_of_x(entry(0, label, R"("bandwidth": 2.0)") + "," + entry(1, label + tail, R"("bandwidth": 4.0)"));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status == hdb::row_status::failed);
    CHECK(rows[0].reason.starts_with(why));
  }
  SECTION("a case over several GPUs: device is the lowest, gpus the count") {
    const auto rows = rows_of_x(entry(0, "case=bw;direction=h2d;size_bytes=64;device=3,1;gpu_uuid=GPU-d,GPU-b", R"("bandwidth": 2.0)"));
    REQUIRE(rows.size() == 2);
    CHECK(rows[1].device == 1);
    CHECK(rows[1].gpus == 2);
    CHECK(rows[1].gpu_uuid == "GPU-d,GPU-b");
  }
}

TEST_CASE("non-finite numbers and Google Benchmark 1.8 skips", "[collect]") {
  const auto output = hdb::read_raw_json(raw_x(
      entry(0, "case=bw;direction=h2d;size_bytes=1;note=NaN", R"("bandwidth": NaN)") + "," +
      entry(1, "case=bw;direction=h2d;size_bytes=1;note=NaN", R"("bandwidth": 2.0)") + "," +
      R"({"run_name": "b", "run_type": "iteration", "skipped": true, "skip_message": "skipped: one GPU only", "label": "case=bw"})"));
  REQUIRE(output.runs.size() == 3);
  CHECK_FALSE(output.runs[0].numbers.contains("bandwidth"));
  CHECK(output.runs[0].label == "case=bw;direction=h2d;size_bytes=1;note=NaN");  // strings are left alone
  CHECK(output.runs[2].outcome == hdb::run_outcome::skipped);
  CHECK(output.runs[2].message == "one GPU only");
}

TEST_CASE("aggregates only (--benchmark_report_aggregates_only)", "[collect]") {
  std::string entries;
  for (const auto& [name, value] : {std::pair{"mean", 50.0}, {"median", 51.0}, {"stddev", 0.5}, {"cv", 0.01}}) {
    entries += std::string(entries.empty() ? "" : ",") + R"({"run_name": "a", "run_type": "aggregate", "aggregate_name": ")" +
               name + R"(", "bandwidth": )" + std::to_string(value) + R"(, "label": "case=bw;direction=h2d;size_bytes=1"})";
  }
  const auto rows = rows_of_x(entries);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].stat == hdb::statistic::median);
  CHECK(*rows[0].value == 51);
  CHECK(rows[1].stat == hdb::statistic::mean);
  CHECK(rows[2].stat == hdb::statistic::stddev);
  CHECK(select(rows, "bandwidth", hdb::statistic::sample).empty());
}

TEST_CASE("collect puts families in manifest order and records their declarations in meta.json", "[collect]") {
  const hdb_test::temp_dir dir;
  std::filesystem::create_directories(dir.path() / "raw");
  std::filesystem::copy_file(hdb_test::golden_run() / "raw/copy.json", dir.path() / "raw/copy.json");
  hdb::atomic_write_file(dir.path() / "raw/x.json", raw_x(entry(0, "case=bw;direction=h2d;size_bytes=1;device=0", R"("bandwidth": 1.0)")));
  hdb::atomic_write_file(dir.path() / "suite.json", R"({"schema_version": 2, "families": [
      {"name": "x", "folder": "bench/x", "binary": "hdbench-x", "plots": "x_plots", "timeout_s": 1},
      {"name": "copy", "folder": "bench/copy", "binary": "hdbench-copy", "plots": "copy", "timeout_s": 1}]})");
  const auto run = hdb::collect_and_write(dir.path(), {dir.path() / "suite.json", ""});
  REQUIRE(run.families.size() == 2);
  CHECK(run.families[0].status.family == "x");
  CHECK(run.rows.front().family == "x");
  // x's parameters first, then copy's new ones.
  CHECK(run.param_columns == std::vector<std::string>{"direction", "size_bytes", "host_kind", "api", "streams"});
  const auto meta = nlohmann::json::parse(hdb::read_text_file(dir.path() / "meta.json"));
  CHECK(meta["families"]["x"]["plots"] == "x_plots");
  CHECK(meta["families"]["x"]["schema"]["cases"]["bw"]["metrics"][0] == "bandwidth");
  CHECK(meta["families"]["copy"]["schema"]["fit_metric"] == "time_per_copy");
}
