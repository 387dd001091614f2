// The tier rule (hdb/sweep.hpp) on synthetic cases: what a GPU or pair outside the full sweep
// still measures, and that a run without --sweep-* flags measures everything.
#include "catch_compat.hpp"

#include "hdb/sizes.hpp"
#include "hdb/sweep.hpp"

#include <string>
#include <vector>

namespace {

struct test_case {
  std::string kind;
  hdb::label_list labels;
  std::vector<int> devices;
  bool headline = false;
};

std::vector<test_case> copy_like(int gpus) {
  std::vector<test_case> cases;
  for (int d = 0; d < gpus; ++d) {
    for (const char* size : {"1024", "4096", "65536", "262144", "16777216", "67108864", "1073741824"}) {
      const bool big = std::string(size) == "1073741824";
      cases.push_back({"bandwidth", {{"host_kind", "pinned"}, {"size_bytes", size}}, {d}, big});
      cases.push_back({"bandwidth", {{"host_kind", "pageable"}, {"size_bytes", size}}, {d}, false});
      cases.push_back({"bandwidth", {{"host_kind", "managed"}, {"size_bytes", size}}, {d}, false});
    }
  }
  for (int s = 0; s < gpus; ++s) {
    for (int t = 0; t < gpus; ++t) {
      if (s == t) continue;
      for (const char* size : {"4096", "1073741824"}) {
        cases.push_back({"bandwidth", {{"src", std::to_string(s)}, {"dst", std::to_string(t)}, {"size_bytes", size}},
                         {std::min(s, t), std::max(s, t)}, std::string(size) == "1073741824"});
      }
    }
  }
  std::vector<int> all;
  for (int d = 0; d < gpus; ++d) all.push_back(d);
  cases.push_back({"bandwidth_all_gpus", {{"size_bytes", "4096"}}, all, false});
  if (gpus > 1) {
    cases.push_back({"collective", {{"ranks", "2"}, {"size_bytes", "4096"}}, {0, 1}, false});
    cases.push_back({"collective", {{"ranks", "2"}, {"size_bytes", "1073741824"}}, {0, 1}, true});
  }
  return cases;
}

std::vector<bool> keep(const std::vector<test_case>& cases, const hdb::sweep_selection& selection, std::size_t gpus,
                       const std::vector<hdb::check_decl>& checks = {}) {
  std::vector<hdb::case_shape> shapes;
  for (const auto& c : cases) shapes.push_back({&c.kind, &c.labels, &c.devices, c.headline});
  return hdb::cases_in_sweep(shapes, selection, gpus, checks);
}

bool kept(const std::vector<test_case>& cases, const std::vector<bool>& k, const std::string& kind,
          const std::string& host_kind_or_src, const std::string& size, int device) {
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    if (c.kind != kind || c.devices.front() != device) continue;
    bool match = true;
    for (const auto& [key, value] : c.labels) {
      if (key == "size_bytes" && value != size) match = false;
      if ((key == "host_kind" || key == "src") && value != host_kind_or_src) match = false;
    }
    if (match) return k[i];
  }
  FAIL("no such case");
  return false;
}

}  // namespace

TEST_CASE("sweep: without --sweep-* flags every case runs") {
  const auto cases = copy_like(8);
  const auto k = keep(cases, hdb::parse_sweep_selection("all", "all"), 8);
  CHECK(std::count(k.begin(), k.end(), true) == static_cast<long>(cases.size()));
}

TEST_CASE("sweep: a GPU outside the sweep keeps its headline, checked cases and their powers of 64") {
  const auto cases = copy_like(8);
  hdb::check_decl pageable;
  pageable.case_kind = "bandwidth";
  pageable.parameters = {{"host_kind", "pageable"}, {"size_bytes", "1073741824"}};
  pageable.metric = "bandwidth";
  const auto k = keep(cases, hdb::parse_sweep_selection("0", "0>1"), 8, {pageable});
  // GPU 0 (its class's representative): everything.
  for (const char* size : {"1024", "65536", "67108864"}) CHECK(kept(cases, k, "bandwidth", "managed", size, 0));
  // GPU 5: the headline and its short sweep (4 KiB, 256 KiB, 16 MiB are powers of 64; 1 KiB, 64 KiB, 64 MiB are not).
  CHECK(kept(cases, k, "bandwidth", "pinned", "1073741824", 5));
  for (const char* size : {"4096", "262144", "16777216"}) CHECK(kept(cases, k, "bandwidth", "pinned", size, 5));
  for (const char* size : {"1024", "65536", "67108864"}) CHECK_FALSE(kept(cases, k, "bandwidth", "pinned", size, 5));
  // The checked pageable path is a tier point too; managed is neither.
  CHECK(kept(cases, k, "bandwidth", "pageable", "1073741824", 5));
  CHECK(kept(cases, k, "bandwidth", "pageable", "4096", 5));
  CHECK_FALSE(kept(cases, k, "bandwidth", "managed", "1073741824", 5));
  CHECK_FALSE(kept(cases, k, "bandwidth", "managed", "4096", 5));
}

TEST_CASE("sweep: pairs outside the sweep keep their headline sizes only, the whole node and collectives as declared") {
  const auto cases = copy_like(8);
  const auto k = keep(cases, hdb::parse_sweep_selection("0", "0>1"), 8);
  CHECK(kept(cases, k, "bandwidth", "0", "4096", 0));          // 0>1: the representative pair, full
  CHECK_FALSE(kept(cases, k, "bandwidth", "1", "4096", 0));    // 1>0: another ordered pair
  CHECK(kept(cases, k, "bandwidth", "1", "1073741824", 0));    // its headline size stays
  CHECK(kept(cases, k, "bandwidth_all_gpus", "", "4096", 0));  // every GPU at once: always
  // A collective over 2 of 8 ranks is not a pair: its headline only (the full sweep is at n = 8).
  CHECK_FALSE(kept(cases, k, "collective", "", "4096", 0));
  CHECK(kept(cases, k, "collective", "", "1073741824", 0));
}

TEST_CASE("sweep: on one GPU the tiered and the full run are the same") {
  const auto cases = copy_like(1);
  const auto k = keep(cases, hdb::parse_sweep_selection("0", "none"), 1);
  CHECK(std::count(k.begin(), k.end(), true) == static_cast<long>(cases.size()));
}

TEST_CASE("sweep: bad --sweep-devices and --sweep-pairs values name the flag") {
  CHECK_THROWS_WITH(hdb::parse_sweep_selection("0,x", "all"), hdb_test::contains_text("--sweep-devices"));
  CHECK_THROWS_WITH(hdb::parse_sweep_selection("all", "0-1"), hdb_test::contains_text("--sweep-pairs"));
  CHECK_THROWS_WITH(hdb::parse_sweep_selection("", "all"), hdb_test::contains_text("--sweep-devices"));
  CHECK(hdb::parse_sweep_selection("all", "none").pairs->empty());
}

TEST_CASE("sweep: a GPU the run did not select is refused, naming the flag and the run's GPUs") {
  CHECK_THROWS_WITH(hdb::require_selected(hdb::parse_sweep_selection("9", "all"), {0}),
                    "--sweep-devices names GPU 9, which is not one of this run's GPUs (0)");
  CHECK_THROWS_WITH(hdb::require_selected(hdb::parse_sweep_selection("all", "0>3"), {0, 1}),
                    "--sweep-pairs names GPU 3, which is not one of this run's GPUs (0,1)");
  CHECK_NOTHROW(hdb::require_selected(hdb::parse_sweep_selection("1", "0>1"), {0, 1}));
  CHECK_NOTHROW(hdb::require_selected(hdb::parse_sweep_selection("all", "none"), {4}));
}
