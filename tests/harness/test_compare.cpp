// hdbench compare on fixture runs: the golden copy run as baseline, variants of it as current.
#include "catch_compat.hpp"
#include "hdb/harness/compare.hpp"
#include "hdb/harness/files.hpp"
#include "test_support.hpp"

namespace {

// The golden run's rows with `edit` applied, written to <dir>/results.csv.
template <typename Edit>
std::filesystem::path variant(const hdb_test::temp_dir& dir, Edit edit) {
  auto rows = hdb::read_results_csv(hdb::read_text_file(hdb_test::golden_run() / "results.csv"));
  edit(rows);
  const auto path = dir.path() / "results.csv";
  hdb::atomic_write_file(path, hdb::write_results_csv(rows));
  return path;
}

bool is_h2d_16mib(const hdb::result_row& row) {
  return row.case_name == "bandwidth" && row.params.get("direction") == "h2d" &&
         row.params.get("host_kind") == "pinned" && row.params.get("size_bytes") == "16777216";
}

}  // namespace

TEST_CASE("identical runs: exit 0, everything SAME", "[compare]") {
  const auto result = hdb::compare_runs(hdb_test::golden_run(), hdb_test::golden_run() / "results.csv", {});
  CHECK(result.exit_code == 0);
  CHECK(result.error.empty());
  CHECK(hdb_test::contains(result.output, "0 slower, 0 faster, 7 same"));
  CHECK_FALSE(hdb_test::contains(result.output, "different nodes"));
}

TEST_CASE("one headline 10 % worse with tight repetitions: exit 1, case named first", "[compare]") {
  const hdb_test::temp_dir dir;
  const auto current = variant(dir, [](auto& rows) {
    for (auto& row : rows) {
      if (is_h2d_16mib(row) && row.metric == "bandwidth" && row.value && row.stat != hdb::statistic::cv) *row.value *= 0.9;
    }
  });
  const auto result = hdb::compare_runs(hdb_test::golden_run(), current, {});
  CHECK(result.exit_code == 1);
  const auto table_start = result.output.find("\nverdict");
  REQUIRE(table_start != std::string::npos);
  const auto first_row = result.output.find('\n', table_start + 1) + 1;
  const auto line = result.output.substr(first_row, result.output.find('\n', first_row) - first_row);
  CHECK(line.starts_with("SLOWER"));
  CHECK(hdb_test::contains(line, "size_bytes=16777216"));
  CHECK(hdb_test::contains(result.output, "-10.0%"));
  CHECK(hdb_test::contains(result.output, "1 slower"));
  CHECK(hdb_test::contains(result.output, "node not checked"));  // no meta.json beside the variant

  SECTION("junit: one failure") {
    hdb::compare_options junit;
    junit.format = hdb::compare_format::junit;
    const auto xml = hdb::compare_runs(hdb_test::golden_run(), current, junit);
    CHECK(xml.exit_code == 1);
    CHECK(hdb_test::contains(xml.output, "failures=\"1\""));
    CHECK(hdb_test::contains(xml.output, "<failure message=\"-10.0%"));
  }
  SECTION("markdown") {
    hdb::compare_options markdown;
    markdown.format = hdb::compare_format::markdown;
    CHECK(hdb_test::contains(hdb::compare_runs(hdb_test::golden_run(), current, markdown).output, "| SLOWER |"));
  }
}

TEST_CASE("a non-headline metric never fails the comparison", "[compare]") {
  const hdb_test::temp_dir dir;
  const auto current = variant(dir, [](auto& rows) {
    for (auto& row : rows) {
      if (row.metric == "host_time_per_copy" && row.value && row.stat != hdb::statistic::cv) *row.value *= 1.5;
    }
  });
  CHECK(hdb::compare_runs(hdb_test::golden_run(), current, {}).exit_code == 0);
  hdb::compare_options all;
  all.all = true;
  const auto shown = hdb::compare_runs(hdb_test::golden_run(), current, all);
  CHECK(shown.exit_code == 0);
  CHECK(hdb_test::contains(shown.output, "host_time_per_copy"));
}

TEST_CASE("decision rule: significance and threshold together", "[compare]") {
  const hdb::compare_options options;  // 5 %, alpha 0.05
  const std::vector<double> tight = {100, 100.2, 99.8, 100.1, 99.9};
  std::vector<double> tight_worse;
  for (const double v : tight) tight_worse.push_back(v * 0.9);

  SECTION("10 % worse, tight: SLOWER; the same gain: FASTER") {
    CHECK(hdb::decide(tight, 100, tight_worse, 90, hdb::better::higher, options).result == hdb::verdict::slower);
    CHECK(hdb::decide(tight_worse, 90, tight, 100, hdb::better::higher, options).result == hdb::verdict::faster);
    CHECK(hdb::decide(tight, 100, tight_worse, 90, hdb::better::lower, options).result == hdb::verdict::faster);
  }
  SECTION("2 % jitter inside wide noise: SAME") {
    const std::vector<double> noisy = {100, 92, 108, 95, 105, 90, 110, 97, 103, 100};
    std::vector<double> shifted;
    for (const double v : noisy) shifted.push_back(v * 0.98);
    const auto d = hdb::decide(noisy, 100, shifted, 98, hdb::better::higher, options);
    CHECK(d.result == hdb::verdict::same);
    REQUIRE(d.p_value);
    CHECK(*d.p_value > 0.05);
  }
  SECTION("significant but below the threshold: SAME") {
    std::vector<double> slightly_worse;
    for (const double v : tight) slightly_worse.push_back(v * 0.98);
    const auto d = hdb::decide(tight, 100, slightly_worse, 98, hdb::better::higher, options);
    CHECK(*d.p_value < 0.05);
    CHECK(d.result == hdb::verdict::same);
  }
  SECTION("fewer than 3 samples: the threshold alone, and the output says so") {
    const auto d = hdb::decide({100, 101}, 100.5, {90, 91}, 90.5, hdb::better::higher, options);
    CHECK(d.result == hdb::verdict::slower);
    CHECK_FALSE(d.p_value);
    CHECK(hdb_test::contains(d.note, "threshold only"));
  }
  SECTION("3 vs 3 can never reach p < 0.05: the threshold alone") {
    const auto d = hdb::decide({100, 101, 99}, 100, {90, 91, 89}, 90, hdb::better::higher, options);
    CHECK(d.result == hdb::verdict::slower);
    CHECK(hdb_test::contains(d.note, "cannot reach"));
  }
}

TEST_CASE("cases present on one side only are listed, never dropped", "[compare]") {
  const hdb_test::temp_dir dir;
  const auto current = variant(dir, [](auto& rows) {
    std::erase_if(rows, [](const hdb::result_row& row) { return is_h2d_16mib(row); });
    for (auto& row : rows) {
      if (row.case_name == "latency") row.params.set("size_bytes", "8");
    }
  });
  const auto result = hdb::compare_runs(hdb_test::golden_run(), current, {});
  CHECK(result.exit_code == 0);
  CHECK(hdb_test::contains(result.output, "only in baseline (2)"));
  CHECK(hdb_test::contains(result.output, "only in current (1)"));
  CHECK(hdb_test::contains(result.output, "size_bytes=16777216] bandwidth"));
}

TEST_CASE("bad inputs: one clear line, exit 2", "[compare]") {
  const auto [baseline, expected] = GENERATE(table<std::string, std::string>({
      {"compare/no-such-run", "no such file"},
      {"compare/malformed.csv", "unterminated quoted field"},
      {"compare/other_schema.csv", "schema_version 2"},
      {"compare/empty_run.csv", "empty run"},
  }));
  const auto result = hdb::compare_runs(hdb_test::fixture(baseline), hdb_test::golden_run(), {});
  CHECK(result.exit_code == 2);
  CHECK(hdb_test::contains(result.error, expected));
  CHECK(hdb_test::contains(result.error, baseline.substr(baseline.find('/') + 1)));  // names the file
  CHECK_FALSE(hdb_test::contains(result.error, "\n"));
  CHECK(result.output.empty());
  CHECK_THROWS(hdb::parse_percent("five"));
  CHECK(hdb::parse_percent("5%") == hdb_test::Approx(0.05));
}
