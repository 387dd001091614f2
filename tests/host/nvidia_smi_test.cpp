// The one nvidia-smi runner (hdb/util/nvidia_smi.hpp): --query-gpu CSV per GPU with the values
// real drivers print ([N/A], [Not Supported], CRLF), the retry under the pre-535 name of the
// reason mask (a fake nvidia-smi on PATH), and the clock event reason table.
#include "catch_compat.hpp"
#include "hdb/util/nvidia_smi.hpp"
#include "test_helpers.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>

namespace {

const std::vector<std::string> fields = {"index", "uuid", "clocks.sm", "clocks.max.sm", "clocks_event_reasons.active",
                                         "power.draw"};

// Two H200s and a line of another shape (nvidia-smi's warnings go to stdout on some drivers).
constexpr const char* two_gpus =
    "0, GPU-1a2b3c4d-0000-1111-2222-333344445555, 1980, 1980, 0x0000000000000000, 650.12\r\n"
    "WARNING: infoROM is corrupted at gpu 0000:19:00.0\n"
    "\n"
    "1, GPU-99999999-8888-7777-6666-555544443333, [N/A], 1980, 0x0000000000000004, [Not Supported]\n";

void write_script(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

}  // namespace

TEST_CASE("query-gpu lines are read per GPU", "[host][nvidia_smi]") {
  const auto rows = hdb::parse_smi_query(two_gpus, fields);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].number("index") == 0);
  CHECK(rows[0].text("uuid") == "GPU-1a2b3c4d-0000-1111-2222-333344445555");
  CHECK(rows[0].number("clocks.sm") == 1980);
  CHECK(rows[0].mask("clocks_event_reasons.active") == 0u);
  CHECK(rows[0].number("power.draw") == hdb_test::Approx(650.12));
  CHECK(rows[1].number("index") == 1);
  CHECK_FALSE(rows[1].number("clocks.sm"));
  CHECK(rows[1].text("clocks.sm") == "[N/A]");
  CHECK(rows[1].mask("clocks_event_reasons.active") == 4u);
  CHECK_FALSE(rows[1].number("power.draw"));
  CHECK(rows[1].text("not.queried").empty());
  CHECK(hdb::parse_smi_query("", fields).empty());
  CHECK(hdb::parse_smi_query("No devices were found\n", fields).empty());
}

TEST_CASE("nvidia-smi numbers and masks", "[host][nvidia_smi]") {
  CHECK(hdb::smi_number("1980") == 1980);
  CHECK(hdb::smi_number("61.5") == 61.5);
  for (const char* unknown : {"", "N/A", "[N/A]", "[Not Supported]", "[Unknown Error]", "12 MHz"}) {
    CHECK_FALSE(hdb::smi_number(unknown));
  }
  CHECK(hdb::smi_mask("0x0000000000000044") == 0x44u);
  CHECK_FALSE(hdb::smi_mask("0x"));
  CHECK_FALSE(hdb::smi_mask("44"));
  CHECK_FALSE(hdb::smi_mask("0x4g"));
  CHECK_FALSE(hdb::smi_mask("[N/A]"));
}

TEST_CASE("the clock event reason table", "[host][nvidia_smi]") {
  CHECK(hdb::describe_clock_event_reasons(0) == "none");
  CHECK(hdb::describe_clock_event_reasons(0x1) == "gpu_idle");
  CHECK(hdb::describe_clock_event_reasons(0x44) == "sw_power_cap,hw_thermal_slowdown");
  CHECK(hdb::describe_clock_event_reasons(0x1ff).find("display_clock_setting") != std::string::npos);
  CHECK(hdb::describe_clock_event_reasons(0x1004) == "sw_power_cap,unknown 0x1000");
  CHECK(hdb::clock_event_reason_table().size() == 9);
  CHECK_FALSE(hdb::clocks_held_back(0x1));
  CHECK(hdb::clocks_held_back(0x5));
}

TEST_CASE("query_gpus runs nvidia-smi from PATH and retries the old reason name", "[host][nvidia_smi]") {
  hdb_test::temp_dir dir;
  const hdb_test::scoped_env path("PATH", dir.path().string() + ":/usr/bin:/bin");
  SECTION("no nvidia-smi") {
    // Only the empty folder: a GPU node has a real nvidia-smi in /usr/bin.
    const hdb_test::scoped_env only_empty("PATH", dir.path().string());
    const auto q = hdb::query_gpus(fields);
    CHECK(q.gpus.empty());
    CHECK(q.error == "nvidia-smi not found in PATH");
  }
  SECTION("a driver before 535") {
    // Records its arguments; refuses the new name of the mask as those drivers do.
    write_script(dir.path() / "nvidia-smi",
                 "#!/bin/sh\n"
                 "echo \"$@\" >> \"$(dirname \"$0\")/calls\"\n"
                 "case \"$1\" in *clocks_event_reasons*) echo 'Field \"clocks_event_reasons.active\" is not a valid "
                 "field to query.' ; exit 2 ;; esac\n"
                 "echo '0, GPU-a, 1980, 1980, 0x0000000000000001, 70.00'\n");
    const auto q = hdb::query_gpus(fields, "GPU-a");
    CHECK(q.error.empty());
    REQUIRE(q.gpus.size() == 1);
    CHECK(q.gpus[0].mask(hdb::smi_clock_event_reasons) == 1u);
    std::ifstream calls(dir.path() / "calls");
    std::string first, second;
    std::getline(calls, first);
    std::getline(calls, second);
    CHECK(first ==
          "--query-gpu=index,uuid,clocks.sm,clocks.max.sm,clocks_event_reasons.active,power.draw "
          "--format=csv,noheader,nounits -i GPU-a");
    CHECK(second.find("clocks_throttle_reasons.active") != std::string::npos);
  }
  SECTION("a failing nvidia-smi") {
    write_script(dir.path() / "nvidia-smi", "#!/bin/sh\nexit 9\n");
    const auto q = hdb::query_gpus({"index", "uuid"});
    CHECK(q.gpus.empty());
    CHECK(q.error == "nvidia-smi --query-gpu=index,uuid failed (exited with status 9)");
  }
}

namespace {

// `nvidia-smi -q` on two H200s (driver 580), trimmed to the header, the identity and the PCI
// section, with the spacing and the N/A values the driver prints; GPU 1's link has replayed.
constexpr const char* query_two_gpus =
    "\n==============NVSMI LOG==============\n\n"
    "Timestamp                                 : Tue Dec  1 09:51:04 2026\n"
    "Driver Version                            : 580.159.04\n"
    "CUDA Version                              : 13.0\n\n"
    "Attached GPUs                             : 2\n"
    "GPU 00000000:00:06.0\n"
    "    Product Name                          : NVIDIA H200\n"
    "    GPU UUID                              : GPU-d167c442-286d-bb74-4734-b64c274a9ffc\n"
    "    PCI\n"
    "        Bus                               : 0x00\n"
    "        Bus Id                            : 00000000:00:06.0\n"
    "        GPU Link Info\n"
    "            PCIe Generation\n"
    "                Max                       : 5\n"
    "                Current                   : 5\n"
    "            Link Width\n"
    "                Max                       : 16x\n"
    "                Current                   : 16x\n"
    "        Bridge Chip\n"
    "            Type                          : N/A\n"
    "        Replays Since Reset               : 0\n"
    "        Replay Number Rollovers           : 0\n"
    "        Tx Throughput                     : 567 KB/s\n"
    "    Clocks Event Reasons\n"
    "        Idle                              : Active\n"
    "GPU 00000000:00:07.0\r\n"
    "    Product Name                          : NVIDIA H200\r\n"
    "    GPU UUID                              : GPU-99999999-8888-7777-6666-555544443333\r\n"
    "    PCI\r\n"
    "        Replays Since Reset               : 17\r\n"
    "        Replay Number Rollovers           : N/A\r\n";

}  // namespace

TEST_CASE("PCIe replay counters are read per GPU section of nvidia-smi -q", "[host][nvidia_smi]") {
  const auto gpus = hdb::parse_pcie_replays(query_two_gpus);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].uuid == "GPU-d167c442-286d-bb74-4734-b64c274a9ffc");
  CHECK(gpus[0].replays == 0u);
  CHECK(gpus[0].rollovers == 0u);
  CHECK(gpus[1].uuid == "GPU-99999999-8888-7777-6666-555544443333");
  CHECK(gpus[1].replays == 17u);
  CHECK_FALSE(gpus[1].rollovers);  // N/A: unknown, not zero
  // A driver that prints no replay fields: the GPU is known, its counters are not.
  const auto bare = hdb::parse_pcie_replays("GPU 00000000:01:00.0\n    GPU UUID : GPU-a\n    Bus Id : 00000000:01:00.0\n");
  REQUIRE(bare.size() == 1);
  CHECK_FALSE(bare[0].replays);
  CHECK(hdb::parse_pcie_replays("").empty());
  CHECK(hdb::parse_pcie_replays("No devices were found\n").empty());
  // A section without a UUID names no card and is dropped.
  CHECK(hdb::parse_pcie_replays("GPU 00000000:01:00.0\n    Replays Since Reset : 3\n").empty());
}

TEST_CASE("NVLink error counters are read per GPU and link", "[host][nvidia_smi]") {
  using counter = hdb::smi_nvlink_counter;
  SECTION("one line per counter (H100, driver 535+)") {
    const auto gpus = hdb::parse_nvlink_error_counters(
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n"
        "\t Link 0: Replay Errors: 0\n"
        "\t Link 0: Recovery Errors: 0\n"
        "\t Link 0: CRC Errors: 0\n"
        "\n"
        "\t Link 1: Replay Errors: 12\n"
        "\t Link 1: Recovery Errors: N/A\n"
        "\t Link 1: CRC Errors: 3\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
        "\t Link 0: Replay Errors: 0\n");
    REQUIRE(gpus.size() == 2);
    CHECK(gpus[0].uuid == "GPU-abcdefab-cdef-abdc-abcd-abababababab");
    CHECK(gpus[0].index == 0);
    CHECK(gpus[0].counters == std::vector<counter>{{0, "replay_errors", 0},
                                                   {0, "recovery_errors", 0},
                                                   {0, "crc_errors", 0},
                                                   {1, "replay_errors", 12},
                                                   {1, "crc_errors", 3}});
    CHECK(gpus[1].index == 1);
    CHECK(gpus[1].counters == std::vector<counter>{{0, "replay_errors", 0}});
  }
  SECTION("quiet links folded into one line (V100 drivers)") {
    const auto gpus = hdb::parse_nvlink_error_counters(
        "GPU 2: Tesla V100-SXM2-32GB (UUID: GPU-d9eeee97-c180-66de-23e0-d995387934dc)\n"
        "         Link 0: Replay Errors: 148\n"
        "         Links 1-2, 5: Replay/Recovery/CRC Errors: 0\n");
    REQUIRE(gpus.size() == 1);
    CHECK(gpus[0].index == 2);
    REQUIRE(gpus[0].counters.size() == 10);
    CHECK(gpus[0].counters[0] == counter{0, "replay_errors", 148});
    CHECK(gpus[0].counters[1] == counter{1, "replay_errors", 0});
    CHECK(gpus[0].counters[2] == counter{1, "recovery_errors", 0});
    CHECK(gpus[0].counters[3] == counter{1, "crc_errors", 0});
    CHECK(gpus[0].counters[9] == counter{5, "crc_errors", 0});
  }
  SECTION("a GPU without NVLink and text of other shapes") {
    const auto gpus = hdb::parse_nvlink_error_counters("GPU 0: NVIDIA H200 (UUID: GPU-a)\nNVML: not supported\n");
    REQUIRE(gpus.size() == 1);
    CHECK(gpus[0].uuid == "GPU-a");
    CHECK(gpus[0].counters.empty());
    CHECK(hdb::parse_nvlink_error_counters("Link 0: Replay Errors: 4\n").empty());  // no GPU line before it
  }
}

TEST_CASE("Yes/No flags", "[host][nvidia_smi]") {
  CHECK(hdb::smi_yes_no("Yes") == true);
  CHECK(hdb::smi_yes_no("No") == false);
  for (const char* unknown : {"", "[N/A]", "N/A", "[Not Supported]", "yes", "1", "Pending"}) CHECK_FALSE(hdb::smi_yes_no(unknown));
}

TEST_CASE("the bank remap histogram is read per GPU section of nvidia-smi -q, and only inside it", "[host][nvidia_smi]") {
  // Two H200s as -q prints them (trimmed): "Max" also names PCIe and clock levels outside the histogram.
  const auto gpus = hdb::parse_remap_histograms(
      "GPU 00000000:3B:00.0\n"
      "    GPU UUID                              : GPU-a\n"
      "    PCI\n"
      "        GPU Link Info\n"
      "            PCIe Generation\n"
      "                Max                       : 5\n"
      "    Remapped Rows\n"
      "        Correctable Error                 : 0\n"
      "        Pending                           : No\n"
      "        Bank Remap Availability Histogram\n"
      "            Max                           : 2558 bank(s)\n"
      "            High                          : 2 bank(s)\n"
      "            Partial                       : 0 bank(s)\n"
      "            Low                           : 0 bank(s)\n"
      "            None                          : N/A\n"
      "    Temperature\n"
      "        Max                               : 90 C\n"
      "GPU 00000000:5E:00.0\r\n"
      "    GPU UUID                              : GPU-b\r\n"
      "    Max Clocks\r\n"
      "        Graphics                          : 1980 MHz\r\n");
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].uuid == "GPU-a");
  using banks = std::map<std::string, unsigned long long, std::less<>>;
  CHECK(gpus[0].banks == banks{{"max", 2558}, {"high", 2}, {"partial", 0}, {"low", 0}});  // None: N/A, not zero
  CHECK(gpus[1].uuid == "GPU-b");
  CHECK(gpus[1].banks.empty());  // a GPU that does not remap rows
  CHECK(hdb::parse_remap_histograms("").empty());
}

TEST_CASE("query_gpu_fields: one call where the driver knows every field, field by field where it refuses one",
          "[host][nvidia_smi]") {
  hdb_test::temp_dir dir;
  const hdb_test::scoped_env path("PATH", dir.path().string() + ":/usr/bin:/bin");
  const std::vector<std::string> asked = {"uuid", "ecc.mode.current", "fabric.state", "reset_status.reset_required"};
  const auto calls = [&] {
    std::ifstream in(dir.path() / "calls");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  // Answers any query of known fields with one line per GPU, each value named after its field.
  const std::string answer =
      "for f in $(echo \"${1#--query-gpu=}\" | tr ',' ' '); do\n"
      "  case $f in uuid) v=GPU-a ;; ecc.mode.current) v=Enabled ;; fabric.state) v=Completed ;; *) v=No ;; esac\n"
      "  line=\"${line:+$line, }$v\"\n"
      "done\n"
      "echo \"$line\"\n";
  SECTION("a driver that knows them all: one call") {
    write_script(dir.path() / "nvidia-smi", "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls\"\n" + answer);
    const auto q = hdb::query_gpu_fields(asked);
    CHECK(q.error.empty());
    CHECK(q.calls == 1);
    CHECK(q.refused.empty());
    REQUIRE(q.gpus.size() == 1);
    CHECK(q.gpus[0].text("fabric.state") == "Completed");
    CHECK(calls() == std::vector<std::string>{"--query-gpu=uuid,ecc.mode.current,fabric.state,reset_status.reset_required"});
  }
  SECTION("asked again without it: a driver that names the field it refuses (stdout or stderr)") {
    write_script(dir.path() / "nvidia-smi",
                 "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls\"\n"
                 "case $1 in *reset_status*) echo 'Field \"reset_status.reset_required\" is not a valid field to query.'; exit 2 ;; esac\n"
                 "case $1 in *fabric*) echo 'Field \"fabric.state\" is not a valid field to query.' >&2; exit 2 ;; esac\n" +
                     answer);
    const auto q = hdb::query_gpu_fields(asked);
    CHECK(q.error.empty());
    CHECK(q.calls == 3);
    CHECK(q.refused == std::vector<std::string>{"reset_status.reset_required", "fabric.state"});
    REQUIRE(q.gpus.size() == 1);
    CHECK(q.gpus[0].text("ecc.mode.current") == "Enabled");
    CHECK_FALSE(q.gpus[0].fields.contains("fabric.state"));
  }
  SECTION("a refusal that names no field: the key alone, then each field with it") {
    write_script(dir.path() / "nvidia-smi",
                 "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls\"\n"
                 "case $1 in *fabric*) echo 'A field is not a valid field to query.'; exit 2 ;; esac\n" + answer);
    const auto q = hdb::query_gpu_fields(asked);
    CHECK(q.error.empty());
    CHECK(q.refused == std::vector<std::string>{"fabric.state"});
    CHECK(q.calls == 5);  // all, uuid, then the three others with uuid
    REQUIRE(q.gpus.size() == 1);
    CHECK(q.gpus[0].text("uuid") == "GPU-a");
    CHECK(q.gpus[0].text("ecc.mode.current") == "Enabled");
    CHECK(q.gpus[0].text("reset_status.reset_required") == "No");
    CHECK(calls().at(1) == "--query-gpu=uuid");
    CHECK(calls().at(2) == "--query-gpu=uuid,ecc.mode.current");
  }
  SECTION("an nvidia-smi that fails otherwise: its reason, no GPU, no retry") {
    write_script(dir.path() / "nvidia-smi", "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls\"\necho 'NVML: Driver Not Loaded'\nexit 9\n");
    const auto q = hdb::query_gpu_fields(asked);
    CHECK(q.gpus.empty());
    CHECK(q.calls == 1);
    CHECK(q.error == "nvidia-smi --query-gpu=uuid,ecc.mode.current,fabric.state,reset_status.reset_required failed (exited with status 9)");
  }
  SECTION("an answer without a line of the fields asked") {
    write_script(dir.path() / "nvidia-smi", "#!/bin/sh\necho 'No devices were found'\n");
    const auto q = hdb::query_gpu_fields(asked);
    CHECK(q.gpus.empty());
    CHECK(q.error == "nvidia-smi --query-gpu printed no line of 4 fields");
  }
}
