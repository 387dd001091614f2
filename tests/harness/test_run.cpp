// `hdbench run` against stand-in family binaries (tests/harness/standins): one good, one that
// aborts after 2 cases, one that hangs after 1 (2 s timeout), one that writes garbage JSON,
// and one whose binary does not exist.
#include "catch_compat.hpp"
#include "hdb/harness/data/collect.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/run/runner.hpp"
#include "test_support.hpp"

#include <sstream>

namespace {

std::map<std::string, hdb::family_status> statuses_by_family(const std::vector<hdb::collected_family>& families) {
  std::map<std::string, hdb::family_status> by_family;
  for (const auto& f : families) by_family[f.status.family] = f.status;
  return by_family;
}

std::size_t count_medians(const std::vector<hdb::result_row>& rows, const std::string& family) {
  std::size_t n = 0;
  for (const auto& row : rows) n += row.family == family && row.stat == hdb::statistic::median ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("run keeps what finished and records each failure", "[run]") {
  // One run, checked in order: a SECTION would start the whole suite again.
  const hdb_test::temp_dir out;
  hdb::suite_run_options options;
  options.out_base = out.path();
  options.manifest = hdb_test::fixture("standin_suite.json");
  options.bin_dir = HDB_STANDIN_DIR;
  options.command_line = {"hdbench", "run"};
  options.plots.plots_dir = out.path() / "no-plots";  // plots are someone else's test
  std::ostringstream log;

  CHECK(hdb::run_suite(options, log) == 1);

  const auto run_dirs = std::vector<std::filesystem::directory_entry>(std::filesystem::directory_iterator(out.path()),
                                                                      std::filesystem::directory_iterator());
  REQUIRE(run_dirs.size() == 1);
  const auto dir = run_dirs[0].path();
  for (const auto* file : {"meta.json", "results.csv", "report.md", "raw/good.json", "raw/good.stderr.log"}) {
    CHECK(std::filesystem::exists(dir / file));
  }
  const auto collected = hdb::collect_run(dir, {options.manifest, ""});
  const auto status = statuses_by_family(collected.families);
  REQUIRE(status.size() == 5);
  CHECK(status.at("good").state == hdb::family_state::ok);
  // The stand-ins live below the test's working directory (the build tree): recorded relative.
  CHECK(std::filesystem::path(status.at("good").binary).is_relative());
  CHECK(status.at("good").command_line.front() == status.at("good").binary);  // and started by it
  CHECK(std::filesystem::equivalent(status.at("good").binary, std::filesystem::path(HDB_STANDIN_DIR) / "standin-good"));
  CHECK(status.at("crash").state == hdb::family_state::crashed);
  CHECK(status.at("crash").signal == SIGABRT);
  CHECK(status.at("hang").state == hdb::family_state::timed_out);
  CHECK(status.at("garbage").state == hdb::family_state::failed);
  CHECK(hdb_test::contains(hdb::failure_reason(status.at("garbage")), "no valid JSON output"));
  CHECK(status.at("missing").state == hdb::family_state::failed);
  CHECK(hdb_test::contains(hdb::failure_reason(status.at("missing")), "binary not found: "));


  // Finished cases survive a crash and a hang.
  CHECK(count_medians(collected.rows, "good") == 3);
  CHECK(count_medians(collected.rows, "crash") == 2);
  CHECK(count_medians(collected.rows, "hang") == 1);
  CHECK(hdb_test::contains(status.at("crash").stderr_tail, "standin: case 1 done"));

  // results.csv on disk is what collect rebuilds.
  CHECK(hdb::read_text_file(dir / "results.csv") == hdb::write_results_csv(collected.rows, collected.param_columns));
  CHECK(collected.param_columns == std::vector<std::string>{"direction", "host_kind", "size_bytes"});

  // meta.json has the probe, the host and every family's status.
  const auto meta = *hdb::read_meta(dir / "meta.json");
  CHECK(meta["node"]["gpus"][0]["name"] == "Stand-in GPU");
  CHECK(meta["host"]["hostname"].is_string());
  CHECK(meta["families"]["hang"]["status"] == "timed_out");
  CHECK(meta["families"]["good"]["plots"] == "standin");
  CHECK(meta["families"]["good"]["schema"]["family"] == "good");
  CHECK(meta["families"]["crash"]["reason"].get<std::string>().starts_with("crashed (signal 6, SIGABRT) after 2 cases"));
  CHECK(meta["finished_utc"].is_string());

  // The report flags the stand-in probe's slow link.
  CHECK(hdb_test::contains(hdb::read_text_file(dir / "report.md"), "below its maximum Gen5 x16"));

  // Progress names each family with its case count.
  CHECK(hdb_test::contains(log.str(), "[good] starting standin-good, 3 cases"));
  CHECK(hdb_test::contains(log.str(), "[good] ok, 3 cases in"));
}

TEST_CASE("run refuses an unknown family before creating anything", "[run]") {
  const hdb_test::temp_dir out;
  hdb::suite_run_options options;
  options.out_base = out.path() / "results";
  options.manifest = hdb_test::fixture("standin_suite.json");
  options.bin_dir = HDB_STANDIN_DIR;
  options.families = {"good", "nope"};
  std::ostringstream log;
  CHECK_THROWS_WITH(hdb::run_suite(options, log), "unknown family 'nope' (the manifest has: good, crash, hang, garbage, missing)");
  CHECK_FALSE(std::filesystem::exists(options.out_base));
}

TEST_CASE("run on a node without a usable GPU says so in one line and creates nothing", "[run]") {
  const hdb_test::temp_dir out;
  hdb::suite_run_options options;
  options.out_base = out.path() / "results";
  options.manifest = hdb_test::fixture("standin_suite.json");
  options.bin_dir = out.path();  // no hdbench-probe here: the probe answers no GPU
  std::ostringstream log;
  CHECK_THROWS_WITH(hdb::run_suite(options, log), hdb_test::contains_text("no usable GPU here: ") &&
                                                      hdb_test::contains_text("hdbench-probe not found") &&
                                                      hdb_test::contains_text("; nothing measured"));
  CHECK_FALSE(std::filesystem::exists(options.out_base));
  CHECK(log.str().find("starting") == std::string::npos);  // no family was started
}

TEST_CASE("flags after -- reach every family unless routed to one as --family.flag", "[run]") {
  hdb::family_entry copy;
  copy.name = "copy";
  copy.flags = {"--numa=none"};
  copy.quick_flags = {"--quick"};
  hdb::family_entry sync = copy;
  sync.name = "sync";
  hdb::suite_run_options options;
  options.quick = true;
  options.extra_flags = {"--devices=1", "--copy.sizes=1M", "--sync.trap-every=1,2", "--gate-timeout-ms=3000"};
  CHECK(hdb::family_flags(copy, options) ==
        std::vector<std::string>{"--numa=none", "--quick", "--devices=1", "--sizes=1M", "--gate-timeout-ms=3000"});
  CHECK(hdb::family_flags(sync, options) ==
        std::vector<std::string>{"--numa=none", "--quick", "--devices=1", "--trap-every=1,2", "--gate-timeout-ms=3000"});
  options.extra_flags = {"--benchmark_min_time=0.5s"};  // a dot after '=' is a value, not a route
  CHECK(hdb::family_flags(copy, options).back() == "--benchmark_min_time=0.5s");
}

TEST_CASE("a flag routed to a family the manifest does not have is an error naming it", "[run]") {
  hdb::family_entry copy;
  copy.name = "copy";
  hdb::family_entry sync = copy;
  sync.name = "sync";
  CHECK_NOTHROW(hdb::check_routed_flags({copy, sync}, {"--copy.sizes=1M", "--benchmark_min_time=0.5s", "--devices=0"}));
  try {
    hdb::check_routed_flags({copy, sync}, {"--copy.sizes=1M", "--nope.sizes=1M"});
    FAIL("expected an error");
  } catch (const hdb::harness_error& e) {
    CHECK(hdb_test::contains(e.what(), "flag --nope.sizes=1M names no family 'nope' (families: copy, sync)"));
  }
}
