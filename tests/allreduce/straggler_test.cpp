// The straggler case's figures from per-rank times (bench/allreduce/straggler.hpp): each rank's time
// from its own start, the late rank's time less its delay, the late rank's measured delay on every
// row, and the slowest/fastest ratio of the time inside the collective; missing ranks are refused.
#include "catch_compat.hpp"

#include "straggler.hpp"

#include <array>
#include <stdexcept>
#include <vector>

using namespace hdb::allreduce;

namespace {
// times_us as a rank replies to the straggler command: [0] its time, [1] its delay kernel.
std::array<double, 5> rank_times(double time_us, double delay_us = 0) { return {time_us, delay_us, 0, 0, 0}; }
}  // namespace

TEST_CASE("straggler figures: every rank's time, the late rank less its delay, the ratio", "[allreduce][straggler]") {
  // Two punctual ranks and a late one (rank 2, 1000 us late); the collective itself ~200 us.
  const std::vector<std::array<double, 5>> times = {rank_times(1210), rank_times(1205), rank_times(1212, 1003)};
  const straggler_figures punctual = straggler_row(times, 2, 0);
  CHECK(punctual.rank_time_us == 1210);
  CHECK(punctual.time_in_collective_us == 1210);  // nothing to subtract: it waited inside NCCL
  CHECK(punctual.delay_us == 1003);               // the late rank's measured delay, on every row
  CHECK(punctual.slowest_fastest == hdb_test::Approx(1210.0 / 209.0));
  const straggler_figures late = straggler_row(times, 2, 2);
  CHECK(late.rank_time_us == 1212);             // from its start, before the delay: the wait included
  CHECK(late.time_in_collective_us == 1212 - 1003);
  CHECK(late.slowest_fastest == punctual.slowest_fastest);  // one figure per repetition
  // No delay: the ratio is the plain spread between ranks.
  const std::vector<std::array<double, 5>> even = {rank_times(200), rank_times(202, 2)};
  CHECK(straggler_row(even, 1, 0).slowest_fastest == hdb_test::Approx(1.0));
}

TEST_CASE("straggler figures refuse a missing rank or a non-positive time", "[allreduce][straggler]") {
  const std::vector<std::array<double, 5>> two = {rank_times(200), rank_times(201, 1)};
  CHECK_THROWS_AS(straggler_row(two, 2, 0), std::invalid_argument);
  CHECK_THROWS_AS(straggler_row(two, 1, 2), std::invalid_argument);
  CHECK_THROWS_AS(straggler_row(two, -1, 0), std::invalid_argument);
  CHECK_THROWS_AS(straggler_row({rank_times(200), rank_times(100, 100)}, 1, 0), std::invalid_argument);
}
