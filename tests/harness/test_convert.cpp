// `hdbench convert`: a schema-2 results.csv (fixtures/convert/schema2) rewritten with two stand-in
// declarations (fixtures/convert/x.json, y.json) and a rename table (fixtures/convert/renames.json).
#include "catch_compat.hpp"
#include "hdb/harness/data/convert.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "test_support.hpp"

namespace {

std::vector<hdb::family_declaration> declarations() {
  return {hdb::read_declaration(hdb_test::fixture("convert/y.json")), hdb::read_declaration(hdb_test::fixture("convert/x.json"))};
}

hdb::conversion convert(const std::string& csv) {
  return hdb::convert_schema2(csv, declarations(), hdb::read_text_file(hdb_test::fixture("convert/renames.json")));
}

const std::string fixture_csv() { return hdb::read_text_file(hdb_test::fixture("convert/schema2/results.csv")); }

std::vector<const hdb::result_row*> rows_with(const hdb::conversion& c, const std::string& metric) {
  std::vector<const hdb::result_row*> out;
  for (const auto& row : c.rows) {
    if (row.metric == metric) out.push_back(&row);
  }
  return out;
}

}  // namespace

TEST_CASE("convert: schema-2 rows in the declarations' terms", "[convert]") {
  const auto c = convert(fixture_csv());
  CHECK(c.rows_read == 18);
  // Manifest order of the declarations: y's parameters, then x's new ones.
  CHECK(c.param_columns == std::vector<std::string>{"src", "dst", "ranks", "size_bytes", "direction", "chunks"});
  REQUIRE(c.rows.size() == 16);
  CHECK(c.rows.front().family == "y");

  SECTION("medians come from the samples, derived statistics go") {
    const auto bandwidth = rows_with(c, "bandwidth");
    REQUIRE(bandwidth.size() == 5);
    CHECK(bandwidth.back()->stat == hdb::statistic::median);
    CHECK(*bandwidth.back()->value == 2.5);  // not the file's 99
    CHECK(c.derived_rows_dropped == 3);      // the old median, mean and cv
  }
  SECTION("a metric the case kind does not declare is dropped and counted") {
    CHECK(rows_with(c, "cpu_time").empty());
    CHECK(c.undeclared_metric_rows == decltype(c.undeclared_metric_rows){{{"x", "bw", "cpu_time"}, 3}});
    CHECK(hdb_test::contains(hdb::describe_conversion(c), "  x bw cpu_time: 3\n"));
  }
  SECTION("renames, extra split into columns, devices as device and gpus") {
    const auto steps = rows_with(c, "steps");
    REQUIRE(steps.size() == 2);
    CHECK(steps[0]->unit == "count");
    CHECK(steps[0]->better_direction == hdb::better::neutral);
    CHECK(steps[0]->param("chunks") == "4");
    CHECK(steps[0]->device == 0);
    CHECK(steps[0]->gpus == 1);
    const auto busbw = rows_with(c, "busbw");
    REQUIRE(busbw.size() == 4);
    CHECK(busbw[0]->device == 0);
    CHECK(busbw[0]->gpus == 2);
    CHECK(busbw[0]->gpu_uuid == "GPU-a,GPU-b");
    CHECK(busbw[0]->param("ranks") == "2");
    CHECK(busbw[0]->traffic == "nvlink_bus");
    CHECK(rows_with(c, "bandwidth")[0]->traffic == "pcie_per_direction");
  }
  SECTION("a value renamed to null leaves the parameter unset") {
    const auto& skipped = c.rows[4];
    REQUIRE(skipped.status == hdb::row_status::skipped);
    CHECK(skipped.family == "y");
    CHECK(skipped.param("dst").empty());
    CHECK(skipped.param("src") == "0");
    CHECK(skipped.param("ranks") == "2");
  }
  SECTION("a headline the declaration does not allow is no longer one") {
    for (const auto* row : rows_with(c, "time")) CHECK_FALSE(row->headline);
    for (const auto* row : rows_with(c, "bandwidth")) CHECK(row->headline);
  }
  SECTION("the failed family and the skipped case keep their reasons") {
    CHECK(c.rows[5].case_name.empty());
    CHECK(c.rows[5].reason == "exited with code 1 after 3 cases");
    CHECK(c.rows.back().reason == "pageable cannot be queued");
  }
}

TEST_CASE("convert refuses what it cannot convert faithfully", "[convert]") {
  const std::string header = fixture_csv().substr(0, fixture_csv().find('\n') + 1);
  SECTION("a value the declaration does not allow") {
    CHECK_THROWS_WITH(convert(header + "2,r,x,bw,up,,,64,,,,,,0,GPU-a,,bandwidth,GB/s,higher,no,sample,0,1,ok,,b\n"),
                      Catch::Matchers::StartsWith("line 2: x bw: parameter direction='up' is not what its declaration allows"));
  }
  SECTION("a family without a declaration") {
    CHECK_THROWS_WITH(convert(header + "2,r,z,bw,,,,,,,,,,0,GPU-a,,bandwidth,GB/s,higher,no,sample,0,1,ok,,b\n"),
                      "line 2: family 'z' has no declaration");
  }
  SECTION("two rows that only a dropped parameter told apart") {
    CHECK_THROWS_WITH(convert(header + "2,r,x,bw,h2d,pinned,,64,,,,,,0,GPU-a,,time,us,lower,no,sample,0,1,ok,,b\n" +
                              "2,r,x,bw,h2d,pageable,,64,,,,,,0,GPU-a,,time,us,lower,no,sample,0,2,ok,,c\n"),
                      Catch::Matchers::EndsWith("two rows would be the same after the conversion (a dropped parameter told them apart)"));
  }
  SECTION("a file that is not schema 2") {
    CHECK_THROWS_WITH(convert("a,b\n1,2\n"), "missing column 'schema_version' (not a schema-2 results.csv)");
  }
}

TEST_CASE("convert_run rewrites results.csv and records the declarations in meta.json", "[convert]") {
  const hdb_test::temp_dir tmp;
  const auto bin = tmp.path() / "bin";
  const auto run = tmp.path() / "run";
  std::filesystem::create_directories(bin / "schema");
  std::filesystem::create_directories(run);
  for (const auto* name : {"x", "y"}) {
    std::filesystem::copy_file(hdb_test::fixture(std::string("convert/") + name + ".json"), bin / "schema" / (std::string(name) + ".json"));
  }
  std::filesystem::copy_file(hdb_test::fixture("convert/suite.json"), bin / "suite.json");
  std::filesystem::copy_file(hdb_test::fixture("convert/renames.json"), bin / "renames-schema3.json");
  for (const auto* file : {"results.csv", "meta.json"}) {
    std::filesystem::copy_file(hdb_test::fixture("convert/schema2") / file, run / file);
  }
  const auto c = hdb::convert_run(run, bin);
  const auto table = hdb::read_results_csv(hdb::read_text_file(run / "results.csv"));
  CHECK(table.rows.size() == c.rows.size());
  CHECK(table.param_columns == c.param_columns);
  const auto meta = nlohmann::json::parse(hdb::read_text_file(run / "meta.json"));
  CHECK(meta["families"]["x"]["plots"] == "x");
  CHECK(meta["families"]["y"]["schema"]["cases"]["pair"]["headlines"][0] == "busbw");
  CHECK(meta["families"]["x"]["status"] == "failed");  // the status is left as it was
  SECTION("a converted file is not converted twice") {
    CHECK_THROWS_WITH(hdb::convert_run(run, bin),
                      Catch::Matchers::EndsWith("schema_version 3 (already converted); `hdbench convert` reads schema 2"));
  }
}
