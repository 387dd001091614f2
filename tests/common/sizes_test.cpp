#include "catch_compat.hpp"

#include "hdb/sizes.hpp"

#include <string>

using hdb::parse_size;
using hdb::parse_size_list;

TEST_CASE("parse_size reads bytes and binary units", "[sizes]") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("4097") == 4097);
  CHECK(parse_size("4K") == 4096);
  CHECK(parse_size("4k") == 4096);
  CHECK(parse_size("4KiB") == 4096);
  CHECK(parse_size("4KB") == 4096);
  CHECK(parse_size("64M") == 64ull << 20);
  CHECK(parse_size("1G") == 1ull << 30);
  CHECK(parse_size("2T") == 2ull << 40);
  CHECK(parse_size("17B") == 17);
}

TEST_CASE("parse_size refuses anything else with a message naming it", "[sizes]") {
  const auto bad = GENERATE(as<std::string>{}, "", "K", "-1", "1.5M", "4X", "4 K", "12MBs", "99999999999999999999",
                            "20000000000G");
  INFO("input: '" << bad << "'");
  REQUIRE_THROWS_AS(parse_size(bad), hdb::usage_error);
  try {
    static_cast<void>(parse_size(bad));
  } catch (const hdb::usage_error& e) {
    CHECK(std::string(e.what()).find("'" + bad + "'") != std::string::npos);
  }
}

TEST_CASE("parse_size_list expands ranges and lists", "[sizes]") {
  CHECK(parse_size_list("1M,64M,1G") == std::vector<std::size_t>{1ull << 20, 64ull << 20, 1ull << 30});
  CHECK(parse_size_list("4K:64K:x4") == std::vector<std::size_t>{4096, 16384, 65536});
  CHECK(parse_size_list("1K:1G:x4").size() == 11);
  CHECK(parse_size_list("1K:1G:x4").back() == 1ull << 30);
  SECTION("TO is included only when the factor reaches it") {
    CHECK(parse_size_list("1K:10K:x4") == std::vector<std::size_t>{1024, 4096});
  }
  SECTION("sorted and deduplicated across items") {
    CHECK(parse_size_list("64M,4K:16K:x2,4K") == std::vector<std::size_t>{4096, 8192, 16384, 64ull << 20});
  }
}

TEST_CASE("parse_size_list refuses malformed lists", "[sizes]") {
  const auto bad = GENERATE(as<std::string>{}, "", "1M,", ",1M", "4K:1G", "4K:1G:4", "4K:1G:x1", "4K:1G:x", "1G:4K:x2",
                            "0:1K:x2", "4K:1G:x2:x2", "4K;1G");
  INFO("input: '" << bad << "'");
  CHECK_THROWS_AS(parse_size_list(bad), hdb::usage_error);
}

