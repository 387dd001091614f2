// `hdbench run` records the GPU activity around each family and a busy GPU becomes an anomaly in
// report.md, listed like every other report rule's: a stand-in family under a fake nvidia-smi
// that reports another process loading the GPU.
#include "catch_compat.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/report/report.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/run/runner.hpp"
#include "harness/test_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace {

namespace fs = std::filesystem;

using hdb_test::temp_dir;

// An nvidia-smi that sees one busy GPU with another program's process on it.
constexpr const char* busy_gpu =
    "  --query-compute-apps=*) echo '4242, /usr/bin/python3, GPU-standin-0, 30000' ;;\n"
    "  --query-gpu=*) echo '0, GPU-standin-0, 1980, 1980, 2619, 0x0000000000000000, 61, 650.00' ;;\n";

struct finished_run {
  fs::path dir;
  nlohmann::json meta;
  std::vector<std::string> anomalies;  // find_anomalies over the run's results.csv and meta.json
};

finished_run run_good_family(const fs::path& out) {
  const auto options = hdb_test::standin_run_options(out, HDB_STANDIN_DIR);
  std::ostringstream log;
  REQUIRE(hdb::run_suite(options, log) == 0);
  const auto run_dir = fs::directory_iterator(options.out_base)->path();
  const auto meta = hdb::read_meta(run_dir / "meta.json");
  REQUIRE(meta);
  // The status file carries the same activity as meta.json, so `collect` can rebuild it.
  const auto status = nlohmann::json::parse(hdb::read_text_file(run_dir / "raw" / "good.status.json"));
  CHECK(status["activity"] == (*meta)["families"]["good"]["activity"]);
  const auto rows = hdb::read_results_csv(hdb::read_text_file(run_dir / "results.csv")).rows;
  return {run_dir, *meta, hdb::find_anomalies(rows, *meta)};
}

}  // namespace

TEST_CASE("a run while another program loads the GPU is flagged", "[activity][run]") {
  const temp_dir out;
  const hdb_test::fake_nvidia_smi smi(out.path(), busy_gpu);

  const auto run = run_good_family(out.path());
  const auto& activity = run.meta["families"]["good"]["activity"];
  CHECK(activity["start"]["available"] == true);
  CHECK(activity["start"]["processes"][0]["pid"] == 4242);
  CHECK(activity["end"]["gpus"][0]["sm_mhz"] == 1980);
  std::vector<std::string> found;
  for (const auto& line : run.anomalies) {
    if (line.starts_with("good: ")) found.push_back(line);
  }
  REQUIRE(found.size() == 2);
  CHECK(found[0].starts_with("good: another process used GPU GPU-standin-0 (nvidia-smi index 0) before the "
                             "family started: pid 4242 /usr/bin/python3 (30000 MiB)"));
  CHECK(found[1].starts_with("good: another process used GPU GPU-standin-0 (nvidia-smi index 0) after the "
                             "family ended"));
  // report.md lists them under Anomalies like the other rules' lines.
  const auto report = hdb::read_text_file(run.dir / "report.md");
  const auto anomalies_at = report.find("## Anomalies\n");
  REQUIRE(anomalies_at != std::string::npos);
  CHECK(report.find("- " + found[0] + "\n", anomalies_at) != std::string::npos);
  CHECK(report.find("- " + found[1] + "\n", anomalies_at) != std::string::npos);
}

TEST_CASE("without nvidia-smi the activity is unknown and the run is fine", "[activity][run]") {
  const temp_dir out;
  fs::create_directories(out.path() / "empty");
  const hdb_test::scoped_env path("PATH", (out.path() / "empty").string());

  const auto run = run_good_family(out.path());
  const auto& activity = run.meta["families"]["good"]["activity"];
  CHECK(activity["start"]["available"] == false);
  CHECK(activity["start"]["error"] == "nvidia-smi not found in PATH");
  for (const auto& line : run.anomalies) CHECK_FALSE(line.starts_with("good: "));
  // The host's own counters do not need nvidia-smi: this machine's /proc, before and after.
  for (const auto* moment : {"start", "end"}) {
    const auto& host = activity[moment]["host"];
    CHECK(host["uptime_s"].is_number());
    CHECK(host["cpu_jiffies"].is_number_unsigned());
    CHECK(host["steal_jiffies"].is_number_unsigned());
  }
  CHECK(activity["end"]["host"]["uptime_s"].get<double>() >= activity["start"]["host"]["uptime_s"].get<double>());
}
