#include "catch_compat.hpp"

#include "hdb/family.hpp"
#include "hdb/measure.hpp"
#include "hdb/util/stopping.hpp"

#include <stdexcept>
#include <string>

namespace {
hdb::family_env two_gpus() {
  hdb::family_env env;
  env.devices.push_back({0, "GPU-aaaa", "H200", "0000:01:00.0", 132, 1, 2});
  env.devices.push_back({1, "GPU-bbbb", "H200", "0000:02:00.0", 132, 1, 2});
  return env;
}
}  // namespace

TEST_CASE("labels carry parameters, devices and headline metrics in the contract's format", "[family]") {
  const auto env = two_gpus();
  auto spec = hdb::make_case("copy", "bandwidth", {{"direction", "h2d"}, {"size_bytes", "4096"}}, {1});
  CHECK(hdb::format_label(spec, env) == "case=bandwidth;direction=h2d;size_bytes=4096;device=1;gpu_uuid=GPU-bbbb");
  spec.headline_metrics = {"latency", "host_latency"};
  CHECK(hdb::format_label(spec, env) ==
        "case=bandwidth;direction=h2d;size_bytes=4096;device=1;gpu_uuid=GPU-bbbb;headline=latency,host_latency");
  spec.traffic = {{"bandwidth_h2d", "pcie_per_direction"}, {"bandwidth", "pcie_both_directions"}};
  CHECK(hdb::format_label(spec, env) ==
        "case=bandwidth;direction=h2d;size_bytes=4096;device=1;gpu_uuid=GPU-bbbb;headline=latency,host_latency;"
        "traffic=bandwidth:pcie_both_directions,bandwidth_h2d:pcie_per_direction");
  const auto pair = hdb::make_case("p2p", "copy", {{"src", "0"}, {"dst", "1"}}, {0, 1});
  CHECK(hdb::format_label(pair, env) == "case=copy;src=0;dst=1;device=0,1;gpu_uuid=GPU-aaaa,GPU-bbbb");
  const auto unselected = hdb::make_case("copy", "bandwidth", {}, {3});
  CHECK_THROWS_AS(hdb::format_label(unselected, env), std::out_of_range);
}

TEST_CASE("a case's name and labels come from the same fields", "[family]") {
  const auto spec = hdb::make_case("copy", "bandwidth",
                                   {{"direction", "h2d"}, {"host_kind", "pinned"}, {"size_bytes", "1024"}, {"streams", "2"}},
                                   {0, 1});
  CHECK(spec.name == "copy/bandwidth/h2d/pinned/size:1024/streams:2/gpu:0,1");
  CHECK(spec.kind == "bandwidth");
  CHECK(spec.labels.size() == 4);
  CHECK(spec.devices == std::vector<int>{0, 1});
  CHECK(hdb::make_case("sync", "launch", {}, {}).name == "sync/launch");
}

TEST_CASE("batch sizing: ~64 MiB per batch, at most 100 operations, ~256 MiB per repetition", "[family]") {
  CHECK(hdb::ops_per_batch(1) == 100);
  CHECK(hdb::ops_per_batch(0) == 100);
  CHECK(hdb::ops_per_batch(std::size_t{1} << 20) == 64);
  CHECK(hdb::ops_per_batch(std::size_t{1} << 30) == 1);
  CHECK(hdb::batches_per_repetition(std::size_t{1} << 20) == 4);
  CHECK(hdb::batches_per_repetition(1) == 8);
  CHECK(hdb::batches_per_repetition(std::size_t{1} << 30) == 1);
}

TEST_CASE("the memory check leaves 10 % headroom and names the GPU", "[family]") {
  const hdb::device_info gpu{3, "GPU-x", "H200", "", 132, std::size_t{100} << 20, std::size_t{200} << 20};
  CHECK_NOTHROW(hdb::require_device_memory(std::size_t{90} << 20, gpu));
  try {
    hdb::require_device_memory(std::size_t{91} << 20, gpu);
    FAIL("expected skip_case");
  } catch (const hdb::skip_case& e) {
    CHECK(std::string(e.what()).find("GPU 3") != std::string::npos);
  }
}

TEST_CASE("the fixture cache keeps one fixture and rebuilds it when the case changes", "[family]") {
  struct counted {
    explicit counted(int& built) { ++built; }
  };
  int built = 0;
  hdb::fixture_cache<counted> cache;
  static_cast<void>(cache.get("a", built));
  static_cast<void>(cache.get("a", built));
  CHECK(built == 1);
  static_cast<void>(cache.get("b", built));
  CHECK(built == 2);
}

TEST_CASE("repetition defaults: at least 5, at least 10 for headline cases, fewer with --quick", "[family]") {
  const auto normal = hdb::repetitions_for(false);
  CHECK(normal.regular >= 5);
  CHECK(normal.headline >= 10);
  const auto quick = hdb::repetitions_for(true);
  CHECK(quick.regular < normal.regular);
  CHECK(quick.headline < normal.headline);
  CHECK(quick.headline >= 5);  // enough samples for a rank test in CI comparisons
}
