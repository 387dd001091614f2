// The tiered default's choice (hdb/harness/tiers.hpp) on 1-, 2- and 8-GPU fingerprints, and the
// plan's arithmetic (hdb/harness/plan.hpp) on synthetic reference-set members.
#include "catch_compat.hpp"

#include "hdb/harness/run/plan.hpp"
#include "hdb/harness/run/tiers.hpp"

#include <fstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

json gpu(int index, int gen = 5, int nvlinks = 18, const char* cpus = "0-55") {
  return {{"index", index},
          {"name", "NVIDIA H200"},
          {"pcie", {{"gen_max", gen}, {"width_max", 16}}},
          {"nvlink", {{"links_active", nvlinks}}},
          {"cpu_affinity", cpus}};
}

// An HGX H200: 8 GPUs, 4 per socket (56 CPUs each), every pair NV18 through the NVSwitches.
json hgx(int slow_gen_gpu = -1) {
  json node{{"gpus", json::array()}, {"topology", {{"gpus", json::array()}, {"pairs", json::array()}}}};
  for (int g = 0; g < 8; ++g) node["gpus"].push_back(gpu(g, g == slow_gen_gpu ? 4 : 5, 18, g < 4 ? "0-55" : "56-111"));
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      node["topology"]["pairs"].push_back(
          {{"src", s}, {"dst", d}, {"can_access_peer", true}, {"link", {{"type", "nvlink"}, {"links", 18}, {"via", "nvswitch"}}}});
    }
  }
  return node;
}

json meta_of(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

}  // namespace

TEST_CASE("tiers: one GPU is its own class and gets no sweep flags") {
  const auto node = meta_of(std::string(HDB_SOURCE_DIR) + "/results/reference/h200/meta.json")["node"];
  const auto tiers = hdb::tiers_of(node);
  REQUIRE(tiers.classes.size() == 1);
  CHECK(tiers.classes[0].gpus == std::vector<int>{0});
  CHECK(tiers.classes[0].key == "NVIDIA H200 · PCIe Gen5 x16 · NVLinks 0 · 16 local CPUs");
  CHECK(tiers.pair_classes.empty());
  CHECK(hdb::sweep_flags(tiers).empty());  // a one-GPU run is the same tiered or --full
}

TEST_CASE("tiers: two NVLink-joined H200s: one class, one pair class, the sweep on GPU 0 and 0>1") {
  const auto node = meta_of(std::string(HDB_SOURCE_DIR) + "/results/reference/h200-x2/meta.json")["node"];
  const auto tiers = hdb::tiers_of(node);
  REQUIRE(tiers.classes.size() == 1);
  CHECK(tiers.classes[0].gpus == std::vector<int>{0, 1});
  REQUIRE(tiers.pair_classes.size() == 1);
  CHECK(tiers.pair_classes[0].pairs.size() == 2);
  CHECK(hdb::sweep_flags(tiers) == std::vector<std::string>{"--sweep-devices=0", "--sweep-pairs=0>1"});
}

TEST_CASE("tiers: an 8-GPU HGX is one class across both sockets, a GPU trained at Gen4 is a class of its own") {
  auto tiers = hdb::tiers_of(hgx());
  REQUIRE(tiers.classes.size() == 1);
  CHECK(tiers.classes[0].gpus.size() == 8);
  REQUIRE(tiers.pair_classes.size() == 1);
  CHECK(tiers.pair_classes[0].pairs.size() == 56);
  CHECK(hdb::sweep_flags(tiers) == std::vector<std::string>{"--sweep-devices=0", "--sweep-pairs=0>1"});

  tiers = hdb::tiers_of(hgx(/*slow_gen_gpu=*/3));
  REQUIRE(tiers.classes.size() == 2);
  CHECK(tiers.classes[1].gpus == std::vector<int>{3});
  CHECK(tiers.classes[1].key.find("PCIe Gen4 x16") != std::string::npos);
  // Pairs to and from GPU 3 are their own link classes (its class differs), each with its representative.
  CHECK(tiers.pair_classes.size() == 3);
  CHECK(hdb::sweep_flags(tiers) == std::vector<std::string>{"--sweep-devices=0,3", "--sweep-pairs=0>1,0>3,3>0"});
  const auto j = hdb::to_json(tiers, /*full=*/false);
  CHECK(j["mode"] == "tiered");
  CHECK(j["sweep_devices"] == json::array({0, 3}));
  CHECK(hdb::to_json(tiers, /*full=*/true)["sweep_devices"].size() == 8);
}

TEST_CASE("tiers: an assumed node copies GPU 0 and joins every ordered pair as told") {
  const auto node = meta_of(std::string(HDB_SOURCE_DIR) + "/results/reference/h200/meta.json")["node"];
  const auto assumed = hdb::assumed_node(node, 8, {{"type", "nvlink"}, {"links", 18}, {"via", "nvswitch"}});
  const auto tiers = hdb::tiers_of(assumed);
  CHECK(tiers.gpus.size() == 8);
  CHECK(tiers.classes.size() == 1);
  REQUIRE(tiers.pair_classes.size() == 1);
  CHECK(tiers.pair_classes[0].pairs.size() == 56);
  CHECK(tiers.pair_classes[0].key.find("NVLink x18 via nvswitch · peer access") != std::string::npos);
  CHECK(tiers.classes[0].key == "NVIDIA H200 · PCIe Gen5 x16 · NVLinks 18 · 16 local CPUs");
}

TEST_CASE("plan: a case is priced by the same case on any GPU, the others by the family's mean, plus its overhead") {
  CHECK(hdb::case_cost_key("p2p/bandwidth/ce_peer/uni/src:2/dst:5/size:4096/gpu:2,5") == "p2p/bandwidth/ce_peer/uni/src:*/dst:*/size:4096");
  CHECK(hdb::case_cost_key("copy/latency/d2h/size:1/gpu:3") == "copy/latency/d2h/size:1");
  const auto costs_file = hdb::read_case_costs(
      "{\"case\": \"copy/a/gpu:0\", \"wall_s\": 1.5}\n{\"case\": \"copy/a/gpu:0\", \"wall_s\": 0.5}\n"
      "{\"case\": \"copy/b/gpu:0\", \"wall_s\": 4}\n{\"case\": \"copy/c/g");  // a killed binary's half line
  CHECK(costs_file.size() == 2);
  CHECK(costs_file.at("copy/a/gpu:0") == hdb_test::Approx(2.0));

  const auto member = [](double a, double b, double elapsed) {
    return json{{"families",
                 {{"copy", {{"status", "ok"}, {"elapsed_s", elapsed}, {"cases", 2},
                            {"case_costs", {{"copy/a/gpu:0", a}, {"copy/b/gpu:0", b}}}}}}}};
  };
  // Three members: case a costs 2, 2.2, 1.8 (median 2), b 4, 4, 6 (median 4); overhead 1 each.
  const auto model = hdb::learn_costs({member(2, 4, 7), member(2.2, 4, 7.2), member(1.8, 6, 8.8)});
  const hdb::cost_source set{"h200 (3 runs)", model};
  const auto plan = hdb::plan_family("copy", {"copy/a/gpu:0", "copy/a/gpu:7", "copy/b/gpu:7", "copy/new/gpu:7"}, set, {}, {});
  CHECK(plan.cases == 4);
  CHECK(plan.cases_costed == 3);
  // 2 + 2 + 4, the unknown case at the mean of the known ones (3), overhead 1.
  CHECK(plan.seconds == hdb_test::Approx(2 + 2 + 4 + 3 + 1));
  CHECK(plan.basis == "h200 (3 runs): 3 of 4 cases priced by the same case");

  // Members without case costs: their time per case; no set at all: the documented default.
  const auto old_model = hdb::learn_costs({json{{"families", {{"copy", {{"status", "ok"}, {"elapsed_s", 60.0}, {"cases", 300}}}}}}});
  CHECK(hdb::plan_family("copy", std::vector<std::string>(600, "copy/x/gpu:1"), {"h200 (1 run)", old_model}, {}, {}).seconds ==
        hdb_test::Approx(120));
  const hdb::plan_defaults defaults;
  CHECK(hdb::plan_family("copy", std::vector<std::string>(10, "copy/x"), {}, {}, defaults).seconds ==
        hdb_test::Approx(defaults.overhead_s + 10 * defaults.case_s));
}

TEST_CASE("plan: a case's price is one GPU's, whatever number of GPUs its set member ran it on") {
  // An 8-GPU member ran the same case on each GPU, 2 s each: one case costs 2 s, not 16.
  json costs = json::object();
  for (int gpu = 0; gpu < 8; ++gpu) costs["copy/a/gpu:" + std::to_string(gpu)] = 2.0;
  const auto model = hdb::learn_costs({json{{"families",
      {{"copy", {{"status", "ok"}, {"elapsed_s", 17.0}, {"cases", 8}, {"case_costs", costs}}}}}}});
  const auto plan = hdb::plan_family("copy", {"copy/a/gpu:0", "copy/a/gpu:5"}, {"h200-x8 (1 run)", model}, {}, {});
  CHECK(plan.cases_costed == 2);
  CHECK(plan.prices.at("copy/a/gpu:5") == hdb_test::Approx(2));
  CHECK(plan.seconds == hdb_test::Approx(2 + 2 + 1));  // and the member's overhead, 17 - 16
}

TEST_CASE("plan: cases a one-GPU set never ran are priced by the wider reference of the same GPU") {
  // The one-GPU set: a loopback case at 1 s, overhead 1. The two-GPU run: no case costs, 10 s
  // over 4 cases (2.5 s each), and a pair case it did record at 3 s in the second model.
  const auto one_gpu = hdb::learn_costs({json{{"families",
      {{"p2p", {{"status", "ok"}, {"elapsed_s", 2.0}, {"cases", 1}, {"case_costs", {{"p2p/bw/src:0/dst:0/gpu:0", 1.0}}}}}}}}});
  const auto two_gpu = hdb::learn_costs({json{{"families", {{"p2p", {{"status", "ok"}, {"elapsed_s", 10.0}, {"cases", 4}}}}}}});
  const std::vector<std::string> cases{"p2p/bw/src:3/dst:3/gpu:3", "p2p/bw/src:3/dst:5/gpu:3,5", "p2p/bidir/src:3/dst:5/gpu:3,5"};
  const auto plan = hdb::plan_family("p2p", cases, {"h200 (8 runs)", one_gpu}, {"h200-x2 (1 run)", two_gpu}, {});
  // The loopback by its own case (1 s; the pair case shares its key); the bidirectional one at
  // the wider mean (2.5 s); the set's overhead (1 s).
  CHECK(plan.cases_costed == 2);
  CHECK(plan.cases_wider == 1);
  CHECK(plan.seconds == hdb_test::Approx(1 + 1 + 2.5 + 1));
  CHECK(plan.basis == "h200 (8 runs): 2 of 3 cases priced by the same case, 1 at h200-x2 (1 run)'s mean case");

  // A case the wider reference recorded is priced by it.
  const auto two_gpu_costed = hdb::learn_costs({json{{"families",
      {{"p2p", {{"status", "ok"}, {"elapsed_s", 4.0}, {"cases", 1}, {"case_costs", {{"p2p/bidir/src:0/dst:1/gpu:0,1", 3.0}}}}}}}}});
  const auto priced = hdb::plan_family("p2p", cases, {"h200 (8 runs)", one_gpu}, {"h200-x2 (1 run)", two_gpu_costed}, {});
  CHECK(priced.cases_costed == 3);
  CHECK(priced.seconds == hdb_test::Approx(1 + 1 + 3 + 1));

  // Without a wider reference the unknown case costs the set's own mean case.
  CHECK(hdb::plan_family("p2p", cases, {"h200 (8 runs)", one_gpu}, {}, {}).seconds == hdb_test::Approx(1 + 1 + 1 + 1));
}

TEST_CASE("plan: a listed name and a --case-costs name are one case") {
  CHECK(hdb::case_cost_key("copy/latency/d2h/size:1/gpu:3/iterations:1/repeats:10/manual_time") == "copy/latency/d2h/size:1");
  CHECK(hdb::case_cost_key("sync/launch/empty_kernel/gpu:0/iterations:1/manual_time") == "sync/launch/empty_kernel");
  // A parameter of the case itself stays.
  CHECK(hdb::case_cost_key("copy/host_memcpy/threads:8/size:1024/gpu:0") == "copy/host_memcpy/threads:8/size:1024");
}

TEST_CASE("plan: the progress line's remaining time is the prices of the cases not run, else the run's own pace") {
  // As a copy run begins: its first case (the largest size) costs ten times each of the others.
  const auto member = json{{"families", {{"copy", {{"status", "ok"}, {"elapsed_s", 13.0}, {"cases", 3},
                                                   {"case_costs", {{"copy/big/gpu:0", 10.0}, {"copy/small/gpu:0", 1.0},
                                                                   {"copy/tiny/gpu:0", 1.0}}}}}}}};
  const hdb::cost_source set{"h200 (1 run)", hdb::learn_costs({member})};
  // Named as the binary lists them on a node, with Google Benchmark's suffix.
  const std::string big = "copy/big/gpu:0/iterations:1/repeats:10/manual_time";
  const std::string small = "copy/small/gpu:0/iterations:1/repeats:5/manual_time";
  const std::string tiny = "copy/tiny/gpu:0/iterations:1/repeats:5/manual_time";
  const std::string unknown = "copy/unknown/gpu:0/iterations:1/repeats:5/manual_time";
  const auto plan = hdb::plan_family("copy", {big, small, tiny, unknown}, set, {}, {});
  CHECK(plan.cases_costed == 3);
  REQUIRE(plan.prices.size() == 4);
  CHECK(plan.prices.at(unknown) == hdb_test::Approx(4.0));  // the set's mean case, (10 + 1 + 1) / 3

  CHECK_FALSE(hdb::remaining_seconds(plan, {}, 3.0));  // nothing finished: no line
  // After the big case in 10 s: 1 + 1 + 4 are left, where 10 s a case would say 30.
  CHECK(*hdb::remaining_seconds(plan, {big}, 10.0) == hdb_test::Approx(6.0));
  CHECK(*hdb::remaining_seconds(plan, {big, small}, 11.0) == hdb_test::Approx(5.0));
  CHECK(*hdb::remaining_seconds(plan, {big, small, tiny, unknown}, 17.0) == hdb_test::Approx(0.0));
  // A finished name the plan did not list costs nothing left.
  CHECK(*hdb::remaining_seconds(plan, {big, "copy/other"}, 10.0) == hdb_test::Approx(6.0));

  // The boundary: a set whose members recorded no case costs prices no case, nor does the
  // documented default; then the run's own pace, elapsed / finished x cases left.
  const auto no_costs = json{{"families", {{"copy", {{"status", "ok"}, {"elapsed_s", 13.0}, {"cases", 3}}}}}};
  const auto by_mean = hdb::plan_family("copy", {big, small, tiny, unknown}, {"h200 (1 run)", hdb::learn_costs({no_costs})}, {}, {});
  const auto by_default = hdb::plan_family("copy", {big, small, tiny, unknown}, {}, {}, {});
  for (const auto* fallback : {&by_mean, &by_default}) {
    CHECK(fallback->prices.empty());
    CHECK(*hdb::remaining_seconds(*fallback, {big}, 10.0) == hdb_test::Approx(30.0));
    CHECK(*hdb::remaining_seconds(*fallback, {big, small}, 11.0) == hdb_test::Approx(11.0));
    CHECK_FALSE(hdb::remaining_seconds(*fallback, {big, small, tiny, unknown, "copy/other"}, 20.0));
  }
}
