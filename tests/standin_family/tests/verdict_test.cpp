// The verdict run through the real door: the stand-in family's binary (family_main, its CPU
// backend) with --verdict registers exactly the cases its declaration's checks and gates select,
// a gate's "largest" and "smallest" taken over what --sizes registered; and `hdbench run --verdict`
// of the stand-in's manifest records the verdict run in meta.json, leaves check.json no "not
// measured" line and says in report.md what it left out. The stand-in (schema.json): 2 access
// patterns x 2 lane counts x --sizes (default 64K,512K,4M); one gate, every access and lane count
// at the largest size; one check, strided 8 lanes at 4 MiB. The regated build's gate says
// "smallest" instead (CMakeLists.txt).
#include "catch_compat.hpp"

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/run/runner.hpp"
#include "hdb/util/process.hpp"
#include "test_helpers.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The cases a binary lists, as "access/lanes/size" from each listed name.
std::set<std::string> listed(const fs::path& binary, const std::vector<std::string>& flags) {
  hdb::child_spec spec;
  spec.argv = {binary.string()};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.emplace_back("--benchmark_list_tests");
  spec.timeout = std::chrono::seconds(60);
  const auto result = hdb::run_with_deadline(spec);
  REQUIRE(result.succeeded());
  static const std::regex name("^standin/triad/([a-z]+)/lanes:([0-9]+)/size:([0-9]+)/gpu:0,1/");
  std::set<std::string> cases;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.empty()) continue;
    INFO(line);
    REQUIRE(std::regex_search(line, m, name));
    cases.insert(m[1].str() + "/" + m[2].str() + "/" + m[3].str());
  }
  return cases;
}

std::set<std::string> every_access_and_lanes(const std::string& size) {
  return {"linear/4/" + size, "linear/8/" + size, "strided/4/" + size, "strided/8/" + size};
}

const std::string k64 = "65536", k512 = "524288", m4 = "4194304";

}  // namespace

TEST_CASE("verdict: family_main registers only the cases the declaration's checks and gates select", "[verdict]") {
  const fs::path original = HDB_STANDIN_BINARY;
  const fs::path regated = HDB_STANDIN_REGATED_BINARY;
  CHECK(listed(original, {}).size() == 12);

  // The gate's largest size, every access and lane count; the check (strided, 8 lanes, 4 MiB) is one of them.
  CHECK(listed(original, {"--verdict"}) == every_access_and_lanes(m4));
  // "largest" follows --sizes; the check's 4 MiB is not registered, so it selects nothing.
  CHECK(listed(original, {"--verdict", "--sizes=64K,512K"}) == every_access_and_lanes(k512));

  // The same sources gated at the smallest size: those four and the check's case beside them.
  auto gated_and_checked = every_access_and_lanes(k64);
  gated_and_checked.insert("strided/8/" + m4);
  CHECK(listed(regated, {"--verdict"}) == gated_and_checked);
  CHECK(listed(regated, {"--verdict", "--sizes=64K,512K"}) == every_access_and_lanes(k64));
}

TEST_CASE("verdict: hdbench run --verdict of the stand-in records, checks and reports a verdict run", "[verdict][run]") {
  const hdb_test::temp_dir out;
  fs::create_directories(out.path() / "no-sets");
  // No reference set: check grades by peaks; what is asked here is what it finds measured.
  const hdb_test::scoped_env sets("HDBENCH_REFERENCE_DIR", (out.path() / "no-sets").string());
  hdb::suite_run_options options;
  options.out_base = out.path() / "results";
  options.manifest = HDB_STANDIN_MANIFEST;
  options.bin_dir = fs::path(HDB_STANDIN_BINARY).parent_path();
  options.command_line = {"hdbench", "run", "--verdict"};
  options.plots.plots_dir = out.path() / "no-plots";  // the plots are standin_test.py's
  options.verdict = true;
  options.confirm_pauses = {};  // the strided cases FAIL against their peak: one try's rows are counted here
  std::ostringstream log;
  const int status = hdb::run_suite(options, log);
  INFO(log.str());
  REQUIRE(status == 0);
  const auto run_dir = fs::directory_iterator(options.out_base)->path();

  const auto meta = hdb::read_meta(run_dir / "meta.json");
  REQUIRE(meta);
  CHECK((*meta)["verdict"] == true);
  const auto& family = (*meta)["families"]["standin"];
  CHECK(family["cases"] == 4);
  CHECK(family["selection"] == nlohmann::json{{"verdict", true}, {"cases_without_verdict", 12}});
  const auto command = family["command_line"].get<std::vector<std::string>>();
  CHECK(std::count(command.begin(), command.end(), "--verdict") == 1);
  CHECK(hdb_test::contains(log.str(), "[standin] starting hdbench-standin, 4 cases"));

  // Every check is measured: no "not measured" line, and the check's own figure is graded.
  const auto check = nlohmann::json::parse(hdb::read_text_file(run_dir / "check.json"));
  std::size_t not_measured = 0;
  bool checked_figure = false;
  for (const auto& line : check["lines"]) {
    not_measured += hdb_test::contains(line.value("reason", ""), "not measured") ? 1 : 0;
    checked_figure = checked_figure || (line["check"] == "strided triad 4 MiB, 8 lanes" && line["value"].is_number());
  }
  CHECK(not_measured == 0);
  CHECK(checked_figure);

  // The verdict run stops each case by precision (--stopping=auto): every case says how many
  // repetitions it took and why it stopped, and the repetitions it did not need left no trace.
  const auto rows = hdb::read_results_csv(hdb::read_text_file(run_dir / "results.csv")).rows;
  std::map<std::string, std::size_t> samples;
  std::size_t medians = 0;
  for (const auto& row : rows) {
    if (row.family != "standin" || row.metric != "triad_bandwidth") continue;
    INFO(hdb::describe_case(row));
    CHECK(row.status == hdb::row_status::ok);
    REQUIRE(row.repetitions.has_value());
    CHECK(*row.repetitions >= 5);
    CHECK(*row.repetitions <= 20);
    CHECK((row.stopped_by == "precise" || row.stopped_by == "ceiling" || row.stopped_by == "time"));
    if (row.stat == hdb::statistic::sample) ++samples[hdb::describe_case(row)];
    if (row.stat == hdb::statistic::median) {
      ++medians;
      samples.try_emplace(hdb::describe_case(row), 0);
    }
  }
  CHECK(medians == 4);
  for (const auto& row : rows) {
    if (row.family == "standin" && row.metric == "triad_bandwidth" && row.stat == hdb::statistic::median) {
      INFO(hdb::describe_case(row));
      CHECK(samples[hdb::describe_case(row)] == static_cast<std::size_t>(*row.repetitions));
    }
  }
  CHECK_FALSE(hdb_test::contains(hdb::read_text_file(run_dir / "raw" / "standin.json"), "not needed"));

  const auto report = hdb::read_text_file(run_dir / "report.md");
  CHECK(hdb_test::contains(report, "; verdict run."));
  CHECK(hdb_test::contains(report, "## Not measured: a verdict run\n"));
  CHECK(hdb_test::contains(report, "| standin | 4 | 12 | 8 |"));
  CHECK_FALSE(hdb_test::contains(report, "not measured in this run"));
}
