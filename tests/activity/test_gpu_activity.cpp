// nvidia-smi activity around each family: the parsers (fixtures of real output shapes, with
// [N/A] and [Not Supported]), the JSON round trip through the status file, and the anomalies
// report.md lists (through find_anomalies, the path every report rule takes).
#include "catch_compat.hpp"
#include "hdb/harness/data/family_status.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/report/report.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace {

using nlohmann::json;

const std::string gpu_a = "GPU-1a2b3c4d-0000-1111-2222-333344445555";
const std::string gpu_b = "GPU-99999999-8888-7777-6666-555544443333";

std::string fixture_text(const char* name) {
  return hdb::read_text_file(std::filesystem::path(HDB_TEST_FIXTURES) / name);
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

hdb::gpu_clock_state gpu(const std::string& uuid, double sm_mhz, unsigned long long reasons) {
  hdb::gpu_clock_state g;
  g.index = uuid == gpu_a ? 0 : 1;
  g.uuid = uuid;
  g.sm_mhz = sm_mhz;
  g.sm_max_mhz = 1980;
  g.event_reasons = reasons;
  return g;
}

hdb::activity_snapshot quiet_snapshot() {
  hdb::activity_snapshot s;
  s.available = true;
  s.gpus = {gpu(gpu_a, 345, 0x1), gpu(gpu_b, 345, 0x1)};
  return s;
}

// meta.json with one family whose activity is `activity`.
json meta_with(const hdb::family_activity& activity) {
  hdb::family_status status;
  status.family = "copy";
  status.activity = activity;
  return {{"families", {{"copy", hdb::to_json(status)}}}};
}

// report.md's anomalies for a run whose one family, copy, failed (one row) with this meta.json.
std::vector<std::string> anomalies_of(const json& meta) {
  hdb::result_row failed;
  failed.run_id = "r";
  failed.family = "copy";
  failed.status = hdb::row_status::failed;
  failed.reason = "exited with code 1";
  return hdb::find_anomalies({failed}, meta);
}

hdb::compute_process process(long pid, const std::string& uuid) {
  hdb::compute_process p;
  p.pid = pid;
  p.name = "python3";
  p.gpu_uuid = uuid;
  p.used_memory_mib = 2048;
  return p;
}

}  // namespace

TEST_CASE("compute apps are parsed with unknown fields and commas in names", "[activity]") {
  const auto apps = hdb::parse_compute_apps(fixture_text("compute_apps.csv"));
  REQUIRE(apps.size() == 3);
  CHECK(apps[0].pid == 12345);
  CHECK(apps[0].name == "/usr/bin/python3");
  CHECK(apps[0].gpu_uuid == gpu_a);
  CHECK(apps[0].used_memory_mib == 1024);
  CHECK(apps[1].name == "[Not Found]");
  CHECK_FALSE(apps[1].used_memory_mib);
  CHECK(apps[2].name == "/opt/my,app/bin/worker");
  CHECK(apps[2].gpu_uuid == gpu_b);
  CHECK(apps[2].used_memory_mib == 512);
  CHECK(hdb::parse_compute_apps("").empty());
  CHECK(hdb::parse_compute_apps("No running processes found\n").empty());
}

TEST_CASE("GPU clock states are parsed with [N/A] and [Not Supported]", "[activity]") {
  const auto gpus = hdb::parse_gpu_clock_states(fixture_text("gpus.csv"));
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[0].index == 0);
  CHECK(gpus[0].uuid == gpu_a);
  CHECK(gpus[0].sm_mhz == 1980);
  CHECK(gpus[0].sm_max_mhz == 1980);
  CHECK(gpus[0].mem_mhz == 2619);
  CHECK(gpus[0].event_reasons == 0ull);
  CHECK(gpus[0].temperature_c == 42);
  CHECK(gpus[0].power_w == hdb_test::Approx(312.45));
  CHECK(gpus[1].event_reasons == 1ull);
  CHECK_FALSE(gpus[2].sm_mhz);
  CHECK_FALSE(gpus[2].event_reasons);
  CHECK_FALSE(gpus[2].power_w);
  CHECK(hdb::parse_gpu_clock_states("0, GPU-x, 1980\n").empty());  // a different field list
}

TEST_CASE("clock event reasons are named", "[activity]") {
  CHECK(hdb::describe_clock_event_reasons(0) == "none");
  CHECK(hdb::describe_clock_event_reasons(0x1) == "gpu_idle");
  CHECK(hdb::describe_clock_event_reasons(0x5) == "gpu_idle,sw_power_cap");
  CHECK(hdb::describe_clock_event_reasons(0x60) == "sw_thermal_slowdown,hw_thermal_slowdown");
  CHECK(hdb::describe_clock_event_reasons(0x1000) == "unknown 0x1000");
}

TEST_CASE("activity survives the status file and old status files still read", "[activity]") {
  hdb::family_activity activity;
  activity.start = quiet_snapshot();
  activity.start.taken_utc = "2026-11-30T09:00:00Z";
  activity.start.processes = {process(4242, gpu_a)};
  activity.start.processes[0].harness_own = true;
  activity.end.error = "nvidia-smi not found in PATH";
  activity.measured_gpus = {gpu_a};
  hdb::family_status status;
  status.family = "copy";
  status.activity = activity;

  const auto back = hdb::family_status_from_json(hdb::to_json(status));
  REQUIRE(back.activity);
  CHECK(back.activity->start.available);
  CHECK(back.activity->start.taken_utc == "2026-11-30T09:00:00Z");
  REQUIRE(back.activity->start.processes.size() == 1);
  CHECK(back.activity->start.processes[0].pid == 4242);
  CHECK(back.activity->start.processes[0].harness_own);
  CHECK(back.activity->start.processes[0].used_memory_mib == 2048);
  REQUIRE(back.activity->start.gpus.size() == 2);
  CHECK(back.activity->start.gpus[0].event_reasons == 1ull);
  CHECK(back.activity->start.gpus[0].sm_mhz == 345);
  CHECK_FALSE(back.activity->end.available);
  CHECK(back.activity->end.error == "nvidia-smi not found in PATH");
  CHECK(back.activity->measured_gpus == std::vector<std::string>{gpu_a});
  CHECK(hdb::to_json(status)["activity"]["start"]["gpus"][0]["clock_event_description"] == "gpu_idle");

  const json old_status = {{"family", "copy"}, {"status", "ok"}, {"stderr_tail", ""}};
  CHECK_FALSE(hdb::family_status_from_json(old_status).activity);
}

TEST_CASE("measured GPUs come from the labels and the context", "[activity]") {
  hdb::raw_family_output output;
  output.context = {{"gpu.uuid", gpu_b}};
  hdb::raw_run single;
  single.label = "case=bandwidth;direction=h2d;device=0;gpu_uuid=" + gpu_a + ";headline=bandwidth";
  hdb::raw_run pair;
  pair.label = "case=bandwidth;device=0,1;gpu_uuid=" + gpu_a + "," + gpu_b;
  output.runs = {single, pair};
  CHECK(hdb::measured_gpu_uuids(output) == std::vector<std::string>{gpu_a, gpu_b});
  CHECK(hdb::measured_gpu_uuids(hdb::raw_family_output{}).empty());

  // Schema 2 context: one gpu.<index>.uuid per measured GPU.
  hdb::raw_family_output context_only;
  context_only.context = {{"gpu.0.uuid", gpu_a}, {"gpu.1.uuid", gpu_b}, {"gpu.0.name", "NVIDIA H200"}};
  CHECK(hdb::measured_gpu_uuids(context_only) == std::vector<std::string>{gpu_a, gpu_b});
}

TEST_CASE("activity anomalies", "[activity]") {
  hdb::family_activity activity;
  activity.start = quiet_snapshot();
  activity.end = quiet_snapshot();
  activity.measured_gpus = {gpu_a};

  SECTION("a quiet, idle GPU has none") { CHECK(anomalies_of(meta_with(activity)).empty()); }
  SECTION("another process on the measured GPU, before and after") {
    activity.start.processes = {process(4242, gpu_a)};
    activity.end.processes = {process(4242, gpu_a)};
    const auto found = anomalies_of(meta_with(activity));
    REQUIRE(found.size() == 2);
    CHECK(contains(found[0], "copy: another process used GPU " + gpu_a + " (nvidia-smi index 0) before the family started"));
    CHECK(contains(found[0], "pid 4242 python3 (2048 MiB)"));
    CHECK(contains(found[1], "after the family ended"));
  }
  SECTION("a process on a GPU the family did not measure, or of the harness itself, is not one") {
    activity.start.processes = {process(4242, gpu_b), process(77, gpu_a)};
    activity.start.processes[1].harness_own = true;
    CHECK(anomalies_of(meta_with(activity)).empty());
  }
  SECTION("another hdbench binary is named as such") {
    activity.start.processes = {process(5151, gpu_a)};
    activity.start.processes[0].name = "/opt/hdbench/bin/hdbench-copy";
    const auto found = anomalies_of(meta_with(activity));
    REQUIRE(found.size() == 1);
    CHECK(contains(found[0], "copy: another hdbench run used GPU " + gpu_a + " (nvidia-smi index 0) before the family "
                             "started: pid 5151 /opt/hdbench/bin/hdbench-copy (2048 MiB) (the per-GPU lock"));
  }
  SECTION("without measured GPUs every GPU counts") {
    activity.measured_gpus.clear();
    activity.end.processes = {process(4242, gpu_b)};
    REQUIRE(anomalies_of(meta_with(activity)).size() == 1);
  }
  SECTION("throttling other than idleness") {
    activity.end.gpus[0] = gpu(gpu_a, 1500, 0x4);
    const auto found = anomalies_of(meta_with(activity));
    REQUIRE(found.size() == 1);
    CHECK(found[0] ==
          "copy: GPU " + gpu_a + " (nvidia-smi index 0) clocks held back after the family ended: 0x4 (sw_power_cap), "
          "SM at 1500 MHz of 1980 MHz");
  }
  SECTION("an SM clock drop while busy") {
    activity.start.gpus[0] = gpu(gpu_a, 1980, 0x0);
    activity.end.gpus[0] = gpu(gpu_a, 1600, 0x0);
    const auto found = anomalies_of(meta_with(activity));
    REQUIRE(found.size() == 1);
    CHECK(contains(found[0], "SM clock fell from 1980 MHz before the family started to 1600 MHz after it ended"));
  }
  SECTION("a lower clock on an idle GPU, or a small drop, is not a drop") {
    activity.start.gpus[0] = gpu(gpu_a, 1980, 0x0);
    activity.end.gpus[0] = gpu(gpu_a, 345, 0x1);
    CHECK(anomalies_of(meta_with(activity)).empty());
    activity.end.gpus[0] = gpu(gpu_a, 1900, 0x0);
    CHECK(anomalies_of(meta_with(activity)).empty());
  }
  SECTION("unknown activity and old meta files add nothing") {
    activity.start = hdb::activity_snapshot{};
    activity.end = hdb::activity_snapshot{};
    CHECK(anomalies_of(meta_with(activity)).empty());
    CHECK(anomalies_of(json{{"families", {{"copy", {{"status", "ok"}}}}}}).empty());
    CHECK(anomalies_of(json::object()).empty());
    CHECK(anomalies_of(json()).empty());
  }
}

TEST_CASE("device file holders name a co-tenant that nvidia-smi cannot list", "[activity]") {
  namespace fs = std::filesystem;
  hdb_test::temp_dir proc;
  const auto gpu = [&](const std::string& bus, const std::string& minor, const std::string& uuid) {
    fs::create_directories(proc.path() / "driver/nvidia/gpus" / bus);
    std::ofstream(proc.path() / "driver/nvidia/gpus" / bus / "information")
        << "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t " << uuid << "\nBus Location: \t " << bus
        << "\nDevice Minor: \t " << minor << "\n";
  };
  const auto process = [&](const std::string& pid, const std::string& comm, const std::vector<std::string>& files) {
    fs::create_directories(proc.path() / pid / "fd");
    std::ofstream(proc.path() / pid / "comm") << comm << "\n";
    for (std::size_t i = 0; i < files.size(); ++i) fs::create_symlink(files[i], proc.path() / pid / "fd" / std::to_string(i + 3));
  };
  gpu("0000:17:00.0", "0", "GPU-aaaa");
  gpu("0000:2a:00.0", "1", "GPU-bbbb");
  process("4242", "pcie-copy-load", {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"});
  process("77", "nvidia-persiste", {"/dev/nvidia0", "/dev/nvidia1"});  // holds them, computes nothing
  process("88", "bash", {"/dev/pts/0"});
  process("99", "python3", {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia10"});
  fs::create_directories(proc.path() / "self");  // not a pid
  auto holders = hdb::device_file_holders(proc.path());
  std::sort(holders.begin(), holders.end(), [](const auto& a, const auto& b) { return std::tie(a.pid, a.gpu_uuid) < std::tie(b.pid, b.gpu_uuid); });
  REQUIRE(holders.size() == 3);
  CHECK(holders[0].pid == 99);
  CHECK(holders[0].name == "python3");
  CHECK(holders[0].gpu_uuid == "GPU-aaaa");
  CHECK(holders[1].gpu_uuid == "GPU-bbbb");  // /dev/nvidia10 is no GPU of this node
  CHECK(holders[2].pid == 4242);
  CHECK(holders[2].name == "pcie-copy-load");
  CHECK(holders[2].gpu_uuid == "GPU-bbbb");
  CHECK_FALSE(holders[2].used_memory_mib);
  CHECK(hdb::device_file_holders(proc.path() / "missing").empty());
}

TEST_CASE("the host's counters: /proc/stat's steal and PSI's CPU stall, their shares between two readings, check's note",
          "[activity]") {
  // As a kernel writes them: user nice system idle iowait irq softirq steal guest guest_nice (a host
  // running guests of its own).
  const auto cpu = hdb::parse_proc_stat_cpu("cpu  3118733 140383 354843 2186223 6111 0 2440 917 5000 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  REQUIRE(cpu);
  CHECK(cpu->first == 5809650);  // the first eight; guest time is inside user
  CHECK(cpu->second == 917);
  CHECK_FALSE(hdb::parse_proc_stat_cpu("cpu  10 0 5 85\n"));  // no steal column: unknown, not 0
  CHECK_FALSE(hdb::parse_proc_stat_cpu("cpu x y z\n"));
  CHECK_FALSE(hdb::parse_proc_stat_cpu("intr 1 2 3\n"));

  CHECK(hdb::parse_pressure_some_total("some avg10=0.11 avg60=2.79 avg300=11.21 total=7463483617\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") == 7463483617ull);
  CHECK_FALSE(hdb::parse_pressure_some_total("some avg10=0.11\n"));
  CHECK_FALSE(hdb::parse_pressure_some_total("some total=abc\n"));
  CHECK_FALSE(hdb::parse_pressure_some_total("some total=99999999999999999999999\n"));  // past 64 bits
  CHECK_FALSE(hdb::parse_pressure_some_total(""));

  const hdb_test::temp_dir proc;
  std::filesystem::create_directories(proc.path() / "pressure");
  hdb::atomic_write_file(proc.path() / "uptime", "123.45 1900.10\n");
  hdb::atomic_write_file(proc.path() / "stat", "cpu  1000 0 0 0 0 0 0 10 0 0\n");
  hdb::atomic_write_file(proc.path() / "pressure" / "cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  const auto start = hdb::read_host_cpu_counters(proc.path());
  CHECK(start.uptime_s == 123.45);
  CHECK(start.cpu_jiffies == 1010ull);
  CHECK(start.steal_jiffies == 10ull);
  CHECK(start.cpu_stall_us == 0ull);
  const auto nothing = hdb::read_host_cpu_counters(proc.path() / "absent");
  CHECK_FALSE(nothing.uptime_s);
  CHECK_FALSE(nothing.cpu_jiffies);
  CHECK_FALSE(nothing.cpu_stall_us);

  // 10 s later: 1600 jiffies of CPU time, 160 of them stolen; a task waited for a CPU 0.5 s.
  hdb::host_cpu_counters end{133.45, 2610, 170, 500000};
  const auto load = hdb::host_load_between(start, end);
  CHECK(load.seconds == hdb_test::Approx(10.0));
  REQUIRE(load.steal_share);
  CHECK(*load.steal_share == hdb_test::Approx(0.1));
  REQUIRE(load.cpu_stall_share);
  CHECK(*load.cpu_stall_share == hdb_test::Approx(0.05));
  CHECK_FALSE(hdb::host_load_between(start, nothing).steal_share);
  auto rebooted = end;
  rebooted.steal_jiffies = 5;  // counters that went back are not a share
  CHECK_FALSE(hdb::host_load_between(start, rebooted).steal_share);

  // Through the status file and meta.json into check's notes: over both families, not graded.
  hdb::family_activity copy;
  copy.start.host = start;
  copy.end.host = end;
  hdb::family_activity sync;
  sync.start.host = {200.0, 5000, 200, 1000000};
  sync.end.host = {210.0, 6600, 200, 1000000};  // 10 s without steal or stall
  json meta = meta_with(copy);
  hdb::family_status sync_status;
  sync_status.family = "sync";
  sync_status.activity = sync;
  meta["families"]["sync"] = hdb::to_json(sync_status);
  std::vector<std::string> notes;
  std::ignore = hdb::health_lines(meta, nullptr, {}, &notes);
  CHECK(std::count(notes.begin(), notes.end(),
                   "host while the families ran (20.0 s): CPU steal 5 % of CPU time (/proc/stat), a task waiting for a CPU "
                   "2.5 % of the time (/proc/pressure/cpu); not graded") == 1);
  // A run of an hdbench before these counters: no note, and nothing else changes.
  notes.clear();
  std::ignore = hdb::health_lines(meta_with(hdb::family_activity{}), nullptr, {}, &notes);
  CHECK(std::none_of(notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("host while"); }));
}
