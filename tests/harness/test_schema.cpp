// Declarations (schema.json): what parse_declaration refuses, the CSV's parameter columns across
// families, and % of peak from traffic classes composed over the node's links in meta.json.
#include "catch_compat.hpp"
#include "hdb/harness/data/installed_declarations.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/data/traffic.hpp"
#include "test_support.hpp"

using hdb_test::Approx;

namespace {

// A valid declaration of family `name` with `extra` members spliced into its metrics.
std::string declaration(const std::string& name, const std::string& metrics, const std::string& more = "") {
  return R"({"family": ")" + name + R"(", "parameters": {"size_bytes": {"type": "int"}}, "metrics": {)" + metrics +
         R"(}, "cases": {"c": {"parameters": ["size_bytes"], "metrics": ["m"]}})" + more + "}";
}

const std::string good_metric = R"("m": {"unit": "GB/s", "better": "higher"})";

// Two H200s: Gen5 x16 (63.0 GB/s), HBM 4800 GB/s, 18 NVLinks reported at 26.5625 GB/s (25 of data);
// GPU 1 reads its reported rate from the topology only (a meta.json written before
// node.gpus[i].nvlink.per_link_GBps existed).
nlohmann::json two_gpu_meta() {
  const auto gpu = [](int index, bool own_rate) {
    nlohmann::json nvlink = {{"links_active", 18}};
    if (own_rate) nvlink["per_link_GBps"] = 26.5625;
    return nlohmann::json{{"index", index}, {"uuid", "GPU-" + std::to_string(index)}, {"hbm_peak_GBps", 4800.0},
                          {"compute_capability", "9.0"},
                          {"pcie", {{"gen_max", 5}, {"width_max", 16}}}, {"nvlink", nvlink}};
  };
  const auto pair = [](int src, int dst) {
    return nlohmann::json{{"src", src}, {"dst", dst}, {"link", {{"type", "nvlink"}, {"links", 18}}}};
  };
  return {{"node",
           {{"gpus", {gpu(0, true), gpu(1, false)}},
            {"topology",
             {{"gpus", {{{"index", 1}, {"nvlink", {{"links_active", 18}, {"per_link_GBps", 26.5625}}}}}},
              {"pairs", {pair(0, 1), pair(1, 0)}}}}}}};
}

hdb::result_row row_on(const std::string& uuids, const std::string& traffic) {
  hdb::result_row row;
  row.family = "f";
  row.gpu_uuid = uuids;
  row.traffic = traffic;
  return row;
}

}  // namespace

TEST_CASE("a declaration is refused with one line naming the problem", "[declaration]") {
  CHECK(hdb::parse_declaration(std::string_view(declaration("f", good_metric))).metrics.size() == 1);
  const auto [text, why] = GENERATE(table<std::string, std::string>({
      {declaration("f", R"("m": {"unit": "GiB/s", "better": "higher"})"),
       "f: metric 'm': unit 'GiB/s' is not one of GB/s, us, us/MiB, B, %, ratio, count"},
      {declaration("f", R"("m": {"unit": "us", "better": "faster"})"), "f: metric 'm': better 'faster' (higher, lower or neutral)"},
      {declaration("f", good_metric + R"(, "cpu_time": {"unit": "us", "better": "lower"})"),
       "f: metric 'cpu_time': is a key Google Benchmark writes itself"},
      {declaration("f", R"("m": {"unit": "GB/s", "better": "higher", "traffic": ["warp_drive"]})"),
       "f: metric 'm': traffic class 'warp_drive' is not known"},
      {declaration("f", good_metric, R"(, "traffic_classes": {"hbm_read_write": {"link": "hbm", "basis": "b"}})"),
       "f: traffic class 'hbm_read_write': reuses a built-in class name"},
      {declaration("f", good_metric, R"(, "fit_metric": "t")"), "f: fit_metric: 't' is not a declared metric"},
      {R"({"family": "f", "parameters": {"device": {"type": "int"}}, "metrics": {}, "cases": {}})",
       "f: parameter 'device': is a core column of results.csv, never a parameter"},
      {R"({"family": "f", "parameters": {"k": {"type": "text", "values": ["1"]}}, "metrics": {}, "cases": {}})",
       "f: parameter 'k': text value '1' is all digits"},
      {R"({"family": "f", "metrics": {}, "cases": {"c": {"metrics": ["m"]}}})", "f: case 'c': metric 'm' is not declared"},
      {R"({"family": "f", "metrics": {"m": {"unit": "us", "better": "lower"}}, "cases": {"c": {"metrics": ["m"], "headlines": ["n"]}}})",
       "f: case 'c': headline 'n' is not one of its metrics"},
  }));
  CHECK_THROWS_WITH(hdb::parse_declaration(std::string_view(text)), why);
}

TEST_CASE("parameter columns: manifest order, first appearance wins, one type per name", "[declaration]") {
  const auto a = hdb::parse_declaration(std::string_view(
      R"({"family": "a", "parameters": {"size_bytes": {"type": "int"}, "api": {"type": "text"}}, "metrics": {}, "cases": {}})"));
  const auto b = hdb::parse_declaration(std::string_view(
      R"({"family": "b", "parameters": {"ranks": {"type": "int"}, "api": {"type": "text"}}, "metrics": {}, "cases": {}})"));
  const auto c = hdb::parse_declaration(std::string_view(
      R"({"family": "c", "parameters": {"api": {"type": "int"}}, "metrics": {}, "cases": {}})"));
  CHECK(hdb::parameter_columns({&a, &b}) == std::vector<std::string>{"size_bytes", "api", "ranks"});
  CHECK(hdb::parameter_columns({&b, &a}) == std::vector<std::string>{"ranks", "api", "size_bytes"});
  CHECK_THROWS_WITH(hdb::parameter_columns({&a, &c}), "parameter 'api' is text in family a but int in family c");
}

TEST_CASE("% of peak from a row's traffic class and the node's links", "[traffic]") {
  const auto meta = two_gpu_meta();
  const auto peak = [&](const hdb::result_row& row) { return hdb::row_peak(row, meta); };
  SECTION("the row's GPUs are its UUIDs on this node") {
    CHECK(hdb::row_devices(row_on("GPU-1,GPU-0", ""), meta) == std::vector<int>{1, 0});
    CHECK(hdb::row_devices(row_on("GPU-9", ""), meta).empty());
    auto one = row_on("", "");
    one.device = 1;
    CHECK(hdb::row_devices(one, meta) == std::vector<int>{1});
  }
  SECTION("PCIe: one GPU, the sum of several, the slowest, both directions") {
    REQUIRE(peak(row_on("GPU-0", "pcie_per_direction")));
    CHECK(peak(row_on("GPU-0", "pcie_per_direction"))->value == Approx(63.0).epsilon(1e-3));
    CHECK(peak(row_on("GPU-0,GPU-1", "pcie_per_direction"))->value == Approx(126.0).epsilon(1e-3));
    CHECK(peak(row_on("GPU-0,GPU-1", "pcie_per_direction_per_gpu"))->value == Approx(63.0).epsilon(1e-3));
    CHECK(peak(row_on("GPU-0", "pcie_both_directions"))->value == Approx(126.0).epsilon(1e-3));
    CHECK(peak(row_on("GPU-1", "pcie_per_direction"))->basis == "PCIe per direction, GPU 1");
  }
  SECTION("HBM counts every byte twice") {
    const auto hbm = peak(row_on("GPU-0", "hbm_read_write"));
    REQUIRE(hbm);
    CHECK(hbm->value == 4800);
    CHECK(hbm->traffic_factor == 2);
    CHECK(hdb::percent_of_peak(2400, *hbm) == Approx(100));
  }
  SECTION("NVLink: a pair's links, each GPU's links, the data rate of the reported per-link rate") {
    auto pair = row_on("GPU-0,GPU-1", "nvlink_per_direction");
    pair.params = {{"src", "1"}, {"dst", "0"}};
    REQUIRE(peak(pair));
    CHECK(peak(pair)->value == Approx(450));  // NVIDIA's 900 GB/s both ways
    CHECK(peak(pair)->basis == "NVLink per direction (18 x 25 GB/s), GPU 1->0");
    pair.traffic = "nvlink_both_directions";
    CHECK(peak(pair)->value == Approx(900));
    CHECK(peak(row_on("GPU-0,GPU-1", "nvlink_bus"))->value == Approx(450));
    auto slow = meta;
    slow["node"]["gpus"][0]["nvlink"]["per_link_GBps"] = 26.5625 / 2;  // a link reporting half its rate
    CHECK(hdb::row_peak(row_on("GPU-0,GPU-1", "nvlink_bus"), slow)->value == Approx(18 * 12.5));
    auto unknown = meta;
    unknown["node"]["gpus"][0]["compute_capability"] = "12.0";  // a generation the table does not know
    CHECK_FALSE(hdb::row_peak(row_on("GPU-0,GPU-1", "nvlink_bus"), unknown));
  }
  SECTION("no peak without a traffic class, a known class or the link's rate") {
    CHECK_FALSE(peak(row_on("GPU-0", "")));
    CHECK_FALSE(peak(row_on("GPU-0", "warp_drive")));
    auto bare = meta;
    bare["node"]["gpus"][0].erase("pcie");
    CHECK_FALSE(hdb::row_peak(row_on("GPU-0,GPU-1", "pcie_per_direction"), bare));
  }
  SECTION("a family's own class, read from its declaration in meta.json") {
    auto with_family = meta;
    with_family["families"]["f"]["schema"] = nlohmann::json::parse(declaration(
        "f", good_metric,
        R"(, "traffic_classes": {"standin_link": {"link": "pcie", "combine": "min", "directions": 2, "traffic_factor": 2, "basis": "slowest link"}})"));
    const auto own = hdb::row_peak(row_on("GPU-0,GPU-1", "standin_link"), with_family);
    REQUIRE(own);
    CHECK(own->value == Approx(126.0).epsilon(1e-3));
    CHECK(own->traffic_factor == 2);
    CHECK(own->basis == "slowest link, GPUs 0,1");
  }
}
