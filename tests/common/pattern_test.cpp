#include "catch_compat.hpp"

#include "hdb/host_pattern.hpp"
#include "hdb/pattern.hpp"

#include <cstdint>
#include <vector>

TEST_CASE("the pattern is non-zero in every byte and position-dependent", "[pattern]") {
  std::vector<std::uint8_t> seen_at_zero;
  for (std::uint64_t i = 0; i < 1 << 16; ++i) {
    REQUIRE(hdb::pattern_byte(i, 1) != 0);
  }
  // Shifting by one byte or one word must change most bytes.
  int same_shift_byte = 0;
  int same_shift_word = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    same_shift_byte += hdb::pattern_byte(i, 1) == hdb::pattern_byte(i + 1, 1);
    same_shift_word += hdb::pattern_byte(i, 1) == hdb::pattern_byte(i + 8, 1);
  }
  CHECK(same_shift_byte < 64);
  CHECK(same_shift_word < 64);
  CHECK(hdb::pattern_word(5, 1) != hdb::pattern_word(5, 2));  // seeds tell buffers apart
}

TEST_CASE("host fill and verify agree, and verify finds a wrong byte", "[pattern]") {
  const std::size_t bytes = GENERATE(1, 7, 8, 4097, 65536 + 3);
  std::vector<std::uint8_t> buffer(bytes + 8);
  hdb::fill_pattern_host(buffer.data(), bytes, 42);
  for (std::size_t i = 0; i < bytes; ++i) REQUIRE(buffer[i] == hdb::pattern_byte(i, 42));
  CHECK(hdb::verify_pattern_host(buffer.data(), bytes, 42).count == 0);
  CHECK(hdb::verify_pattern_host(buffer.data(), bytes, 43).count > 0);

  const std::size_t at = bytes / 2;
  buffer[at] ^= 0x80;
  const auto bad = hdb::verify_pattern_host(buffer.data(), bytes, 42);
  CHECK(bad.count == 1);
  CHECK(bad.first_index == at);
}

TEST_CASE("a range fill writes exactly its bytes, each with its position's pattern", "[pattern]") {
  const std::size_t begin = GENERATE(0, 3, 8, 13);
  const std::size_t end = GENERATE(13, 16, 29, 64);
  if (end < begin) return;
  std::vector<std::uint8_t> buffer(72, 0);
  hdb::fill_pattern_host_range(buffer.data(), begin, end, 5);
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    INFO("byte " << i << " of [" << begin << ", " << end << ")");
    CHECK(buffer[i] == (i >= begin && i < end ? hdb::pattern_byte(i, 5) : 0));
  }
}

TEST_CASE("zeroed memory never passes", "[pattern]") {
  std::vector<std::uint8_t> zeros(4097, 0);
  CHECK(hdb::verify_pattern_host(zeros.data(), zeros.size(), 0).count == zeros.size());
}

TEST_CASE("huge buffers are sampled, including every page edge", "[pattern]") {
  const std::size_t bytes = hdb::full_check_limit + 4096 * 3 + 5;
  std::vector<std::uint8_t> buffer(bytes);
  hdb::fill_pattern_host(buffer.data(), bytes, 7);
  CHECK(hdb::verify_pattern_host(buffer.data(), bytes, 7).count == 0);
  const std::size_t page_edge = (bytes / 2) / 4096 * 4096;  // first byte of a page in the middle
  buffer[page_edge] ^= 1;
  const auto bad = hdb::verify_pattern_host(buffer.data(), bytes, 7);
  CHECK(bad.count == 1);
  CHECK(bad.first_index == page_edge);
}
