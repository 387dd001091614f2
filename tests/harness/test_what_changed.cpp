// What changed: the one rule that holds a run's fingerprint (meta.json) against its baselines' or
// its set's, on fingerprints built here; compare's and check's outputs of it are in test_compare.cpp
// and test_check.cpp.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/what_changed.hpp"
#include "test_support.hpp"

namespace {

using json = nlohmann::json;

// A meta.json of `gpus` H200s as the fingerprint writes one, driver and kernel as given.
json fingerprint(const std::string& driver, const std::string& kernel, int gpus = 1) {
  json list = json::array();
  for (int i = 0; i < gpus; ++i) {
    list.push_back({{"index", i},
                    {"name", "NVIDIA H200"},
                    {"vbios_version", "96.00.A5.00.01"},
                    {"pcie", {{"gen_current", 5.0}, {"gen_max", 5.0}, {"width_current", 16.0}, {"width_max", 16.0}}},
                    {"nvlink", {{"links_active", 18}}},
                    {"clocks", {{"power_limit_w", 700.0}, {"applications_sm_mhz", 1980.0}, {"applications_mem_mhz", 3201.0}}},
                    {"persistence_mode", "Enabled"},
                    {"ecc_mode", "Enabled"},
                    {"mig_mode", "Disabled"}});
  }
  return {{"node", {{"driver_release", driver}, {"driver_version", "13.0"}, {"cuda_runtime", "13.0"},
                    {"nccl_version", "2.28.3"}, {"gpus", list}}},
          {"host", {{"kernel", kernel}, {"os", "Ubuntu 24.04.3 LTS"}, {"cpu", {{"model", "Intel(R) Xeon(R) Processor"}}},
                    {"memory_bytes", 135128870912}}}};
}

std::vector<const json*> pointers(const std::vector<json>& metas) {
  std::vector<const json*> out;
  for (const auto& meta : metas) out.push_back(&meta);
  return out;
}

std::string line_of(const std::vector<json>& baselines, const json& current) {
  return hdb::what_changed_line(hdb::what_changed(pointers(baselines), &current), "baselines");
}

}  // namespace

TEST_CASE("what changed: identical fingerprints say nothing", "[what_changed]") {
  const std::vector<json> baselines(3, fingerprint("580.95.05", "6.8.0-49", 2));
  CHECK(hdb::what_changed(pointers(baselines), &baselines.front()).empty());
  CHECK(line_of(baselines, baselines.front()).empty());
}

TEST_CASE("what changed: a field the baselines agree on and the run does not is named with both values", "[what_changed]") {
  const std::vector<json> baselines(3, fingerprint("580.95.05", "6.8.0-49"));
  const auto current = fingerprint("580.159.04", "6.8.0-49");
  const auto changes = hdb::what_changed(pointers(baselines), &current);
  REQUIRE(changes.size() == 1);
  CHECK(changes.front().field->name == "driver");
  CHECK(changes.front().uniform());
  CHECK(line_of(baselines, fingerprint("580.159.04", "6.8.0-49")) ==
        "what changed: driver 580.95.05 -> 580.159.04 (the 3 baselines agree)");
  SECTION("one baseline: no agreement to speak of") {
    CHECK(line_of({baselines.front()}, fingerprint("580.159.04", "6.8.0-49")) == "what changed: driver 580.95.05 -> 580.159.04");
  }
  SECTION("two fields, in the table's order") {
    CHECK(line_of(baselines, fingerprint("580.159.04", "6.8.0-51")) ==
          "what changed: driver 580.95.05 -> 580.159.04 (the 3 baselines agree); kernel 6.8.0-49 -> 6.8.0-51 (the 3 baselines agree)");
  }
}

TEST_CASE("what changed: baselines that differ among themselves", "[what_changed]") {
  const std::vector<json> baselines = {fingerprint("580.95.05", "6.8.0-49"), fingerprint("580.95.05", "6.8.0-49"),
                                       fingerprint("580.95.05", "6.8.0-51")};
  SECTION("a run that matches one of them did not change that field") {
    const auto current = fingerprint("580.95.05", "6.8.0-51");
    CHECK(hdb::what_changed(pointers(baselines), &current).empty());
    CHECK(line_of(baselines, fingerprint("580.159.04", "6.8.0-51")) ==
          "what changed: driver 580.95.05 -> 580.159.04 (the 3 baselines agree)");
  }
  SECTION("a run that matches none of them: their values, most runs first") {
    const auto current = fingerprint("580.95.05", "6.8.0-52");
    const auto changes = hdb::what_changed(pointers(baselines), &current);
    REQUIRE(changes.size() == 1);
    CHECK_FALSE(changes.front().uniform());
    CHECK(line_of(baselines, fingerprint("580.95.05", "6.8.0-52")) ==
          "what changed: kernel 6.8.0-49 -> 6.8.0-52 (baselines differ: 6.8.0-49 in 2, 6.8.0-51 in 1)");
  }
}

TEST_CASE("what changed: a field one side lacks is not recorded, not a crash", "[what_changed]") {
  const std::vector<json> baselines(2, fingerprint("580.95.05", "6.8.0-49"));
  auto current = fingerprint("580.95.05", "6.8.0-49");
  current["node"]["gpus"][0].erase("vbios_version");
  current["host"].erase("kernel");
  CHECK(line_of(baselines, current) ==
        "what changed: kernel 6.8.0-49 -> not recorded (the 2 baselines agree); "
        "GPU 0 VBIOS 96.00.A5.00.01 -> not recorded (the 2 baselines agree)");
  SECTION("and the other way round: an older baseline without the field") {
    std::vector<json> older = baselines;
    older[1]["node"]["gpus"][0].erase("vbios_version");
    CHECK(line_of(older, fingerprint("580.95.05", "6.8.0-49")).empty());  // the run matches the other baseline
    // Only that older baseline: no baseline recorded it, so nothing is known to have changed.
    CHECK(line_of({older[1]}, fingerprint("580.95.05", "6.8.0-49")).empty());
    CHECK(line_of({older[1]}, fingerprint("580.95.05", "6.8.0-52")) == "what changed: kernel 6.8.0-49 -> 6.8.0-52");
  }
  SECTION("a meta.json of the wrong shape reads as nothing recorded") {
    const json odd = {{"node", "not an object"}, {"host", {{"cpu", 3}}}};
    const auto changes = hdb::what_changed(pointers(baselines), &odd);
    CHECK_FALSE(changes.empty());
    for (const auto& change : changes) CHECK_FALSE(change.current.has_value());
    CHECK(hdb::what_changed({&odd}, &current).empty());  // a baseline that recorded nothing: nothing to compare
  }
}

TEST_CASE("what changed: per-GPU fields compare GPU by GPU, by index, GPUs that changed alike in one entry", "[what_changed]") {
  const std::vector<json> baselines(3, fingerprint("580.95.05", "6.8.0-49", 4));
  auto current = fingerprint("580.95.05", "6.8.0-49", 4);
  current["node"]["gpus"][1]["pcie"]["gen_max"] = 4.0;
  for (int gpu : {0, 1, 2, 3}) current["node"]["gpus"][gpu]["ecc_mode"] = "Disabled";
  CHECK(line_of(baselines, current) ==
        "what changed: GPU 1 PCIe link max Gen5 x16 -> Gen4 x16 (the 3 baselines agree); "
        "GPU 0,1,2,3 ECC Enabled -> Disabled (the 3 baselines agree)");
  SECTION("by index, not by position in the list") {
    auto shuffled = fingerprint("580.95.05", "6.8.0-49", 4);
    std::swap(shuffled["node"]["gpus"][0], shuffled["node"]["gpus"][1]);
    shuffled["node"]["gpus"][0]["pcie"]["gen_max"] = 4.0;  // now the record of GPU 1
    CHECK(line_of(baselines, shuffled) == "what changed: GPU 1 PCIe link max Gen5 x16 -> Gen4 x16 (the 3 baselines agree)");
  }
  SECTION("a GPU the baselines do not have is said once, as the node's GPUs") {
    CHECK(line_of(baselines, fingerprint("580.95.05", "6.8.0-49", 5)) ==
          "what changed: GPUs NVIDIA H200 x4 -> NVIDIA H200 x5 (the 3 baselines agree)");
  }
}

TEST_CASE("what changed: a run without meta.json takes no part", "[what_changed]") {
  const auto baseline = fingerprint("580.95.05", "6.8.0-49");
  const auto current = fingerprint("580.159.04", "6.8.0-49");
  CHECK(hdb::what_changed({nullptr, &baseline}, &current).size() == 1);
  CHECK(hdb::what_changed({nullptr}, &current).empty());
  CHECK(hdb::what_changed({&baseline}, nullptr).empty());
}

TEST_CASE("what changed: host memory to the GiB, clocks and power to the unit", "[what_changed]") {
  const std::vector<json> baselines = {fingerprint("580.95.05", "6.8.0-49")};
  auto current = fingerprint("580.95.05", "6.8.0-49");
  current["host"]["memory_bytes"] = 135129063424;  // 192 KiB more: the kernel's own reservation, not the host's memory
  CHECK(line_of(baselines, current).empty());
  current["host"]["memory_bytes"] = 270334464000;
  current["node"]["gpus"][0]["clocks"]["applications_sm_mhz"] = 1755.0;
  current["node"]["gpus"][0]["clocks"]["power_limit_w"] = 600.0;
  CHECK(line_of(baselines, current) ==
        "what changed: host memory 126 GiB -> 252 GiB; GPU 0 application clocks SM 1980 MHz, memory 3201 MHz -> "
        "SM 1755 MHz, memory 3201 MHz; GPU 0 power limit 700 W -> 600 W");
}

TEST_CASE("what changed: the JSON form", "[what_changed]") {
  const std::vector<json> baselines = {fingerprint("580.95.05", "6.8.0-49"), fingerprint("580.95.05", "6.8.0-51")};
  auto current = fingerprint("580.159.04", "6.8.0-52");
  current["node"]["gpus"][0].erase("vbios_version");
  const auto out = hdb::to_json(hdb::what_changed(pointers(baselines), &current));
  REQUIRE(out.size() == 3);
  CHECK(out[0] == json::parse(R"({"field": "driver", "label": "driver", "gpus": [], "current": "580.159.04",
                                  "baselines": [{"value": "580.95.05", "runs": 2}], "uniform": true})"));
  CHECK(out[1]["field"] == "kernel");
  CHECK(out[1]["uniform"] == false);
  CHECK(out[1]["baselines"].size() == 2);
  CHECK(out[2] == json::parse(R"({"field": "vbios", "label": "VBIOS", "gpus": [0], "current": null,
                                  "baselines": [{"value": "96.00.A5.00.01", "runs": 2}], "uniform": true})"));
}

TEST_CASE("what changed: every field of the table is documented in docs/machine-output.md", "[what_changed][docs]") {
  const auto doc = hdb::read_text_file(std::filesystem::path(HDB_SOURCE_DIR) / "docs" / "machine-output.md");
  std::set<std::string_view> names;
  for (const auto& f : hdb::fingerprint_fields()) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);  // one name, one field
    CHECK(hdb_test::contains(doc, "`" + std::string(f.name) + "`"));
  }
}
