// Every copy path of the copy family delivers the right bytes at awkward sizes. The fixture's
// constructor copies once through the path and verifies the destination against the pattern,
// throwing on any wrong byte — the same check the benchmark runs before timing.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "copy.hpp"

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
    // Repeated copies (as timed) keep the destination right, queued or not.
    for (int i = 0; i < 3; ++i) fixture.issue();
    fixture.synchronize();
    CHECK(fixture.transfer_count() == (path.dir == hdb::copy::direction::bidir ? 2u : 1u));
  }
}

TEST_CASE("queueable paths are exactly those that do not block the host", "[gpu][copy]") {
  const auto& env = hdb_test::gpu_env();
  using hdb::copy::copy_api;
  for (const auto& path : hdb::copy::bandwidth_paths()) {
    INFO(describe(path, 4096));
    const hdb::copy::copy_fixture fixture(path, 4096, {&env.devices.front()});
    const bool blocks = path.api == copy_api::sync ||
                        (path.host == hdb::host_kind::pageable && path.dir != hdb::copy::direction::d2d);
    CHECK(fixture.queueable() == !blocks);
  }
}
