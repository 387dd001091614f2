#include "catch_compat.hpp"

#include "hdb/options.hpp"
#include "hdb/sizes.hpp"
#include "hdb/util/stopping.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace {
const std::vector<hdb::flag_spec> family_flags = {
    {"sizes", "1K:1G:x4", "4K,1M", "sweep sizes", hdb::flag_checks::size_list},
    {"alloc-sizes", "1M", "", "alloc sizes"},
    {"ranks", "1,2", "", "rank counts", hdb::flag_checks::positive_int_list}};

hdb::run_options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "hdbench-test");
  return hdb::parse_run_options(args, family_flags);
}
}  // namespace

TEST_CASE("defaults apply when flags are absent", "[options]") {
  const auto o = parse({});
  CHECK_FALSE(o.quick);
  CHECK_FALSE(o.verdict);
  CHECK(o.devices.all);
  CHECK(o.lock_timeout.count() == 600);
  CHECK(o.value("sizes") == "1K:1G:x4");
  CHECK(o.numa.how == hdb::numa_request::mode::automatic);
  CHECK(o.gate_timeout.count() == 2000);
  CHECK_FALSE(o.user_repetitions);
  CHECK(o.benchmark_args == std::vector<std::string>{"hdbench-test"});
}

TEST_CASE("quick profile picks quick defaults but never overrides an explicit flag", "[options]") {
  CHECK(parse({"--quick"}).value("sizes") == "4K,1M");
  CHECK(parse({"--quick"}).value("alloc-sizes") == "1M");
  CHECK(parse({"--quick", "--sizes=64M"}).value("sizes") == "64M");
  CHECK(parse({"--sizes", "64M", "--quick"}).value("sizes") == "64M");
}

TEST_CASE("verdict: a switch that changes no flag's value", "[options]") {
  const auto o = parse({"--verdict", "--sizes=64M"});
  CHECK(o.verdict);
  CHECK_FALSE(o.quick);
  CHECK(o.value("sizes") == "64M");
  CHECK(parse({"--verdict"}).value("sizes") == "1K:1G:x4");
}

TEST_CASE("stopping: auto is precision on a verdict run and fixed otherwise, and a given mode wins", "[options]") {
  CHECK(parse({}).stopping == hdb::stopping_mode::fixed);
  CHECK(parse({"--verdict"}).stopping == hdb::stopping_mode::precision);
  CHECK(parse({"--stopping=auto", "--verdict"}).stopping == hdb::stopping_mode::precision);
  CHECK(parse({"--stopping=precision"}).stopping == hdb::stopping_mode::precision);
  CHECK(parse({"--verdict", "--stopping=fixed"}).stopping == hdb::stopping_mode::fixed);
}

TEST_CASE("Google Benchmark flags pass through and repetitions are noticed", "[options]") {
  const auto o = parse({"--benchmark_filter=h2d", "--device=1", "--benchmark_repetitions=3", "--numa=none"});
  CHECK(o.benchmark_args ==
        std::vector<std::string>{"hdbench-test", "--benchmark_filter=h2d", "--benchmark_repetitions=3"});
  CHECK(o.user_repetitions);
  CHECK(o.devices.indices == std::vector<int>{1});  // --device is a synonym of --devices
  CHECK(o.numa.how == hdb::numa_request::mode::none);
}

TEST_CASE("bad input is refused with the offending flag named", "[options]") {
  const auto [args, needle] = GENERATE(table<std::vector<std::string>, std::string>({
      {{"--bogus=1"}, "--bogus"},
      {{"--quick=yes"}, "--quick"},
      {{"--verdict=yes"}, "flag --verdict takes no value"},
      {{"--device=-1"}, "bad value for --device: '-1'"},
      {{"--devices=abc"}, "--devices"},
      {{"--devices=0,"}, "--devices"},
      {{"--devices=3-1"}, "backwards"},
      {{"--lock-timeout-s=x"}, "--lock-timeout-s"},
      {{"--sizes=abc"}, "--sizes"},
      {{"--sizes=0"}, "size of 0"},
      {{"--sizes=0,4K"}, "size of 0"},
      {{"--ranks=0"}, "--ranks"},
      {{"--ranks=1,x"}, "--ranks"},
      {{"--numa=far"}, "far"},
      {{"--gate-timeout-ms=0"}, "--gate-timeout-ms"},
      {{"--stopping=adaptive"}, "bad value for --stopping: 'adaptive' (expected precision, fixed or auto)"},
      {{"--sizes"}, "--sizes"},
      {{"stray"}, "stray"},
  }));
  try {
    static_cast<void>(parse(args));
    FAIL("expected a usage_error");
  } catch (const hdb::usage_error& e) {
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

TEST_CASE("help is recognised and lists shared and family flags", "[options]") {
  CHECK(parse({"--help"}).help);
  const std::string text = hdb::describe_flags(family_flags);
  for (const char* flag : {"--sizes=1K:1G:x4", "--alloc-sizes=1M", "--quick", "--verdict ", "--devices=all", "--numa=auto", "--lock-timeout-s=600", "--gate-timeout-ms"}) {
    INFO(flag);
    CHECK(text.find(flag) != std::string::npos);
  }
  CHECK(text.find("(--quick: 4K,1M)") != std::string::npos);
}

TEST_CASE("the --stopping help states the stopping rule's own figures", "[options]") {
  const std::string text = hdb::describe_flags({});
  const hdb::stopping_policy precision;
  const auto fixed = hdb::repetitions_for(false);
  const auto whole = [](double value) { return std::to_string(std::lround(value)); };
  for (const std::string& said : {"median's " + whole(100 * precision.confidence) + " % interval",
                                 "of its tolerance: " + std::to_string(precision.floor) + " to " + std::to_string(precision.ceiling) +
                                     " repetitions, " + whole(precision.max_seconds) + " s)",
                                 "fixed (" + std::to_string(fixed.regular) + ", or " + std::to_string(fixed.headline) + " for a gated case)"}) {
    INFO(said);
    CHECK(text.find(said) != std::string::npos);
  }
  // The help says the interval's fraction of the tolerance in words.
  CHECK(hdb::stopping_policy::tolerance_fraction == 0.25);
  CHECK(text.find("within a quarter of its tolerance") != std::string::npos);
}

TEST_CASE("device selections: all, lists and ranges, checked against the node", "[options][devices]") {
  CHECK(hdb::parse_device_selection("all").all);
  CHECK(hdb::parse_device_selection("1").indices == std::vector<int>{1});
  CHECK(hdb::parse_device_selection("3,0-1,1").indices == std::vector<int>{0, 1, 3});
  CHECK(hdb::resolve_devices(hdb::parse_device_selection("all"), 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(hdb::resolve_devices(hdb::parse_device_selection("0,1"), 2) == std::vector<int>{0, 1});
  CHECK_THROWS_AS(hdb::resolve_devices(hdb::parse_device_selection("2"), 2), hdb::usage_error);
  try {
    static_cast<void>(hdb::resolve_devices(hdb::parse_device_selection("0,7"), 8 - 6));
    FAIL("expected a usage_error");
  } catch (const hdb::usage_error& e) {
    CHECK(std::string(e.what()) == "--devices=0,7 but this node has 2 CUDA devices (0..1)");
  }
  CHECK(hdb::join_indices({0, 2, 5}) == "0,2,5");
  CHECK_THROWS_AS(hdb::parse_device_selection("0-2147483647"), hdb::usage_error);  // not expanded
}

TEST_CASE("positive integer lists", "[options]") {
  CHECK(hdb::parse_positive_int_list("ranks", "1,2,8") == std::vector<int>{1, 2, 8});
  CHECK_THROWS_AS(hdb::parse_positive_int_list("ranks", ""), hdb::usage_error);
  CHECK_THROWS_AS(hdb::parse_positive_int_list("ranks", "1,,2"), hdb::usage_error);
}
