// The one nvidia-smi runner (hdb/host/nvidia_smi.hpp): --query-gpu CSV per GPU with the values
// real drivers print ([N/A], [Not Supported], CRLF), the retry under the pre-535 name of the
// reason mask (a fake nvidia-smi on PATH), and the clock event reason table.
#include "catch_compat.hpp"
#include "hdb/host/nvidia_smi.hpp"
#include "test_helpers.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

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
