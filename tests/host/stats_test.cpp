#include "catch_compat.hpp"
#include "hdb/util/stats.hpp"

#include <stdexcept>

using hdb_test::Approx;

TEST_CASE("median of an odd count is the middle value", "[stats]") {
  CHECK(hdb::median({3.0}) == 3.0);
  CHECK(hdb::median({5.0, 1.0, 3.0}) == 3.0);
}

TEST_CASE("median of an even count is the mean of the two middle values", "[stats]") {
  CHECK(hdb::median({1.0, 2.0}) == 1.5);
  // Unsorted input, middle values 3 and 10: neither the lower nor the upper alone.
  CHECK(hdb::median({10.0, 1.0, 20.0, 3.0}) == 6.5);
  CHECK(hdb::median({4.0, 8.0, 1.0, 9.0, 7.0, 2.0}) == 5.5);
}

TEST_CASE("median and percentile refuse no values", "[stats]") {
  CHECK_THROWS_AS(hdb::median({}), std::invalid_argument);
  CHECK_THROWS_AS(hdb::percentile({}, 0.5), std::invalid_argument);
  CHECK_THROWS_AS(hdb::summarize({}), std::invalid_argument);
}

TEST_CASE("percentile interpolates between the closest ranks", "[stats]") {
  const std::vector<double> v{40.0, 10.0, 30.0, 20.0, 50.0};
  CHECK(hdb::percentile(v, 0.0) == 10.0);
  CHECK(hdb::percentile(v, 1.0) == 50.0);
  CHECK(hdb::percentile(v, 0.5) == 30.0);
  CHECK(hdb::percentile(v, 0.1) == Approx(14.0));
  CHECK(hdb::percentile(v, 0.9) == Approx(46.0));
  CHECK(hdb::percentile(v, -1.0) == 10.0);
  CHECK(hdb::percentile(v, 2.0) == 50.0);
  CHECK(hdb::percentile({1.0, 2.0, 3.0, 4.0}, 0.5) == hdb::median({1.0, 2.0, 3.0, 4.0}));
}

TEST_CASE("summarize gives median, mean, range, sample stddev and cv", "[stats]") {
  const auto s = hdb::summarize({2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0});
  CHECK(s.median == 4.5);
  CHECK(s.mean == 5.0);
  CHECK(s.min == 2.0);
  CHECK(s.max == 9.0);
  REQUIRE(s.stddev);
  CHECK(*s.stddev == Approx(2.138089935));  // sqrt(32 / 7): n - 1, not n
  REQUIRE(s.cv_percent);
  CHECK(*s.cv_percent == Approx(42.76179871));
}

TEST_CASE("summarize leaves stddev and cv undefined where they mean nothing", "[stats]") {
  const auto one = hdb::summarize({3.0});
  CHECK(one.median == 3.0);
  CHECK_FALSE(one.stddev);
  CHECK_FALSE(one.cv_percent);
  const auto zero_mean = hdb::summarize({-1.0, 1.0});
  CHECK(zero_mean.stddev);
  CHECK_FALSE(zero_mean.cv_percent);
}
