#include "catch_compat.hpp"
#include "hdb/util/units.hpp"

using hdb_test::Approx;

TEST_CASE("gb_per_s is decimal gigabytes per second", "[units]") {
  CHECK(hdb::gb_per_s(1e9, 1e6) == Approx(1.0));
  CHECK(hdb::gb_per_s(double(1ull << 30), 19522.0) == Approx(55.0).epsilon(1e-3));
  CHECK(hdb::gb_per_s(4096, 1.0) == Approx(4.096));
}

TEST_CASE("format_size names the largest binary unit that divides exactly", "[units]") {
  CHECK(hdb::format_size(0) == "0 B");
  CHECK(hdb::format_size(3) == "3 B");
  CHECK(hdb::format_size(1023) == "1023 B");
  CHECK(hdb::format_size(1024) == "1 KiB");
  CHECK(hdb::format_size(4096) == "4 KiB");
  CHECK(hdb::format_size(1536ull << 10) == "1536 KiB");  // never rounded to "1.5 MiB"
  CHECK(hdb::format_size(4ull << 20) == "4 MiB");
  CHECK(hdb::format_size(1ull << 30) == "1 GiB");
  CHECK(hdb::format_size(64ull << 30) == "64 GiB");
  CHECK(hdb::format_size((64ull << 20) + 3) == "67108867 B");
}

TEST_CASE("format_seconds rounds to a tenth and drops trailing zeros", "[units]") {
  CHECK(hdb::format_seconds(30) == "30 s");
  CHECK(hdb::format_seconds(1.0) == "1 s");
  CHECK(hdb::format_seconds(2.5) == "2.5 s");
  CHECK(hdb::format_seconds(2.46) == "2.5 s");
  CHECK(hdb::format_seconds(0.04) == "0 s");
  CHECK(hdb::format_seconds(600.0) == "600 s");
}
