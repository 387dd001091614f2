// The sync family on a GPU: dependent kernels really order their work (the consumer reads what
// the producer wrote, and the check can fail), each scheduling mode takes effect in its child
// process (cudaGetDeviceFlags there), the trap's step calibrates to its target, and the host <->
// %globaltimer calibration is tight.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "sync.hpp"

#include "hdb/stream.hpp"

#include <algorithm>
#include <cmath>
#include <string>

using hdb_test::Approx;
namespace s = hdb::sync;

TEST_CASE("a consumer ordered after its producer reads exactly what the producer wrote", "[gpu][sync]") {
  static_cast<void>(hdb_test::gpu_env());
  const auto how = GENERATE(s::dependency::same_stream, s::dependency::stream_wait_event, s::dependency::host_sync);
  INFO(std::string(s::to_string(how)));
  // The producer spins 200 us before writing: a consumer that did not wait would start while
  // the buffer still holds the previous pair's pattern.
  s::dependency_fixture fixture(200'000, 4);
  const auto result = fixture.run(how, 20);
  CHECK(result.mismatches == 0u);
  REQUIRE(result.gap_us.size() == 20u);
  for (double gap : result.gap_us) CHECK(gap >= 0.0);  // one device clock: start after end
}

TEST_CASE("without ordering the consumer reads stale data: the check can fail", "[gpu][sync]") {
  static_cast<void>(hdb_test::gpu_env());
  s::dependency_fixture fixture(200'000, 4);
  const auto result = fixture.run(s::dependency::none, 5);
  CHECK(result.mismatches > 0u);
  CHECK(*std::min_element(result.gap_us.begin(), result.gap_us.end()) < 0.0);  // it started before the producer ended
}

TEST_CASE("the trap step calibrates to its target behind the gate, even below the launch cost", "[gpu][sync]") {
  auto& env = hdb_test::gpu_env();
  // 3 us is less than one empty launch on the H200 VMs (4-5 us): timed as launched, steps would
  // read the launch rate and the calibration would miss (it did, before the gate).
  for (const std::int64_t target_ns : {3'000, 20'000}) {
    INFO("target " << target_ns << " ns");
    const s::trap_fixture fixture(target_ns, 500, *env.gate);
    CHECK(fixture.step_kernel_us() == Approx(static_cast<double>(target_ns) / 1e3).epsilon(0.05));
  }
  // With 20 us kernels the never-read-back loop is bound by them: by the host clock a step is one
  // kernel by the GPU's, and a read-back every step only adds to it.
  s::trap_fixture fixture(20'000, 500, *env.gate);
  const double never_step_us = fixture.run(s::trap_api::readback_pageable, s::never) / 500;
  CHECK(never_step_us == Approx(fixture.step_kernel_us()).epsilon(0.05));
  CHECK(fixture.run(s::trap_api::readback_pageable, 1) / 500 > never_step_us);
}

TEST_CASE("each scheduling mode is in force in its child (cudaGetDeviceFlags)", "[gpu][sync]") {
  const auto& env = hdb_test::gpu_env();
  const auto mode = GENERATE(s::sched_mode::spin, s::sched_mode::yield, s::sched_mode::blocking_sync);
  INFO(std::string(s::to_string(mode)));
  const s::child_request request{mode, env.devices.front().index, 5, 2, 1000};
  const auto report = s::run_child(HDB_SYNC_BINARY, request);
  CHECK(report.mode == mode);
  CHECK((report.device_flags & s::schedule_mask) == s::schedule_flag(mode));
  CHECK(report.blocks.size() == 2 * s::all_wait_apis().size());
  CHECK(report.clock_uncertainty_us < 20.0);
  for (const auto& block : report.blocks) {
    INFO(std::string(s::to_string(block.api)));
    CHECK(block.summary.wakeup_us.median > -report.clock_uncertainty_us - 1.0);  // never returns before the kernel ends
    CHECK(block.summary.wait_us > 500.0);                                       // it did wait for the 1 ms kernel
    if (block.api == s::wait_api::stream_sync && mode == s::sched_mode::spin) CHECK(block.summary.cpu_busy_percent > 50.0);
    if (block.api == s::wait_api::stream_sync && mode == s::sched_mode::blocking_sync) {
      CHECK(block.summary.cpu_busy_percent < 50.0);  // the thread slept: the mode took effect in practice
    }
  }
}

TEST_CASE("host clock and %globaltimer calibrate to within a few microseconds, consistently", "[gpu][sync]") {
  static_cast<void>(hdb_test::gpu_env());
  const hdb::stream on;
  const auto first = s::calibrate_device_clock(on.get());
  const auto second = s::calibrate_device_clock(on.get());
  CHECK(first.uncertainty_ns < 10'000);
  CHECK(second.uncertainty_ns < 10'000);
  CHECK(std::abs(static_cast<double>(second.offset_ns - first.offset_ns)) <=
        static_cast<double>(first.uncertainty_ns + second.uncertainty_ns) + 2'000.0);
}
