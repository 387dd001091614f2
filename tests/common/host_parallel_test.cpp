// The host side of the CPU copies and fills timed beside the GPU's: how a buffer is split over
// threads, the crew that runs one job on all of them, and threads filling slices with the pattern.
#include "catch_compat.hpp"

#include "hdb/host_parallel.hpp"
#include "hdb/host_pattern.hpp"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

TEST_CASE("split_bytes covers every byte once, in order, on aligned boundaries", "[host_parallel]") {
  const std::size_t bytes = GENERATE(std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096},
                                     std::size_t{10000}, std::size_t{1} << 20, (std::size_t{1} << 20) + 5);
  const int parts = GENERATE(1, 2, 3, 8);
  const auto ranges = hdb::split_bytes(bytes, parts, 4096);
  REQUIRE(ranges.size() == static_cast<std::size_t>(parts));
  std::size_t at = 0;
  for (const auto& r : ranges) {
    CHECK(r.begin == at);
    CHECK(r.end >= r.begin);
    if (r.end != bytes) CHECK(r.end % 4096 == 0);
    at = r.end;
  }
  CHECK(at == bytes);
}

TEST_CASE("split_bytes is as even as the alignment allows", "[host_parallel]") {
  // 1 MiB over 8 threads: 32 pages each.
  for (const auto& r : hdb::split_bytes(std::size_t{1} << 20, 8, 4096)) CHECK(r.size() == 32 * 4096);
  // 16000 B is 4 pieces of a page (the last short) over 3 threads: 2, 1 and the short one.
  const auto uneven = hdb::split_bytes(16000, 3, 4096);
  CHECK(uneven[0].size() == 8192);
  CHECK(uneven[1].size() == 4096);
  CHECK(uneven[2].size() == 16000 - 12288);
  // Fewer pages than threads: the first threads take them, the last get nothing.
  const auto small = hdb::split_bytes(5000, 4, 4096);
  CHECK(small[0].size() == 4096);
  CHECK(small[1].size() == 5000 - 4096);
  CHECK(small[2].size() == 0);
  CHECK(small[3].size() == 0);
  CHECK_THROWS_AS(hdb::split_bytes(100, 0, 4096), std::invalid_argument);
}

TEST_CASE("a thread crew runs each index once per run, index 0 on the caller", "[host_parallel]") {
  const int threads = GENERATE(1, 2, 5);
  hdb::thread_crew crew(threads);
  CHECK(crew.size() == threads);
  for (int round = 0; round < 50; ++round) {  // many runs: no call is lost or repeated between them
    std::vector<std::atomic<int>> calls(static_cast<std::size_t>(threads));
    std::atomic<bool> zero_on_caller{false};
    const auto caller = std::this_thread::get_id();
    crew.run([&](int i) {
      ++calls[static_cast<std::size_t>(i)];
      if (i == 0) zero_on_caller = std::this_thread::get_id() == caller;
    });
    for (const auto& c : calls) REQUIRE(c == 1);
    REQUIRE(zero_on_caller);
  }
  CHECK_THROWS_AS(hdb::thread_crew(0), std::invalid_argument);
}

TEST_CASE("a thread crew rethrows a worker's exception and keeps working", "[host_parallel]") {
  hdb::thread_crew crew(3);
  CHECK_THROWS_AS(crew.run([](int i) {
                    if (i == 2) throw std::runtime_error("slice 2 failed");
                  }),
                  std::runtime_error);
  std::atomic<int> calls{0};
  crew.run([&](int) { ++calls; });
  CHECK(calls == 3);
}

TEST_CASE("threads filling slices write the pattern one thread writes, and copying slices copies it", "[host_parallel]") {
  const std::size_t bytes = GENERATE(std::size_t{7}, std::size_t{4096 * 3 + 5}, (std::size_t{1} << 18) + 3);
  const int threads = GENERATE(1, 3, 4);
  hdb::thread_crew crew(threads);
  const auto slices = hdb::split_bytes(bytes, threads, 4096);
  std::vector<std::uint8_t> filled(bytes, 0);
  std::vector<std::uint8_t> copied(bytes, 0);
  crew.run([&](int i) {
    const auto& r = slices[static_cast<std::size_t>(i)];
    hdb::fill_pattern_host_range(filled.data(), r.begin, r.end, 11);
  });
  CHECK(hdb::verify_pattern_host(filled.data(), bytes, 11).count == 0);
  crew.run([&](int i) {
    const auto& r = slices[static_cast<std::size_t>(i)];
    std::memcpy(copied.data() + r.begin, filled.data() + r.begin, r.size());
  });
  CHECK(hdb::verify_pattern_host(copied.data(), bytes, 11).count == 0);
}
