// The warm-up's stopping rule and its context keys (host only: no GPU needed).
#include "catch_compat.hpp"
#include "hdb/warmup.hpp"

#include <chrono>
#include <map>
#include <optional>

using namespace std::chrono_literals;
using ms = std::chrono::duration<double, std::milli>;

TEST_CASE("warm-up stops at 95 % of the maximum clock", "[warmup]") {
  CHECK(hdb::warmup_decision({900, 1500}, 1980, ms(20), 300ms) == std::nullopt);
  CHECK(hdb::warmup_decision({900, 1890}, 1980, ms(20), 300ms) == hdb::warmup_stop::max_clock);
  // Reaching the clock in the last slice before the cap still counts as reaching it.
  CHECK(hdb::warmup_decision({900, 1980}, 1980, ms(310), 300ms) == hdb::warmup_stop::max_clock);
}

TEST_CASE("with a known maximum a flat clock below it runs to the cap", "[warmup]") {
  // A GPU held at 1400 MHz (power cap, locked clocks) never reaches 95 %: the cap ends it.
  CHECK(hdb::warmup_decision({1400, 1400, 1400}, 1980, ms(100), 300ms) == std::nullopt);
  CHECK(hdb::warmup_decision({1400, 1400, 1400}, 1980, ms(305), 300ms) == hdb::warmup_stop::time_cap);
}

TEST_CASE("without a maximum the warm-up stops when the clock stops rising", "[warmup]") {
  CHECK(hdb::warmup_decision({900, 1400}, 0, ms(20), 300ms) == std::nullopt);
  CHECK(hdb::warmup_decision({900, 1400, 1700}, 0, ms(30), 300ms) == std::nullopt);
  CHECK(hdb::warmup_decision({1400, 1700, 1705}, 0, ms(30), 300ms) == std::nullopt);  // rose in the slice before
  CHECK(hdb::warmup_decision({1700, 1705, 1702}, 0, ms(40), 300ms) == hdb::warmup_stop::clock_plateau);
  CHECK(hdb::warmup_decision({900, 1200, 1500}, 0, ms(300), 300ms) == hdb::warmup_stop::time_cap);
}

TEST_CASE("a zero cap stops after the first slice", "[warmup]") {
  CHECK(hdb::warmup_decision({700}, 1980, ms(11), 0ms) == hdb::warmup_stop::time_cap);
}

TEST_CASE("warm-up context keys name the device", "[warmup]") {
  hdb::warmup_report report;
  report.device = 1;
  report.first_sm_mhz = 345.4;
  report.sm_mhz = 1980.2;
  report.max_sm_mhz = 1980;
  report.slices = 4;
  report.elapsed_ms = 41.26;
  report.stop = hdb::warmup_stop::max_clock;
  const auto pairs = hdb::warmup_context(report);
  const std::map<std::string, std::string> context(pairs.begin(), pairs.end());
  CHECK(context == std::map<std::string, std::string>{{"warmup.gpu1.sm_mhz", "1980"},
                                                      {"warmup.gpu1.first_sm_mhz", "345"},
                                                      {"warmup.gpu1.max_sm_mhz", "1980"},
                                                      {"warmup.gpu1.ms", "41.3"},
                                                      {"warmup.gpu1.slices", "4"},
                                                      {"warmup.gpu1.stop", "max_clock"}});
  report.max_sm_mhz = 0;
  report.stop = hdb::warmup_stop::clock_plateau;
  const auto unknown = hdb::warmup_context(report);
  CHECK(unknown[2].second == "unknown");
  CHECK(unknown[5].second == "clock_plateau");
}
