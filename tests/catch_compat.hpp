#pragma once
// One include for Catch2 v2 (single header) and v3 (split headers), so the tests are written
// once. Use TEST_CASE/SECTION/REQUIRE/CHECK/GENERATE, hdb_test::Approx, hdb_test::contains_text and
// the Catch::Matchers both versions share (StartsWith, EndsWith, WithinRel...).
#if defined(HDB_CATCH2_V3)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <string>

namespace hdb_test {
#if defined(HDB_CATCH2_V3)
using Catch::Approx;
// Catch2 v3 renamed the substring matcher; v2 has only the old name.
inline auto contains_text(const std::string& text) { return Catch::Matchers::ContainsSubstring(text); }
#else
using Catch::Detail::Approx;
inline auto contains_text(const std::string& text) { return Catch::Matchers::Contains(text); }
#endif

// Ends a test whose hardware is missing with the CTest skip code (registered as
// SKIP_RETURN_CODE), so CTest shows it as skipped on both Catch2 versions. Each test case
// runs as its own process under CTest, so exiting skips exactly that case.
[[noreturn]] inline void skip_test(const char* reason) {
  std::printf("SKIPPED: %s\n", reason);
  std::fflush(stdout);
  std::exit(HDB_SKIP_RETURN_CODE);
}
}  // namespace hdb_test
