#include "catch_compat.hpp"
#include "hdb/util/stopping.hpp"

#include <stdexcept>

using hdb_test::Approx;

namespace {

// One repetition's counters: the decision metric and one nobody reads.
std::map<std::string, double> reading(double bandwidth) { return {{"bandwidth", bandwidth}, {"time_per_copy", 1e6 / bandwidth}}; }

// The rule's own counts: what these tests hold is how the rule uses them, not their values.
constexpr hdb::stopping_policy rule;

hdb::repetition_stopper pinned_copy(hdb::stopping_policy policy = {}) {
  // A 3 % tolerance: the median's interval may be at most +-0.75 % wide.
  return hdb::repetition_stopper({{"bandwidth", 0.03 * hdb::stopping_policy::tolerance_fraction}}, policy);
}

}  // namespace

TEST_CASE("the median's interval is the order statistics with at least the asked coverage", "[stopping]") {
  // Four values cannot give 90 %: [min, max] covers 1 - 2 / 16 = 87.5 %.
  CHECK_FALSE(hdb::interval_of_median({1, 2, 3, 4}, 0.9).has_value());
  const auto five = hdb::interval_of_median({5, 1, 4, 2, 3}, 0.9);
  REQUIRE(five.has_value());
  CHECK(five->low == 1);
  CHECK(five->high == 5);
  CHECK(five->coverage == Approx(1 - 2.0 / 32));
  // Eight values: [x(2), x(7)] covers 1 - 2 * 9 / 256 = 92.97 %, [x(3), x(6)] only 71 %.
  const auto eight = hdb::interval_of_median({8, 7, 6, 5, 4, 3, 2, 1}, 0.9);
  REQUIRE(eight.has_value());
  CHECK(eight->low == 2);
  CHECK(eight->high == 7);
  CHECK(eight->coverage == Approx(1 - 2 * 9.0 / 256));
  // Twenty values at 90 %: k = 6 (95.9 %); k = 7 would cover only 88.5 %.
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) twenty.push_back(i);
  const auto of_twenty = hdb::interval_of_median(twenty, 0.9);
  REQUIRE(of_twenty.has_value());
  CHECK(of_twenty->low == 6);
  CHECK(of_twenty->high == 15);
  CHECK_THROWS_AS(hdb::interval_of_median(twenty, 1.0), std::invalid_argument);
}

TEST_CASE("a steady decision metric stops at the floor, as precise", "[stopping]") {
  auto stopper = pinned_copy();
  CHECK(stopper.ceiling() == rule.ceiling);
  for (int i = 0; i < rule.floor - 1; ++i) {
    stopper.add(reading(55.0 + 0.01 * i), 0.05);
    CHECK_FALSE(stopper.done());
  }
  stopper.add(reading(55.02), 0.05);
  REQUIRE(stopper.done());
  CHECK(*stopper.reason() == hdb::stop_reason::precise);
  CHECK(stopper.taken() == rule.floor);
}

TEST_CASE("a noisy metric repeats until its interval narrows, else to the ceiling", "[stopping]") {
  SECTION("one outlier in five: [min, max] is too wide, so more repetitions narrow it to [x(2), x(7)]") {
    auto stopper = pinned_copy();
    for (const double v : {55.0, 55.1, 40.0, 55.05, 55.0}) stopper.add(reading(v), 0.05);
    CHECK_FALSE(stopper.done());
    stopper.add(reading(55.02), 0.05);
    stopper.add(reading(55.03), 0.05);
    CHECK_FALSE(stopper.done());  // 7 values still use [min, max]
    stopper.add(reading(55.01), 0.05);
    REQUIRE(stopper.done());
    CHECK(*stopper.reason() == hdb::stop_reason::precise);
    CHECK(stopper.taken() == 8);
  }
  SECTION("alternating 50 / 60: never within +-0.75 %, so the ceiling stops it") {
    auto stopper = pinned_copy();
    int taken = 0;
    while (!stopper.done()) {
      stopper.add(reading(taken % 2 ? 50.0 : 60.0), 0.01);
      ++taken;
    }
    CHECK(*stopper.reason() == hdb::stop_reason::ceiling);
    CHECK(stopper.taken() == rule.ceiling);
  }
}

TEST_CASE("the time ceiling ends a slow noisy case past the floor, never before it", "[stopping]") {
  hdb::stopping_policy policy;
  policy.max_seconds = 2;
  auto stopper = pinned_copy(policy);
  for (int i = 0; i < rule.floor - 1; ++i) stopper.add(reading(i % 2 ? 50.0 : 60.0), 1.0);  // past its 2 s, under the floor
  CHECK_FALSE(stopper.done());
  stopper.add(reading(60.0), 1.0);
  REQUIRE(stopper.done());
  CHECK(*stopper.reason() == hdb::stop_reason::time);
  CHECK(stopper.taken() == rule.floor);
}

TEST_CASE("a fixed count ignores the values, and a failure stops any case", "[stopping]") {
  hdb::repetition_stopper fixed(10);
  CHECK(fixed.ceiling() == 10);
  for (int i = 0; i < 9; ++i) fixed.add(reading(55.0), 0.01);
  CHECK_FALSE(fixed.done());
  fixed.add(reading(55.0), 0.01);
  REQUIRE(fixed.done());
  CHECK(*fixed.reason() == hdb::stop_reason::fixed);
  CHECK(hdb::to_string(*fixed.reason()) == "fixed");

  // No target: a fixed count of the floor.
  hdb::repetition_stopper no_target({}, hdb::stopping_policy{});
  CHECK(no_target.ceiling() == rule.floor);

  auto failing = pinned_copy();
  failing.add(reading(55.0), 0.01);
  failing.stop_failed();
  REQUIRE(failing.done());
  CHECK(*failing.reason() == hdb::stop_reason::failed);
  CHECK(failing.taken() == 1);
  CHECK_THROWS_AS(hdb::repetition_stopper(0), std::invalid_argument);
}

TEST_CASE("a metric the case never wrote constrains nothing, and every written one must be precise", "[stopping]") {
  hdb::repetition_stopper stopper({{"bandwidth", 0.0075}, {"latency", 0.0375}}, hdb::stopping_policy{});
  // Steady bandwidth, latency +-10 %: the latency target (3.75 %) holds the case back.
  for (int i = 0; i < 5; ++i) stopper.add({{"bandwidth", 55.0}, {"latency", i % 2 ? 2.0 : 2.4}}, 0.01);
  CHECK_FALSE(stopper.done());
  hdb::repetition_stopper only_bandwidth({{"bandwidth", 0.0075}, {"unwritten", 0.0375}}, hdb::stopping_policy{});
  for (int i = 0; i < 5; ++i) only_bandwidth.add({{"bandwidth", 55.0}}, 0.01);
  CHECK(only_bandwidth.done());
}
