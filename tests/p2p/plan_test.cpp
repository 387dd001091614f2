#include "catch_compat.hpp"
#include "p2p_plan.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace hdb::p2p;

namespace {

std::vector<int> first_n(int n) {
  std::vector<int> devices(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) devices[static_cast<std::size_t>(i)] = i;
  return devices;
}

plan_options small_plan() {
  plan_options o;
  o.sizes = {4096, 1 << 20, 1 << 30};
  o.latency_sizes = {1, 4096};
  o.chunk_sizes = {512 << 10, 2 << 20, 8 << 20};
  o.chunk_sweep_size = 256 << 20;
  o.aggregate_sizes = {64 << 20};
  return o;
}

std::size_t count(const std::vector<planned_case>& plan, case_kind kind, traffic pattern, bool skipped) {
  return static_cast<std::size_t>(std::count_if(plan.begin(), plan.end(), [&](const planned_case& c) {
    return c.kind == kind && c.pattern == pattern && c.skip_reason.has_value() == skipped;
  }));
}

}  // namespace

TEST_CASE("ordered pairs cover every src != dst once", "[p2p][plan]") {
  for (int n : {1, 2, 4, 8}) {
    INFO(n << " GPUs");
    const auto pairs = ordered_pairs(first_n(n));
    CHECK(pairs.size() == static_cast<std::size_t>(n * (n - 1)));
    CHECK(std::set<ordered_pair>(pairs.begin(), pairs.end()).size() == pairs.size());
    CHECK(std::none_of(pairs.begin(), pairs.end(), [](const ordered_pair& p) { return p.src == p.dst; }));
    CHECK(unordered_pairs(first_n(n)).size() == static_cast<std::size_t>(n * (n - 1) / 2));
  }
  CHECK(ordered_pairs({0, 1}) == std::vector<ordered_pair>{{0, 1}, {1, 0}});
  // A selection need not start at 0 nor be contiguous.
  CHECK(ordered_pairs({2, 5}) == std::vector<ordered_pair>{{2, 5}, {5, 2}});
}

TEST_CASE("case counts for 1, 2, 4 and 8 GPUs", "[p2p][plan]") {
  const plan_options o = small_plan();
  const std::size_t methods = all_methods().size();
  const std::size_t chunks = chunk_candidates(o.chunk_sizes, o.chunk_sweep_size).size();
  for (int n : {2, 4, 8}) {
    INFO(n << " GPUs");
    const auto plan = plan_cases(first_n(n), o);
    const std::size_t ordered = static_cast<std::size_t>(n * (n - 1));
    CHECK(count(plan, case_kind::bandwidth, traffic::uni, false) == methods * ordered * o.sizes.size());
    CHECK(count(plan, case_kind::bandwidth, traffic::bidir, false) == methods * ordered / 2 * o.sizes.size());
    CHECK(count(plan, case_kind::latency, traffic::uni, false) == methods * ordered * o.latency_sizes.size());
    CHECK(count(plan, case_kind::chunk_sweep, traffic::uni, false) == ordered * chunks);
    CHECK(count(plan, case_kind::chunk_sweep, traffic::loopback, false) == static_cast<std::size_t>(n) * chunks);
    // Staged and direct per GPU.
    CHECK(count(plan, case_kind::bandwidth, traffic::loopback, false) == 2 * static_cast<std::size_t>(n) * o.sizes.size());
    CHECK(count(plan, case_kind::aggregate, traffic::all_pairs, false) == methods * o.aggregate_sizes.size());
    CHECK(std::none_of(plan.begin(), plan.end(), [](const planned_case& c) { return c.skip_reason.has_value(); }));
    for (const planned_case& c : plan) {
      if (c.pattern == traffic::all_pairs) {
        CHECK(c.transfers.size() == ordered);
        CHECK(c.devices == first_n(n));
      }
    }
  }
}

TEST_CASE("one GPU: every pair case is registered as skipped, loopback runs", "[p2p][plan]") {
  const plan_options o = small_plan();
  const auto plan = plan_cases({3}, o);
  const std::size_t methods = all_methods().size();
  CHECK(count(plan, case_kind::bandwidth, traffic::uni, true) == methods * o.sizes.size());
  CHECK(count(plan, case_kind::bandwidth, traffic::bidir, true) == methods * o.sizes.size());
  CHECK(count(plan, case_kind::latency, traffic::uni, true) == methods * o.latency_sizes.size());
  CHECK(count(plan, case_kind::aggregate, traffic::all_pairs, true) == methods * o.aggregate_sizes.size());
  CHECK(count(plan, case_kind::chunk_sweep, traffic::uni, true) > 0);
  CHECK(count(plan, case_kind::bandwidth, traffic::loopback, false) == 2 * o.sizes.size());
  CHECK(count(plan, case_kind::chunk_sweep, traffic::loopback, false) > 0);
  for (const planned_case& c : plan) {
    INFO(to_string(c.kind) << " " << to_string(c.how) << " " << to_string(c.pattern) << " " << c.bytes);
    CHECK(c.devices == std::vector<int>{3});
    if (c.pattern == traffic::loopback) {
      CHECK_FALSE(c.skip_reason.has_value());
      CHECK((c.how == method::staged || (c.how == method::ce_peer && c.kind == case_kind::bandwidth)));
      CHECK(c.transfers == std::vector<ordered_pair>{{3, 3}});
    } else {
      REQUIRE(c.skip_reason.has_value());
      CHECK(*c.skip_reason == needs_two_gpus_reason(1));
      CHECK(c.skip_reason->find("needs >= 2 GPUs") == 0);
      CHECK(c.transfers.empty());
      // No pair: no src or dst to label (they are int columns; "none" would break their type).
      CHECK(c.src_label.empty());
      CHECK(c.dst_label.empty());
    }
  }
  CHECK(peer_state_changes(plan) == 0);
}

TEST_CASE("pair cases carry src, dst and the devices they touch", "[p2p][plan]") {
  const auto plan = plan_cases({0, 1, 2, 3}, small_plan());
  for (const planned_case& c : plan) {
    if (c.pattern == traffic::uni) {
      REQUIRE(c.transfers.size() == 1);
      CHECK(c.src_label == std::to_string(c.transfers[0].src));
      CHECK(c.dst_label == std::to_string(c.transfers[0].dst));
      CHECK(c.devices == std::vector<int>{std::min(c.transfers[0].src, c.transfers[0].dst),
                                          std::max(c.transfers[0].src, c.transfers[0].dst)});
    }
    if (c.pattern == traffic::bidir) {
      REQUIRE(c.transfers.size() == 2);
      CHECK(c.transfers[0].src == c.transfers[1].dst);
      CHECK(c.transfers[0].dst == c.transfers[1].src);
      CHECK(c.transfers[0].src < c.transfers[0].dst);
    }
  }
}

TEST_CASE("the plan toggles peer access once", "[p2p][plan]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " GPUs");
    const auto plan = plan_cases(first_n(n), small_plan());
    CHECK(peer_state_changes(plan) == 1);
    // Every case that needs peer access off comes before every case that needs it on.
    std::size_t last_disabled = 0;
    std::size_t first_enabled = plan.size();
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (required_peer_state(plan[i].how) == peer_state::disabled) last_disabled = i;
      if (required_peer_state(plan[i].how) == peer_state::enabled) first_enabled = std::min(first_enabled, i);
    }
    CHECK(last_disabled < first_enabled);
  }
}

TEST_CASE("staged chunks never queue more than the cap", "[p2p][plan]") {
  CHECK(effective_chunk(512 << 10, 1 << 30) == (std::size_t{1} << 30) / max_chunks_per_transfer);
  CHECK(effective_chunk(32 << 20, 1 << 30) == std::size_t{32} << 20);
  CHECK(effective_chunk(2 << 20, 4096) == 4096);  // smaller than a chunk: one chunk
  CHECK(effective_chunk(2 << 20, 1) == 1);
  CHECK(effective_chunk(4096, (64 << 20) + 3) % 4096 == 0);
  CHECK(chunk_candidates({512 << 10, 2 << 20, 8 << 20, 32 << 20}, 1 << 30) ==
        std::vector<std::size_t>{8 << 20, 32 << 20});
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4097}, std::size_t{1} << 20, (std::size_t{64} << 20) + 3}) {
    for (std::size_t candidate : {std::size_t{4096}, std::size_t{2} << 20}) {
      const std::size_t chunk = effective_chunk(candidate, bytes);
      const std::size_t chunks = (bytes + chunk - 1) / chunk;
      CHECK(chunks <= max_chunks_per_transfer);
      CHECK(chunks * staged_ops_per_batch(bytes, chunk, 100) <= std::max(max_chunks_per_transfer, chunks));
    }
  }
  CHECK(staged_ops_per_batch(4096, 4096, 100) == 100);
  CHECK(staged_ops_per_batch(1 << 30, 8 << 20, 1) == 1);
}
