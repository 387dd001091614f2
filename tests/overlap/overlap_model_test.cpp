// The overlap family's arithmetic: chunking, the ideal bound with the measured bidirectional rate,
// efficiency and speedup, the calibration solve, the transform's closed form and the verification
// sample. Everything here runs without a GPU.
#include "catch_compat.hpp"

#include "overlap_model.hpp"
#include "transform_math.hpp"

#include "hdb/pattern.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

using namespace hdb::overlap;
using hdb_test::Approx;

namespace {
std::size_t total_bytes(const std::vector<chunk>& chunks) {
  return std::accumulate(chunks.begin(), chunks.end(), std::size_t{0},
                         [](std::size_t sum, const chunk& c) { return sum + c.bytes; });
}

void require_contiguous(const std::vector<chunk>& chunks, std::size_t bytes) {
  std::size_t next = 0;
  for (const chunk& c : chunks) {
    REQUIRE(c.offset == next);
    REQUIRE(c.bytes > 0);
    REQUIRE(c.offset % chunk_alignment == 0);
    next += c.bytes;
  }
  REQUIRE(next == bytes);
}
}  // namespace

TEST_CASE("a size that divides evenly gives equal chunks", "[overlap][chunks]") {
  const auto chunks = split_into_chunks(std::size_t{1} << 30, 32);
  REQUIRE(chunks.size() == 32);
  for (const chunk& c : chunks) CHECK(c.bytes == (std::size_t{1} << 25));
  require_contiguous(chunks, std::size_t{1} << 30);
}

TEST_CASE("the last chunk is shorter when the count does not divide the size", "[overlap][chunks]") {
  // 1 GiB = 262144 pages over 12 chunks: 11 chunks of 21846 pages, the last of 21838.
  const std::size_t bytes = std::size_t{1} << 30;
  const auto chunks = split_into_chunks(bytes, 12);
  REQUIRE(chunks.size() == 12);
  for (std::size_t i = 0; i + 1 < chunks.size(); ++i) CHECK(chunks[i].bytes == 21846 * chunk_alignment);
  CHECK(chunks.back().bytes == 21838 * chunk_alignment);
  CHECK(chunks.back().bytes < chunks.front().bytes);
  require_contiguous(chunks, bytes);
  CHECK(total_bytes(chunks) == bytes);
}

TEST_CASE("chunking with unit alignment and awkward counts", "[overlap][chunks]") {
  const auto chunks = split_into_chunks(10, 4, 1);  // ceil(10/4) = 3: 3,3,3,1
  REQUIRE(chunks.size() == 4);
  CHECK(chunks[0].bytes == 3);
  CHECK(chunks[3].bytes == 1);
  CHECK(chunks[3].offset == 9);
  CHECK(split_into_chunks(7, 1, 1).front().bytes == 7);
}

TEST_CASE("impossible splits are refused with a reason", "[overlap][chunks]") {
  CHECK_THROWS_AS(split_into_chunks(0, 4), std::invalid_argument);
  CHECK_THROWS_AS(split_into_chunks(4096 + 1, 1), std::invalid_argument);  // not whole pages
  CHECK_THROWS_AS(split_into_chunks(4096, 0), std::invalid_argument);
  CHECK_THROWS_AS(split_into_chunks(2 * 4096, 3), std::invalid_argument);  // more chunks than pages
  // 10 units in 6 chunks: ceil gives 2 per chunk and nothing left for the sixth.
  CHECK_THROWS_AS(split_into_chunks(10, 6, 1), std::invalid_argument);
}

TEST_CASE("chunks go round-robin over streams, also when C is not a multiple of S", "[overlap][chunks]") {
  std::vector<int> per_stream(3, 0);
  for (int i = 0; i < 10; ++i) ++per_stream[static_cast<std::size_t>(stream_of_chunk(i, 3))];
  CHECK(per_stream == std::vector<int>{4, 3, 3});
  CHECK(stream_of_chunk(0, 1) == 0);
  CHECK(stream_of_chunk(7, 4) == 3);
}

TEST_CASE("chunk rules: fixed counts and multiples of the stream count", "[overlap][flags]") {
  const auto rules = parse_chunk_rules("S,4S,32");
  REQUIRE(rules.size() == 3);
  CHECK(chunk_counts(rules, 1) == std::vector<int>{1, 4, 32});
  CHECK(chunk_counts(rules, 3) == std::vector<int>{3, 12, 32});
  CHECK(chunk_counts(rules, 8) == std::vector<int>{8, 32});  // 4S = 32 appears once
  CHECK(chunk_counts(parse_chunk_rules("2"), 4) == std::vector<int>{2});  // C < S is the case's to skip
  for (const char* bad : {"", "0", "S,", "x4", "4SS", "-1", "0S", "1234567"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_chunk_rules(bad), std::invalid_argument);
  }
}

TEST_CASE("serial time is the sum of the three stages", "[overlap][bound]") {
  const stage_rates rates{50, 25, 90, 100};
  // 1e9 bytes: 20 ms in, 10 ms kernel, 40 ms out.
  CHECK(serial_time_us(rates, 1'000'000'000) == Approx(70'000));
}

TEST_CASE("one stream cannot overlap: its ideal is the serial time", "[overlap][bound]") {
  const stage_rates rates{50, 50, 90, 50};
  const std::size_t bytes = std::size_t{1} << 30;
  for (int c : {1, 4, 32}) {
    INFO(c);
    CHECK(ideal_time_us(rates, split_into_chunks(bytes, c), 1) == Approx(serial_time_us(rates, bytes)));
  }
}

TEST_CASE("balanced ideal: fill + one bottleneck per chunk, copies sharing the link", "[overlap][bound]") {
  // Chunk of 1e8 bytes: h = d = k = 2000 us at 50 GB/s; both directions together at 80 GB/s need
  // 2e8 / 80e3 = 2500 us per chunk, so the shared link, not the kernel, is the bottleneck.
  const stage_rates rates{50, 50, 80, 50};
  const std::vector<chunk> chunks(10, chunk{0, 100'000'000});
  const double fill = 3 * 2000.0;
  const double expected = fill + 9 * 2500.0;
  CHECK(ideal_time_us(rates, chunks, 3) == Approx(expected));
  CHECK(ideal_time_us(rates, chunks, 8) == Approx(expected));
  // Twice the one-way rate would claim the copies never slow each other: the kernel bound.
  const stage_rates naive{50, 50, 100, 50};
  CHECK(ideal_time_us(naive, chunks, 3) == Approx(fill + 9 * 2000.0));
  CHECK(ideal_time_us(naive, chunks, 3) < ideal_time_us(rates, chunks, 3));
}

TEST_CASE("two streams are bounded by the busier stream running its chunks in turn", "[overlap][bound]") {
  const stage_rates rates{50, 50, 80, 50};
  const std::vector<chunk> chunks(10, chunk{0, 100'000'000});
  // 5 chunks per stream x (h + k + d) = 5 x 6000 us beats the pipeline formula (28500 us).
  CHECK(ideal_time_us(rates, chunks, 2) == Approx(30'000));
  // 9 chunks on 2 streams: the first stream has 5.
  const std::vector<chunk> nine(9, chunk{0, 100'000'000});
  CHECK(ideal_time_us(rates, nine, 2) == Approx(30'000));
}

TEST_CASE("compute-heavy ideal is kernel-bound", "[overlap][bound]") {
  const stage_rates rates{50, 50, 80, 12.5};  // kernel 4x the copy
  const std::vector<chunk> chunks(8, chunk{0, 100'000'000});
  // fill 2000 + 8000 + 2000, then 7 more kernels of 8000 us.
  CHECK(ideal_time_us(rates, chunks, 4) == Approx(12'000 + 7 * 8000.0));
}

TEST_CASE("a shorter last chunk shortens the bound", "[overlap][bound]") {
  const stage_rates rates{50, 50, 80, 50};
  const std::vector<chunk> chunks = {{0, 100'000'000}, {0, 100'000'000}, {0, 50'000'000}};
  // fill 6000, chunk 1: max(2000, 2500), chunk 2: max(1000, 1250).
  CHECK(ideal_time_us(rates, chunks, 3) == Approx(6000 + 2500 + 1250.0));
}

TEST_CASE("the ideal bound on 1 GiB balanced pinned, H200-like rates", "[overlap][bound]") {
  // 54 GB/s each way, 95 GB/s together, kernel as fast as one copy: many chunks approach
  // serial / (2 x 54 / 95) ~ 2.6x, and three streams at 32 chunks allow ~2.5x.
  const stage_rates rates{54, 54, 95, 54};
  const std::size_t bytes = std::size_t{1} << 30;
  const double serial = serial_time_us(rates, bytes);
  const double ideal = ideal_time_us(rates, split_into_chunks(bytes, 32), 3);
  CHECK(serial / ideal == Approx(2.51).epsilon(0.01));
  CHECK(serial / ideal_time_us(rates, split_into_chunks(bytes, 32), 2) == Approx(2.0).epsilon(0.01));
}

TEST_CASE("efficiency: 1 at the bound, 0 at serial, undefined without room", "[overlap][efficiency]") {
  CHECK(*overlap_efficiency(100, 40, 40) == Approx(1.0));
  CHECK(*overlap_efficiency(100, 100, 40) == Approx(0.0));
  CHECK(*overlap_efficiency(100, 46, 40) == Approx(0.9));
  CHECK(*overlap_efficiency(100, 110, 40) == Approx(-1.0 / 6));  // slower than serial: negative
  CHECK(*overlap_efficiency(100, 38, 40) > 1.0);                  // faster than the model's bound
  CHECK_FALSE(overlap_efficiency(100, 99, 100).has_value());
  CHECK_FALSE(overlap_efficiency(100, 99, 99.5).has_value());
  CHECK(speedup(100, 40) == Approx(2.5));
}

TEST_CASE("calibration solve: iterations whose kernel time meets the target", "[overlap][calibration]") {
  // t(k) = 10 + 0.5 k: 4x a 110 us copy needs (440 - 10) / 0.5 = 860 steps.
  CHECK(iterations_for(10, 0.5, 440) == 860);
  CHECK(iterations_for(10, 0.5, 110) == 200);
  CHECK(iterations_for(10, 0.5, 5) == 1);  // below the fixed cost: the least work there is
  CHECK_THROWS_AS(iterations_for(10, 0.0, 100), std::runtime_error);
  CHECK_THROWS_AS(iterations_for(10, -1.0, 100), std::runtime_error);
}

TEST_CASE("the transform's closed form equals stepping it", "[overlap][transform]") {
  for (std::uint32_t salt : {0u, 1u, 77u}) {
    for (std::uint32_t k : {0u, 1u, 2u, 3u, 17u, 1000u}) {
      INFO("salt " << salt << " k " << k);
      std::uint32_t x = 0x12345678u;
      for (std::uint32_t i = 0; i < k; ++i) x = x * transform_multiplier + transform_increment(salt);
      CHECK(transform_power(k, salt)(0x12345678u) == x);
    }
  }
  // Another salt gives another output, so a previous pipeline's output never verifies.
  CHECK(transform_power(1000, 1)(5) != transform_power(1000, 2)(5));
}

TEST_CASE("input words are the shared pattern, little-endian", "[overlap][verify]") {
  const std::uint64_t word = hdb::pattern_word(3, 9);
  CHECK(input_word(6, 9) == static_cast<std::uint32_t>(word));
  CHECK(input_word(7, 9) == static_cast<std::uint32_t>(word >> 32));
}

TEST_CASE("verification sample: every word when small, chunk edges and a stride when large", "[overlap][verify]") {
  const std::size_t small = 64 * 1024;
  CHECK(words_to_check(split_into_chunks(small, 4), small).size() == small / 4);

  const std::size_t big = std::size_t{1} << 30;
  const auto chunks = split_into_chunks(big, 12);
  const auto words = words_to_check(chunks, big);
  CHECK(std::is_sorted(words.begin(), words.end()));
  CHECK(words.size() < big / 4 / 100);
  for (const chunk& c : chunks) {
    CHECK(std::binary_search(words.begin(), words.end(), c.offset / 4));
    CHECK(std::binary_search(words.begin(), words.end(), (c.offset + c.bytes) / 4 - 1));
  }
  CHECK(words.back() == big / 4 - 1);
}

TEST_CASE("first_mismatch finds a wrong word and passes a right output", "[overlap][verify]") {
  const std::size_t bytes = 64 * 1024;
  const auto words = words_to_check(split_into_chunks(bytes, 2), bytes);
  std::vector<std::uint32_t> out(bytes / 4);
  const affine_map f = transform_power(50, 3);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(input_word(i, 11));
  CHECK_FALSE(first_mismatch(out.data(), words, 11, 50, 3).has_value());
  CHECK(first_mismatch(out.data(), words, 11, 50, 4).has_value());  // another salt
  CHECK(first_mismatch(out.data(), words, 11, 49, 3).has_value());  // another regime
  out[9000] ^= 1;
  const auto bad = first_mismatch(out.data(), words, 11, 50, 3);
  REQUIRE(bad.has_value());
  CHECK(bad->index == 9000);
}
