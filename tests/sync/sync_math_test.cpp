// The sync family's arithmetic: spreads, the host <-> %globaltimer calibration, wake-up
// latency, the scheduling-mode child's report and arguments, and the sync trap's schedule.
#include "catch_compat.hpp"

#include "sync.hpp"
#include "sync_math.hpp"

#include "hdb/options.hpp"
#include "hdb/sizes.hpp"

#include <set>
#include <string>
#include <vector>

using hdb_test::Approx;
namespace s = hdb::sync;

TEST_CASE("a spread is the median and the 10th and 90th percentiles of the values", "[sync]") {
  const auto spread = s::summarize({10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110});
  CHECK(spread.median == Approx(60));
  CHECK(spread.p10 == Approx(20));
  CHECK(spread.p90 == Approx(100));
}

TEST_CASE("interquartile mean: the middle half's mean, smooth where the median jumps a tick", "[sync]") {
  CHECK(s::interquartile_mean({100, 1, 2, 3, 4, 5, 6, -50}) == Approx(3.5));  // drops 2 at each end
  CHECK(s::interquartile_mean({4, 2, 3}) == Approx(3));                       // fewer than 4: plain mean
  CHECK(s::interquartile_mean({9}) == Approx(9));
  CHECK_THROWS(s::interquartile_mean({}));
  // Ticks of 32 ns around a true 1.95 us: the median sits on one tick, the mean between them.
  const std::vector<double> ticks = {1.920, 1.920, 1.952, 1.952, 1.952, 1.984, 1.984, 1.984};
  CHECK(hdb::median(ticks) == Approx(1.952));
  CHECK(s::interquartile_mean(ticks) == Approx((1.952 * 3 + 1.984) / 4));  // 2 dropped at each end
}

TEST_CASE("interquartile means by group: one per group, each ignoring its own outliers", "[sync]") {
  const std::vector<double> gaps = {1.95, 1.80, 1.96, 1.81, 9.00, 1.79, 1.94, 1.82, 1.95, 0.10};
  const std::vector<std::size_t> stream = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  const auto means = s::interquartile_means_by_group(gaps, stream, 2);
  REQUIRE(means.size() == 2);
  CHECK(means[0] == Approx((1.95 + 1.95 + 1.96) / 3));  // 1.94 and 9.00 dropped
  CHECK(means[1] == Approx((1.79 + 1.80 + 1.81) / 3));  // 0.10 and 1.82 dropped
  CHECK_THROWS(s::interquartile_means_by_group(gaps, stream, 3));  // group 2 has no values
  CHECK_THROWS(s::interquartile_means_by_group(gaps, std::vector<std::size_t>(10, 5), 2));
  CHECK_THROWS(s::interquartile_means_by_group(gaps, std::vector<std::size_t>(3, 0), 1));
}

TEST_CASE("calibration keeps the round trip with the smallest RTT", "[sync]") {
  // True offset: device = host + 1'000'000 ns. The device answered 10 ns after the midpoint in
  // the tight trip; the slow trip's midpoint is far off.
  const std::vector<s::round_trip> trips = {
      {0, 1'000'000 + 900, 1'000},          // RTT 1000
      {5'000, 1'005'000 + 60 + 10, 5'120},  // RTT 120, midpoint 5060
      {9'000, 1'009'000 + 3'000, 20'000},   // RTT 11000
  };
  const auto offset = s::calibrate(trips);
  CHECK(offset.host_ns == 5'060);
  CHECK(offset.offset_ns == 1'000'010);
  CHECK(offset.uncertainty_ns == 60);
  CHECK_THROWS(s::calibrate(std::vector<s::round_trip>{}));
  CHECK_THROWS(s::calibrate(std::vector<s::round_trip>{{100, 0, 50}}));
}

TEST_CASE("the clock map interpolates the offset between two calibrations", "[sync]") {
  const s::clock_offset before{0, 1'000, 300};
  const s::clock_offset after{1'000'000'000, 1'100, 500};  // 100 ns drift over 1 s = 0.1 ppm
  const s::clock_map clock(before, after);
  CHECK(clock.drift_ppm() == Approx(0.1));
  CHECK(clock.uncertainty_us() == Approx(0.5));
  CHECK(clock.to_host_ns(1'000) == 0);
  CHECK(clock.to_host_ns(500'000'000 + 1'050) == 500'000'000);
  CHECK(clock.to_host_ns(1'000'000'000 + 1'100) == 1'000'000'000);
  // One calibration used twice: a constant offset.
  const s::clock_map flat(before, before);
  CHECK(flat.to_host_ns(123'456) == 122'456);
  CHECK(flat.drift_ppm() == 0);
}

TEST_CASE("wake-up latency is the host return minus the kernel end on the host clock", "[sync]") {
  const s::clock_offset offset{0, 5'000, 100};
  const s::clock_map clock(offset, offset);
  // Kernel ended at host 10'000 (device 15'000); the host returned at 12'500.
  const s::wait_sample sample{9'000, 12'500, 15'000, 3.0, 3.5};
  CHECK(s::wakeup_us(sample, clock) == Approx(2.5));

  std::vector<s::wait_sample> samples;
  for (int i = 0; i < 5; ++i) {
    // Calls of 1000 us whose kernel ended i us before the return; the thread burnt 1000 - 100 i us.
    const std::int64_t call = i * 10'000'000;
    const std::int64_t ret = call + 1'000'000;
    samples.push_back({call, ret, ret - i * 1'000 + 5'000, 1000.0 - 100.0 * i, 1100.0 - 100.0 * i});
  }
  const auto summary = s::summarize_waits(samples, clock);
  CHECK(summary.wakeup_us.median == Approx(2));
  CHECK(summary.wakeup_us.p10 == Approx(0.4));
  CHECK(summary.wakeup_us.p90 == Approx(3.6));
  CHECK(summary.wait_us == Approx(1000));
  CHECK(summary.thread_cpu_us == Approx(800));
  CHECK(summary.process_cpu_us == Approx(900));
  CHECK(summary.cpu_busy_percent == Approx(80));
}

TEST_CASE("scheduling modes: names, CUDA flags, and whether cudaGetDeviceFlags shows them", "[sync]") {
  CHECK(s::parse_sched_mode("blocking_sync") == s::sched_mode::blocking_sync);
  CHECK(s::parse_sched_mode("auto") == s::sched_mode::automatic);
  CHECK_FALSE(s::parse_sched_mode("blocking").has_value());
  CHECK(s::schedule_flag(s::sched_mode::spin) == 0x01);
  CHECK(s::schedule_flag(s::sched_mode::yield) == 0x02);
  CHECK(s::schedule_flag(s::sched_mode::blocking_sync) == 0x04);
  // cudaDeviceMapHost (0x08) and friends ride along in cudaGetDeviceFlags' answer.
  CHECK(s::mode_in_force(s::sched_mode::blocking_sync, 0x04 | 0x08));
  CHECK_FALSE(s::mode_in_force(s::sched_mode::blocking_sync, 0x01 | 0x08));
  CHECK_FALSE(s::mode_in_force(s::sched_mode::spin, 0x00));
  CHECK(s::mode_in_force(s::sched_mode::automatic, 0x01));
  CHECK(s::parse_sched_modes("sched-modes", "spin,blocking_sync,spin") ==
        std::vector<s::sched_mode>{s::sched_mode::spin, s::sched_mode::blocking_sync});
  CHECK_THROWS_AS(s::parse_sched_modes("sched-modes", "spin,fast"), hdb::usage_error);
  for (s::wait_api api : s::all_wait_apis()) CHECK(s::parse_wait_api(s::to_string(api)) == api);
}

TEST_CASE("the child's report survives the trip through JSON, garbage is refused", "[sync]") {
  s::child_report report;
  report.mode = s::sched_mode::yield;
  report.device_flags = 0x0a;
  report.clock_uncertainty_us = 0.75;
  report.clock_drift_ppm = -0.25;
  report.blocks.push_back({s::wait_api::event_blocking_sync, {{12.5, 10.0, 20.0}, 990.0, 30.0, 35.0, 3.0}});
  report.blocks.push_back({s::wait_api::device_sync, {{1.5, 1.0, 2.0}, 995.0, 990.0, 995.0, 99.5}});
  const auto back = s::parse_child_report(s::to_json(report).dump());
  CHECK(back.mode == s::sched_mode::yield);
  CHECK(back.device_flags == 0x0au);
  CHECK(back.clock_uncertainty_us == Approx(0.75));
  CHECK(back.clock_drift_ppm == Approx(-0.25));
  REQUIRE(back.blocks.size() == 2);
  CHECK(back.blocks[0].api == s::wait_api::event_blocking_sync);
  CHECK(back.blocks[0].summary.wakeup_us.p90 == Approx(20.0));
  CHECK(back.blocks[1].summary.cpu_busy_percent == Approx(99.5));
  CHECK_THROWS(s::parse_child_report("CUDA error: no device"));
  CHECK_THROWS(s::parse_child_report(R"({"mode": "spin"})"));
  CHECK_THROWS(s::parse_child_report(R"({"mode": "turbo", "device_flags": 1, "clock_uncertainty_us": 0,
                                        "clock_drift_ppm": 0, "blocks": []})"));
}

TEST_CASE("the child's arguments are flags the family declares, with the request's values", "[sync]") {
  const s::child_request request{s::sched_mode::blocking_sync, 3, 7, 4, 500};
  std::vector<std::string> args = {"hdbench-sync"};
  for (const auto& a : s::child_arguments(request)) args.push_back(a);
  const auto options = hdb::parse_run_options(args, s::family().flags);
  CHECK(options.value("sched-child") == "blocking_sync");
  CHECK(options.devices.indices == std::vector<int>{3});
  CHECK(s::single_int_flag(options, "wakeup-calls") == 7);
  CHECK(s::single_int_flag(options, "wakeup-blocks") == 4);
  CHECK(s::single_int_flag(options, "wakeup-kernel-us") == 500);
  // A parent is a parent: no --sched-child means none.
  CHECK(hdb::parse_run_options({"hdbench-sync"}, s::family().flags).value("sched-child").empty());
  CHECK_THROWS_AS(hdb::parse_run_options({"hdbench-sync", "--sched-child=fast"}, s::family().flags), hdb::usage_error);
  CHECK_THROWS_AS(hdb::parse_run_options({"hdbench-sync", "--trap-every=1,0"}, s::family().flags), hdb::usage_error);
  CHECK_THROWS_AS(hdb::parse_run_options({"hdbench-sync", "--sched-modes=spin,lazy"}, s::family().flags), hdb::usage_error);
}

TEST_CASE("repetitions a child measures follow --benchmark_repetitions", "[sync]") {
  CHECK(s::requested_repetitions({"prog", "--benchmark_filter=x"}, 5) == 5);
  CHECK(s::requested_repetitions({"prog", "--benchmark_repetitions=12"}, 5) == 12);
  CHECK(s::requested_repetitions({"prog", "--benchmark_repetitions=zero"}, 5) == 5);
}

TEST_CASE("sync trap: read-back schedule, expected running sums, relative throughput", "[sync]") {
  CHECK(s::parse_every_list("trap-every", "1,2,8,64,never") == std::vector<int>{1, 2, 8, 64, s::never});
  CHECK_THROWS_AS(s::parse_every_list("trap-every", "1,-2"), hdb::usage_error);
  CHECK_THROWS_AS(s::parse_every_list("trap-every", ""), hdb::usage_error);

  CHECK(s::reads_back_after(0, 1));
  CHECK_FALSE(s::reads_back_after(0, 2));
  CHECK(s::reads_back_after(1, 2));
  CHECK(s::reads_back_after(63, 64));
  CHECK_FALSE(s::reads_back_after(63, s::never));
  CHECK(s::readback_count(2000, 1) == 2000);
  CHECK(s::readback_count(2000, 64) == 31);
  CHECK(s::readback_count(2000, s::never) == 0);

  const auto history = s::accumulator_history(1000);
  CHECK(history.back() == s::accumulated(1000));
  CHECK(history.front() == s::step_value(0));
  CHECK(s::accumulated(0) == 0u);
  std::set<std::uint32_t> distinct;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    CHECK(s::step_value(i) != 0u);
    distinct.insert(s::step_value(i));
  }
  CHECK(distinct.size() == 1000);  // a skipped or repeated step changes the sum

  CHECK(s::relative_throughput(10'000, 30'000) == Approx(1.0 / 3));
  CHECK(s::relative_throughput(10'000, 10'000) == Approx(1));
  CHECK_THROWS(s::relative_throughput(0, 1));

  CHECK(s::next_spin_ns(5'000, 5'000, 6'200) == 3'800);  // launch gap 1.2 us: spin less
  CHECK(s::next_spin_ns(5'000, 3'800, 4'900) == 3'900);
  CHECK(s::next_spin_ns(5'000, 500, 9'000) == 0);  // the gap alone exceeds the target
}
