// Every single-GPU bandwidth and latency path of the copy family delivers the right bytes at
// awkward sizes: the fixture's constructor copies once through the path and verifies the
// destination against the pattern, throwing on any wrong byte (the check the benchmark runs
// before timing). And which paths may be queued behind the spin gate, as an explicit table.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "copy.hpp"

#include <map>
#include <set>
#include <string>

namespace {
std::string describe(const hdb::copy::copy_path& p, std::size_t bytes) {
  return std::string(hdb::copy::to_string(p.dir)) + "/" + std::string(hdb::to_string(p.host)) + "/" +
         std::string(hdb::copy::to_string(p.api)) + " " + std::to_string(bytes) + " B";
}
}  // namespace

TEST_CASE("every bandwidth and latency path copies the right bytes", "[gpu][copy]") {
  const auto& env = hdb_test::gpu_env();
  const std::size_t bytes = GENERATE(1, 4097, (64u << 20) + 3);
  auto paths = hdb::copy::bandwidth_paths();
  const auto latency = hdb::copy::latency_paths();
  paths.insert(paths.end(), latency.begin(), latency.end());
  for (const auto& path : paths) {
    INFO(describe(path, bytes));
    const hdb::copy::copy_fixture fixture(path, bytes, {&env.devices.front()});  // throws on a wrong byte
    // Repeated copies, issued as the timed loop issues them, complete; bidir is one transfer per direction.
    for (int i = 0; i < 3; ++i) fixture.issue();
    fixture.synchronize();
    CHECK(fixture.transfer_count() == (path.dir == hdb::copy::direction::bidir ? 2u : 1u));
  }
}

// Which paths may wait behind the spin gate: the expected truth, written out, not recomputed from
// the implementation's predicate. A blocking call (cudaMemcpy) or a pageable host copy (the driver
// stages it through a bounce buffer on the host thread) cannot be queued; a path added to the
// family must be added here with its answer.
TEST_CASE("queueable paths are exactly those that do not block the host", "[gpu][copy]") {
  const std::map<std::string, bool> expected = {
      {"h2d/pageable/async", false},       {"h2d/pageable/sync", false},
      {"h2d/pinned/async", true},          {"h2d/pinned/sync", false},
      {"h2d/write_combined/async", true},  {"h2d/write_combined/sync", false},
      {"h2d/registered/async", true},      {"h2d/registered/sync", false},
      {"h2d/mapped/kernel", true},
      {"d2h/pageable/async", false},       {"d2h/pageable/sync", false},
      {"d2h/pinned/async", true},          {"d2h/pinned/sync", false},
      {"d2h/write_combined/async", true},  {"d2h/write_combined/sync", false},
      {"d2h/registered/async", true},      {"d2h/registered/sync", false},
      {"d2h/mapped/kernel", true},
      {"bidir/pinned/async", true},        {"bidir/write_combined/async", true},
      {"bidir/registered/async", true},
      {"d2d/pinned/async", true},          {"d2d/pinned/kernel", true},
  };
  const auto& env = hdb_test::gpu_env();
  auto paths = hdb::copy::bandwidth_paths();
  const auto latency = hdb::copy::latency_paths();
  paths.insert(paths.end(), latency.begin(), latency.end());
  std::set<std::string> seen;
  for (const auto& path : paths) {
    const std::string key = std::string(hdb::copy::to_string(path.dir)) + "/" + std::string(hdb::to_string(path.host)) + "/" +
                            std::string(hdb::copy::to_string(path.api));
    INFO(key);
    seen.insert(key);
    const auto truth = expected.find(key);
    REQUIRE(truth != expected.end());  // a new path needs its row above
    const hdb::copy::copy_fixture fixture(path, 4096, {&env.devices.front()});
    CHECK(fixture.queueable() == truth->second);
  }
  CHECK(seen.size() == expected.size());  // no row above for a path the family no longer has
}
