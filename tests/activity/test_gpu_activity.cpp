// nvidia-smi activity around each family: the parsers (fixtures of real output shapes, with
// [N/A] and [Not Supported]), the JSON round trip through the status file, and the anomalies
// report.md lists (through find_anomalies, the path every report rule takes).
#include "catch_compat.hpp"
#include "hdb/harness/data/family_status.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/report/report.hpp"
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
