// The overlap family's arithmetic: chunking, the ideal bound with the measured bidirectional rate,
// the bound probe's plan and rates, efficiency and speedup of one repetition, the calibration
// solve, the transform's closed form and the verification sample. Everything here runs without a GPU.
#include "catch_compat.hpp"

#include "overlap_model.hpp"
#include "transform_math.hpp"

#include "hdb/pattern.hpp"

#include <algorithm>
#include <cmath>
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

TEST_CASE("pass figures: speedup and ideal speedup always, efficiency only with several streams", "[overlap][efficiency]") {
  const pass_figures one = figures_of_pass(100, 101, 100, 1);
  CHECK(one.speedup == Approx(100.0 / 101));
  CHECK(one.ideal_speedup == Approx(1.0));
  CHECK_FALSE(one.efficiency.has_value());
  const pass_figures four = figures_of_pass(100, 46, 40, 4);
  CHECK(four.speedup == Approx(100.0 / 46));
  CHECK(four.ideal_speedup == Approx(2.5));
  REQUIRE(four.efficiency.has_value());
  CHECK(*four.efficiency == Approx(0.9));
  CHECK_FALSE(figures_of_pass(100, 99.5, 99.5, 4).efficiency.has_value());  // no room to overlap
}

// ---------------------------------------------------------------- the bound probe

namespace {
constexpr std::size_t mib = std::size_t{1} << 20;
}  // namespace

TEST_CASE("probe plan: chunk-sized operations, about 64 MiB a batch, regions taken in turn", "[overlap][probe]") {
  const std::size_t gib = std::size_t{1} << 30;
  SECTION("1 GiB in 32 chunks: two 32 MiB operations, the D2H regions after the H2D ones") {
    const probe_plan plan = plan_probe(split_into_chunks(gib, 32), gib);
    CHECK(plan.op_bytes == 32 * mib);
    CHECK(plan.ops == 2);
    CHECK(plan.h2d_offsets == std::vector<std::size_t>{0, 32 * mib});
    CHECK(plan.d2h_offsets == std::vector<std::size_t>{64 * mib, 96 * mib});
  }
  SECTION("one chunk of 1 GiB: one operation capped at 64 MiB") {
    const probe_plan plan = plan_probe(split_into_chunks(gib, 1), gib);
    CHECK(plan.op_bytes == probe_batch_bytes);
    CHECK(plan.ops == 1);
    CHECK(plan.h2d_offsets == std::vector<std::size_t>{0});
    CHECK(plan.d2h_offsets == std::vector<std::size_t>{64 * mib});
  }
  SECTION("chunks that do not divide: the first (largest) chunk sets the size") {
    const probe_plan plan = plan_probe(split_into_chunks(96 * mib, 5), 96 * mib);  // 4916 pages (19.2 MiB), the last shorter
    CHECK(plan.op_bytes == split_into_chunks(96 * mib, 5).front().bytes);
    CHECK(plan.ops == 3);  // 64 MiB / 19.2 MiB
  }
  SECTION("small chunks: at most max_probe_ops operations") {
    const probe_plan plan = plan_probe(split_into_chunks(4 * mib, 1024), 4 * mib);
    CHECK(plan.op_bytes == chunk_alignment);
    CHECK(plan.ops == max_probe_ops);
    CHECK(plan.h2d_offsets.back() == (max_probe_ops - 1) * chunk_alignment);
    CHECK(plan.d2h_offsets.front() == max_probe_ops * chunk_alignment);
  }
  SECTION("a buffer with fewer regions than operations wraps around") {
    const probe_plan plan = plan_probe(split_into_chunks(96 * mib, 3), 96 * mib);  // 3 regions of 32 MiB
    CHECK(plan.ops == 2);
    CHECK(plan.h2d_offsets == std::vector<std::size_t>{0, 32 * mib});
    CHECK(plan.d2h_offsets == std::vector<std::size_t>{64 * mib, 0});
    const probe_plan tiny = plan_probe(split_into_chunks(chunk_alignment, 1), chunk_alignment);
    CHECK(tiny.ops == max_probe_ops);
    CHECK(std::all_of(tiny.d2h_offsets.begin(), tiny.d2h_offsets.end(), [](std::size_t o) { return o == 0; }));
  }
  SECTION("no chunks, or a chunk larger than the buffer, is refused") {
    CHECK_THROWS_AS(plan_probe({}, gib), std::invalid_argument);
    CHECK_THROWS_AS(plan_probe({chunk{0, 8 * mib}}, 4 * mib), std::invalid_argument);
  }
}

TEST_CASE("probe plan: every operation stays inside the buffer", "[overlap][probe]") {
  for (std::size_t pages : {1u, 3u, 1027u, 16384u, 262144u}) {
    const std::size_t bytes = pages * chunk_alignment;
    for (int count : {1, 2, 3, 7, 32, 100}) {
      std::vector<chunk> chunks;
      try {
        chunks = split_into_chunks(bytes, count);
      } catch (const std::invalid_argument&) {
        continue;  // no such chunking (tested above); nothing to probe
      }
      INFO(bytes << " bytes in " << count << " chunks");
      const probe_plan plan = plan_probe(chunks, bytes);
      REQUIRE(plan.h2d_offsets.size() == static_cast<std::size_t>(plan.ops));
      REQUIRE(plan.d2h_offsets.size() == static_cast<std::size_t>(plan.ops));
      CHECK(plan.op_bytes % chunk_alignment == 0);
      CHECK(plan.op_bytes * static_cast<std::size_t>(plan.ops) <= std::max(probe_batch_bytes, plan.op_bytes));
      for (std::size_t o : plan.h2d_offsets) CHECK(o + plan.op_bytes <= bytes);
      for (std::size_t o : plan.d2h_offsets) CHECK(o + plan.op_bytes <= bytes);
    }
  }
}

TEST_CASE("probe rates: batch bytes over batch time, both directions counted in the two-way rate", "[overlap][probe]") {
  const probe_plan plan{50'000'000, 2, {0, 50'000'000}, {0, 50'000'000}};  // 1e8 bytes a batch
  const probe_times t{2000, 2500, 2000.0, 4000};
  const stage_rates r = rates_from_probe(plan, t, 999);
  CHECK(r.h2d_gbps == Approx(50));
  CHECK(r.d2h_gbps == Approx(40));
  CHECK(r.bidir_gbps == Approx(100));  // 2e8 bytes in 2 ms
  CHECK(r.kernel_gbps == Approx(25));
  // Pageable memory is not probed both ways at once: the given cap stands in.
  CHECK(rates_from_probe(plan, {2000, 2500, std::nullopt, 4000}, 91.5).bidir_gbps == Approx(91.5));
  CHECK_THROWS_AS(rates_from_probe(plan, {0, 2500, 2000.0, 4000}, 1), std::runtime_error);
  CHECK_THROWS_AS(rates_from_probe(plan, {2000, 2500, -1.0, 4000}, 1), std::runtime_error);
  CHECK_THROWS_AS(rates_from_probe(plan, {2000, 2500, 2000.0, std::nan("")}, 1), std::runtime_error);
}

TEST_CASE("a bound probed beside the pass keeps efficiency steady while the two-way rate wanders", "[overlap][probe]") {
  // The observation: a balanced pipeline follows the link's two-way rate of the moment
  // (41-51 GB/s per direction between processes). Model a pass that always runs 2 % above the
  // bound of the link state it met, and the link's two-way rate at 82, 92 and 102 GB/s.
  const std::size_t bytes = std::size_t{1} << 30;
  const auto chunks = split_into_chunks(bytes, 32);
  const stage_rates start_up{55, 55, 102, 55};
  const double serial = serial_time_us(start_up, bytes);  // one-way copies and the kernel: steady
  std::vector<double> probed, fixed, speedups;
  for (double bidir : {82.0, 92.0, 102.0}) {
    const stage_rates now{55, 55, bidir, 55};
    const double measured = 1.02 * ideal_time_us(now, chunks, 4);
    probed.push_back(*figures_of_pass(serial, measured, ideal_time_us(now, chunks, 4), 4).efficiency);
    fixed.push_back(*figures_of_pass(serial, measured, ideal_time_us(start_up, chunks, 4), 4).efficiency);
    speedups.push_back(speedup(serial, measured));
  }
  const auto spread = [](const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *hi - *lo;
  };
  CHECK(spread(probed) < 0.01);  // under one point of efficiency
  CHECK(spread(fixed) > 0.08);    // the start-up bound: ten points and more
  // Speedup is the link's two-way rate itself: no bound can steady it.
  CHECK(speedups.back() / speedups.front() > 1.15);
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
