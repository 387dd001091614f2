// `hdbench run` records the links' error counters and the GPU's own health record at the run's
// start and end, and the kernel log's Xid lines in between (meta.json "health"), and check reads
// them: a stand-in family under a fake nvidia-smi whose PCIe replay counter grows and whose row
// remap is pending at the end, beside a stand-in /dev/kmsg. Also --run-dir-file, which run_all.sh reads.

#include <sstream>

#include "catch_compat.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/run/runner.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;

// One idle stand-in GPU (the stand-in probe's GPU-0000 at PCI 0000:3b:00.0); each `-q` reads 5
// more replays and prints the bank remap histogram. Its health record is clean at the run's start;
// at its end (the second -q read) a row remap is pending, and the driver logged an Xid 79 for it in
// $HDBENCH_KMSG meanwhile. Each call is appended to `calls`.
constexpr const char* count_calls_and_replays =
    "echo \"$1\" >> \"$d/calls\"\n"
    "n=$(cat \"$d/replays\" 2>/dev/null || echo 0)\n";
constexpr const char* replays_and_remap =
    "  --query-compute-apps=*) ;;\n"
    "  --query-gpu=uuid,*) pending=No; [ \"$n\" -ge 10 ] && pending=Yes\n"
    "      echo \"GPU-0000, Enabled, 0, 0, 2, 0, [N/A], [N/A], [N/A], 0, 0, $pending, No, [N/A], [N/A], No, No\" ;;\n"
    "  --query-gpu=*) echo '0, GPU-0000, 1980, 1980, 2619, 0x0000000000000001, 40, 90.00' ;;\n"
    "  -q) printf 'GPU 00000000:3B:00.0\\n    GPU UUID : GPU-0000\\n    PCI\\n'\n"
    "      printf '        Replays Since Reset : %s\\n        Replay Number Rollovers : 0\\n' \"$n\"\n"
    "      printf '    Remapped Rows\\n        Bank Remap Availability Histogram\\n'\n"
    "      printf '            Max : 2560 bank(s)\\n            Low : 0 bank(s)\\n'\n"
    "      [ \"$n\" = 5 ] && echo '4,9002,2000,-;NVRM: Xid (PCI:0000:3B:00): 79, pid=1, name=x, GPU has fallen off the bus.' >> \"$HDBENCH_KMSG\"\n"
    "      echo $((n + 5)) > \"$d/replays\" ;;\n"
    "  nvlink) echo 'GPU 0: Stand-in GPU (UUID: GPU-0000)' ;;\n";

}  // namespace

TEST_CASE("check: a run's replay counters, GPU health record and Xid lines are read at its start and end", "[check][run]") {
  const hdb_test::temp_dir out;
  fs::create_directories(out.path() / "no-sets");
  const hdb_test::fake_nvidia_smi smi(out.path(), replays_and_remap, count_calls_and_replays);
  // Nor the real kernel log: an Xid logged before the run, which is not the run's.
  const auto kmsg = out.path() / "kmsg";
  hdb::atomic_write_file(kmsg, "4,9001,1000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n");
  const hdb_test::scoped_env stand_in_kmsg("HDBENCH_KMSG", kmsg.string());
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
  // The record: one --query-gpu call per reading, the histogram from the same -q.
  const auto& record = health["start"]["gpu_record"];
  CHECK(record["available"] == true);
  CHECK(record["calls"] == 1);
  CHECK(record["gpus"][0]["fields"]["ecc.errors.corrected.aggregate.total"] == "2");
  CHECK(record["gpus"][0]["remap_banks"] == nlohmann::json{{"max", 2560}, {"low", 0}});
  CHECK(health["end"]["gpu_record"]["gpus"][0]["fields"]["remapped_rows.pending"] == "Yes");
  std::size_t record_calls = 0;  // the record's query at the start and the end, nothing more
  std::istringstream calls(hdb::read_text_file(smi.dir() / "calls"));
  for (std::string call; std::getline(calls, call);) record_calls += call.starts_with("--query-gpu=uuid,") ? 1 : 0;
  CHECK(record_calls == 2);
  CHECK(health["kernel_log"]["source"] == kmsg.string());
  CHECK(health["kernel_log"]["after_sequence"] == 9001);
  CHECK(health["kernel_log"]["xid_lines"].size() == 1);

  const auto report = hdb::check_run(run_dir, {out.path() / "no-sets", 0.05});
  INFO(hdb::render_check(report, hdb::output_format::text));
  CHECK_FALSE(report.set);
  const auto replays = std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) { return l.figure == "PCIe replays"; });
  REQUIRE(replays != report.lines.end());
  CHECK(replays->result == hdb::grade::fail);
  CHECK(replays->reading == "0 -> 5");
  CHECK(report.exit_code() == 1);
  const auto line = [&](const std::string& item) {
    return std::find_if(report.lines.begin(), report.lines.end(), [&](const auto& l) { return l.figure == item; });
  };
  REQUIRE(line("row remap") != report.lines.end());
  CHECK(line("row remap")->result == hdb::grade::fail);
  CHECK(line("row remap")->reading == "pending");
  REQUIRE(line("Xid") != report.lines.end());
  CHECK(line("Xid")->result == hdb::grade::fail);
  CHECK(line("Xid")->reading == "79");  // once: the line before the run is not the run's
  CHECK(line("ECC")->result == hdb::grade::pass);
  CHECK(line("reset status")->result == hdb::grade::pass);
}

TEST_CASE("check: without nvidia-smi the run records why its health was not read", "[check][run]") {
  const hdb_test::temp_dir out;
  fs::create_directories(out.path() / "empty");
  const hdb_test::scoped_env path("PATH", (out.path() / "empty").string());
  const hdb_test::scoped_env no_kmsg("HDBENCH_KMSG", (out.path() / "no-kmsg").string());
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
  // The GPU's own record and the kernel log: not read, INFO lines that say why.
  const auto record = std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) { return l.figure == "GPU health record"; });
  REQUIRE(record != report.lines.end());
  CHECK(record->result == hdb::grade::not_graded);
  CHECK(record->reason == "ECC, row remap, fabric and reset status not read at the run's start (nvidia-smi not found in PATH) "
                          "or end (nvidia-smi not found in PATH)");
  const auto xid = std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) { return l.figure == "Xid"; });
  REQUIRE(xid != report.lines.end());
  CHECK(xid->result == hdb::grade::not_graded);
  CHECK_THAT(xid->reason, hdb_test::contains_text("no-kmsg: No such file or directory; journalctl not found in PATH"));
}
