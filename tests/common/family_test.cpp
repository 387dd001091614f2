#include "catch_compat.hpp"

#include "hdb/family.hpp"

TEST_CASE("labels carry parameters and headline metrics in the contract's format", "[family]") {
  hdb::case_spec spec;
  spec.labels = {{"case", "bandwidth"}, {"direction", "h2d"}, {"size_bytes", "4096"}};
  CHECK(hdb::format_label(spec) == "case=bandwidth;direction=h2d;size_bytes=4096");
  spec.headline_metrics = {"latency", "host_latency"};
  CHECK(hdb::format_label(spec) == "case=bandwidth;direction=h2d;size_bytes=4096;headline=latency,host_latency");
}

TEST_CASE("repetition defaults: at least 5, at least 10 for headline cases; fewer with --quick", "[family]") {
  const auto normal = hdb::repetitions_for(false);
  CHECK(normal.regular >= 5);
  CHECK(normal.headline >= 10);
  const auto quick = hdb::repetitions_for(true);
  CHECK(quick.regular < normal.regular);
  CHECK(quick.headline < normal.headline);
  CHECK(quick.headline >= 5);  // enough samples for a rank test in CI comparisons
}
