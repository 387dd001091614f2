// Warm start on a real GPU: the clock probe measures a plausible SM clock, the warm-up ends for a
// stated reason within its cap, and a GPU that is already warm stops after a slice or two.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/kernels.hpp"
#include "hdb/stream.hpp"
#include "hdb/warmup.hpp"

#include <chrono>

using namespace std::chrono_literals;

TEST_CASE("the clock probe measures a plausible SM clock", "[gpu][warmup]") {
  static_cast<void>(hdb_test::gpu_env());
  for (const int device : hdb_test::test_devices()) {
    const hdb::device_scope scope(device);
    int max_khz = 0;
    int sm_count = 0;
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&max_khz, cudaDevAttrClockRate, device));
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
    const hdb::stream s(device);
    const hdb::device_buffer sample(device, sizeof(hdb::kernels::clock_sample));
    constexpr std::uint64_t busy_ns = 20'000'000;
    hdb::kernels::launch_clock_probe(static_cast<hdb::kernels::clock_sample*>(sample.data()), busy_ns, 2 * sm_count,
                                     s.get());
    hdb::kernels::clock_sample result{};
    HDB_CUDA_CALL(cudaMemcpyAsync(&result, sample.data(), sizeof result, cudaMemcpyDeviceToHost, s.get()));
    s.synchronize();
    INFO("device " << device << ": " << result.sm_cycles << " cycles in " << result.elapsed_ns << " ns, max "
                   << max_khz / 1000 << " MHz");
    CHECK(result.elapsed_ns >= busy_ns);
    CHECK(result.elapsed_ns < 2 * busy_ns);
    const double mhz = 1e3 * static_cast<double>(result.sm_cycles) / static_cast<double>(result.elapsed_ns);
    CHECK(mhz > 100);
    if (max_khz > 0) CHECK(mhz < 1.1 * max_khz / 1000.0);  // clock64 and %globaltimer agree
  }
}

TEST_CASE("warm start reaches the maximum clock or says why not, within its cap", "[gpu][warmup]") {
  static_cast<void>(hdb_test::gpu_env());
  const auto devices = hdb_test::test_devices();
  const auto reports = hdb::warm_start(devices, 300ms);
  REQUIRE(reports.size() == devices.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    INFO("device " << r.device << ": " << r.first_sm_mhz << " -> " << r.sm_mhz << " of " << r.max_sm_mhz << " MHz in "
                   << r.slices << " slices, " << r.elapsed_ms << " ms, " << hdb::to_string(r.stop));
    CHECK(r.device == devices[i]);
    CHECK(r.slices >= 1);
    CHECK(r.sm_mhz > 0);
    // The cap plus one slice, plus the copies and launches (generous for a busy CI node).
    CHECK(r.elapsed_ms < 300 + 10 + 500);
    if (r.stop == hdb::warmup_stop::max_clock) CHECK(r.sm_mhz >= hdb::warmup_target_fraction * r.max_sm_mhz);
    if (r.max_sm_mhz > 0) CHECK(r.stop != hdb::warmup_stop::clock_plateau);
  }
}

TEST_CASE("a GPU that is already warm stops almost at once", "[gpu][warmup]") {
  static_cast<void>(hdb_test::gpu_env());
  const int device = hdb_test::test_devices().front();
  const auto first = hdb::warm_start(device);
  if (first.stop != hdb::warmup_stop::max_clock) {
    WARN("device " << device << " did not reach 95 % of its maximum clock (" << first.sm_mhz << " of "
                   << first.max_sm_mhz << " MHz): power or clock limits; nothing to check");
    return;
  }
  const auto second = hdb::warm_start(device);
  CHECK(second.stop == hdb::warmup_stop::max_clock);
  CHECK(second.slices <= 2);
}
