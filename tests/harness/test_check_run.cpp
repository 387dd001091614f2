// `hdbench run` records the links' error counters at the run's start and end (meta.json
// "health"), and check reads them: a stand-in family under a fake nvidia-smi whose PCIe replay
// counter grows between its two readings. Also --run-dir-file, which run_all.sh reads.
#include <sys/stat.h>

#include <sstream>

#include "catch_compat.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/run/runner.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;

// One idle stand-in GPU (the stand-in probe's GPU-0000); each `-q` reads 5 more replays.
void write_fake_smi(const fs::path& dir) {
  const auto script = dir / "nvidia-smi";
  hdb::atomic_write_file(script,
                         "#!/bin/sh\n"
                         "d=$(dirname \"$0\")\n"
                         "case \"$1\" in\n"
                         "  --query-compute-apps=*) ;;\n"
                         "  --query-gpu=*) echo '0, GPU-0000, 1980, 1980, 2619, 0x0000000000000001, 40, 90.00' ;;\n"
                         "  -q) n=$(cat \"$d/replays\" 2>/dev/null || echo 0)\n"
                         "      printf 'GPU 00000000:3B:00.0\\n    GPU UUID : GPU-0000\\n    PCI\\n'\n"
                         "      printf '        Replays Since Reset : %s\\n        Replay Number Rollovers : 0\\n' \"$n\"\n"
                         "      echo $((n + 5)) > \"$d/replays\" ;;\n"
                         "  nvlink) echo 'GPU 0: Stand-in GPU (UUID: GPU-0000)' ;;\n"
                         "  *) exit 6 ;;\n"
                         "esac\n");
  ::chmod(script.c_str(), 0755);
}

}  // namespace

TEST_CASE("check: a run's replay counters are read at its start and end", "[check][run]") {
  const hdb_test::temp_dir out;
  fs::create_directories(out.path() / "smi");
  fs::create_directories(out.path() / "no-sets");
  write_fake_smi(out.path() / "smi");
  const hdb_test::scoped_env path("PATH", (out.path() / "smi").string() + ":/usr/bin:/bin");
  // Nor the real /proc: on a GPU node a GPU test beside this one holds the GPU's device file.
  const hdb_test::scoped_env no_proc("HDBENCH_PROC", (out.path() / "no-proc").string());
  auto options = hdb_test::standin_run_options(out.path(), HDB_STANDIN_DIR);
  options.run_dir_file = out.path() / "run-dir";
  std::ostringstream log;
  REQUIRE(hdb::run_suite(options, log) == 0);
  const auto run_dir = fs::directory_iterator(options.out_base)->path();
  CHECK(hdb::read_text_file(options.run_dir_file) == run_dir.string() + "\n");

  const auto meta = hdb::read_meta(run_dir / "meta.json");
  REQUIRE(meta);
  const auto& health = (*meta)["health"];
  CHECK(health["start"]["available"] == true);
  CHECK(health["start"]["gpus"][0]["uuid"] == "GPU-0000");
  CHECK(health["start"]["gpus"][0]["pcie_replays"] == 0);
  CHECK(health["end"]["gpus"][0]["pcie_replays"] == 5);
  CHECK(health["end"]["nvlink_available"] == true);

  const auto report = hdb::check_run(run_dir, {out.path() / "no-sets", 0.05});
  INFO(hdb::render_check(report, hdb::output_format::text));
  CHECK_FALSE(report.set);
  const auto replays = std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) { return l.figure == "PCIe replays"; });
  REQUIRE(replays != report.lines.end());
  CHECK(replays->result == hdb::grade::fail);
  CHECK(replays->reading == "0 -> 5");
  CHECK(report.exit_code() == 1);
}

TEST_CASE("check: without nvidia-smi the run records why its health was not read", "[check][run]") {
  const hdb_test::temp_dir out;
  fs::create_directories(out.path() / "empty");
  const hdb_test::scoped_env path("PATH", (out.path() / "empty").string());
  auto options = hdb_test::standin_run_options(out.path(), HDB_STANDIN_DIR);
  std::ostringstream log;
  REQUIRE(hdb::run_suite(options, log) == 0);
  const auto run_dir = fs::directory_iterator(options.out_base)->path();
  fs::create_directories(out.path() / "no-sets");
  const auto report = hdb::check_run(run_dir, {out.path() / "no-sets", 0.05});
  REQUIRE_FALSE(report.lines.empty());
  const auto missing = std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) { return l.figure == "health not read"; });
  REQUIRE(missing != report.lines.end());
  CHECK(missing->result == hdb::grade::warn);
  CHECK(missing->reason == "PCIe replay counters not read at the run's start: nvidia-smi not found in PATH");
}
