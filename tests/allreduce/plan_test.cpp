// Which cases a run registers: the lesson sweep gets every size, variations the sampled ones,
// rank counts beyond the GPUs are reported as skipped, P2P-disabled cases come last (they need
// their own worker processes), one rank in place (a no-op in NCCL) is one skipped case, and the
// collective cases carry --launch (auto: graph for small messages) while the overlap case is always stream-launched.
#include "catch_compat.hpp"

#include "plan.hpp"

#include "hdb/sizes.hpp"

#include <algorithm>

using namespace hdb::allreduce;

TEST_CASE("sampled sizes: every fourth and the largest", "[allreduce]") {
  const auto sizes = hdb::parse_size_list("8:4G:x2");
  REQUIRE(sizes.size() == 30);
  const auto sampled = sampled_sizes(sizes);
  CHECK(sampled == std::vector<std::size_t>{8, 128, 2048, 32768, 524288, 8u << 20, 128u << 20, 2ull << 30, 4ull << 30});
  CHECK(sampled_sizes({1024}) == std::vector<std::size_t>{1024});
  CHECK(sampled_sizes(hdb::parse_size_list("8:1G:x8")) ==
        std::vector<std::size_t>{8, 32768, 128u << 20, 1u << 30});
}

TEST_CASE("ranks=all is the powers of two up to the GPUs, the GPU count, and always 2", "[allreduce]") {
  CHECK(parse_ranks("all", 1) == std::vector<int>{1, 2});
  CHECK(parse_ranks("all", 2) == std::vector<int>{1, 2});
  CHECK(parse_ranks("all", 6) == std::vector<int>{1, 2, 4, 6});
  CHECK(parse_ranks("all", 8) == std::vector<int>{1, 2, 4, 8});
  CHECK(parse_ranks("2,1", 8) == std::vector<int>{1, 2});
  CHECK_THROWS_AS(parse_ranks("0", 8), hdb::usage_error);
  CHECK_THROWS_AS(parse_ranks("two", 8), hdb::usage_error);
}

namespace {
plan_options default_options(int available) {
  plan_options o;
  o.sizes = hdb::parse_size_list("8:4G:x2");
  o.ranks = parse_ranks("all", available);
  o.available_ranks = available;
  o.collectives = {collective::all_reduce, collective::reduce_scatter, collective::all_gather};
  o.types = {data_type::float32, data_type::bfloat16, data_type::float16};
  o.placements = {placement::out_of_place, placement::in_place};
  o.interconnects = {interconnect::default_transports, interconnect::p2p_disabled};
  o.overlap_bytes = 256u << 20;
  return o;
}

long count_if(const std::vector<planned_case>& cases, auto predicate) {
  return std::count_if(cases.begin(), cases.end(), predicate);
}
}  // namespace

TEST_CASE("the default plan on two GPUs", "[allreduce]") {
  const auto cases = plan_cases(default_options(2));
  // n = 2: 30 lesson sizes + 17 other (op, type, placement) combinations x 9 sampled sizes; n = 1
  // has no in-place cases (8 other out-of-place combinations) and one skipped case saying why.
  const auto default_cases_of = [&](int n) {
    return count_if(cases, [n](const planned_case& c) {
      return !c.overlap && c.via == interconnect::default_transports && c.ranks == n;
    });
  };
  CHECK(default_cases_of(2) == 30 + 17 * 9);
  CHECK(default_cases_of(1) == 30 + 8 * 9 + 1);
  CHECK(count_if(cases, [](const planned_case& c) { return c.via == interconnect::p2p_disabled; }) == 9);
  CHECK(count_if(cases, [](const planned_case& c) { return c.overlap && c.ranks == 2; }) == 1);
  // The P2P-disabled group runs last, once.
  const auto first_p2p = std::find_if(cases.begin(), cases.end(),
                                      [](const planned_case& c) { return c.via == interconnect::p2p_disabled; });
  CHECK(std::all_of(first_p2p, cases.end(), [](const planned_case& c) { return c.via == interconnect::p2p_disabled; }));
  // Headlines: busbw at the largest size for n = 2, algbw for n = 1, time at the smallest.
  CHECK(count_if(cases, [](const planned_case& c) { return c.headline == "busbw" && c.ranks == 2 && c.bytes == (4ull << 30); }) == 1);
  CHECK(count_if(cases, [](const planned_case& c) { return c.headline == "algbw" && c.ranks == 1; }) == 1);
  CHECK(count_if(cases, [](const planned_case& c) { return c.headline == "time"; }) == 0);  // a check figure
  // 8 B of bfloat16 over 2 ranks is 4 elements: fine; reduce-scatter of 8 B floats: 2 elements.
  // The one skipped case: in place on one rank.
  CHECK(count_if(cases, [](const planned_case& c) { return !c.skip_reason.empty(); }) == 1);
}

TEST_CASE("in place on one rank is one skipped case, never a timed no-op", "[allreduce]") {
  const auto cases = plan_cases(default_options(2));
  const auto one_rank_in_place = [](const planned_case& c) { return c.ranks == 1 && c.where == placement::in_place; };
  REQUIRE(count_if(cases, one_rank_in_place) == 1);
  const planned_case& noted = *std::find_if(cases.begin(), cases.end(), one_rank_in_place);
  CHECK(noted.skip_reason.find("no device work") != std::string::npos);
  CHECK(noted.headline.empty());
  // Two ranks in place are measured as before.
  CHECK(count_if(cases, [](const planned_case& c) {
          return c.ranks == 2 && c.where == placement::in_place && c.skip_reason.empty();
        }) == 9 * 9);
}

TEST_CASE("collective cases follow --launch (auto: a graph below --graph-below), the overlap case is always stream-launched", "[allreduce]") {
  plan_options o = default_options(2);
  for (launch_method launch : {launch_method::graph, launch_method::stream}) {
    o.launch = launch;
    const auto cases = plan_cases(o);
    CHECK(count_if(cases, [&](const planned_case& c) { return !c.overlap && c.launch != launch; }) == 0);
    CHECK(count_if(cases, [](const planned_case& c) { return c.overlap && c.launch == launch_method::stream; }) == 1);
  }
  // Auto (the default): a graph below graph_below, the host-launched loop from there (under capture
  // NCCL's 4 GiB one-rank copy ran at 1387 GB/s against 2151 launched from the host, on an H200).
  o.launch.reset();
  REQUIRE_FALSE(plan_options{}.launch.has_value());
  o.graph_below = std::size_t{1} << 20;
  const auto cases = plan_cases(o);
  for (const planned_case& c : cases) {
    if (c.overlap) continue;
    INFO(c.bytes << " B");
    CHECK(c.launch == (c.bytes < o.graph_below ? launch_method::graph : launch_method::stream));
  }
  CHECK(count_if(cases, [](const planned_case& c) { return c.launch == launch_method::graph; }) > 0);
  CHECK(count_if(cases, [](const planned_case& c) { return !c.overlap && c.launch == launch_method::stream; }) > 0);
  CHECK(launch_for(o, (std::size_t{1} << 20) - 1) == launch_method::graph);
  CHECK(launch_for(o, std::size_t{1} << 20) == launch_method::stream);
  CHECK(parse_launch_method("graph") == launch_method::graph);
  CHECK(parse_launch_method("stream") == launch_method::stream);
  CHECK_FALSE(parse_launch_method("Graph").has_value());
  CHECK_FALSE(parse_launch_method("").has_value());
  CHECK(to_string(launch_method::graph) == "graph");
  CHECK(to_string(launch_method::stream) == "stream");
}

TEST_CASE("rank counts beyond the GPUs are one skipped case each, with the reason", "[allreduce]") {
  const auto cases = plan_cases(default_options(1));
  const auto skipped =
      std::find_if(cases.begin(), cases.end(), [](const planned_case& c) { return !c.skip_reason.empty() && c.ranks == 2; });
  REQUIRE(skipped != cases.end());
  CHECK(skipped->ranks == 2);
  CHECK(skipped->skip_reason.find("2 ranks need 2 GPUs") != std::string::npos);
  CHECK(skipped->skip_reason.find("1 available") != std::string::npos);
  // default + P2P disabled beyond the GPUs, and one rank in place
  CHECK(count_if(cases, [](const planned_case& c) { return !c.skip_reason.empty(); }) == 3);
  CHECK(count_if(cases, [](const planned_case& c) { return c.overlap && c.ranks == 1; }) == 1);
}

TEST_CASE("too small to split over the ranks is skipped, and sizes are the rounded message", "[allreduce]") {
  plan_options o = default_options(8);
  o.sizes = {6};
  o.ranks = {8};
  o.types = {data_type::float32};
  o.placements = {placement::out_of_place};
  o.interconnects = {interconnect::default_transports};
  o.overlap_bytes = 0;
  const auto cases = plan_cases(o);
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].op == collective::all_reduce);
  CHECK(cases[0].bytes == 4);  // one float
  CHECK(cases[0].skip_reason.empty());
  CHECK(cases[1].skip_reason.find("less than one float element per rank") != std::string::npos);
}

TEST_CASE("batches: ~512 MiB per batch, 2 to 100 collectives, a fifth as many warm-ups", "[allreduce]") {
  CHECK(batch_for(8).iterations == 100);
  CHECK(batch_for(8).warmup == 10);
  CHECK(batch_for(64u << 20).iterations == 8);
  CHECK(batch_for(64u << 20).warmup == 1);
  CHECK(batch_for(4ull << 30).iterations == 2);
  CHECK(batch_for(4ull << 30).warmup == 1);
}
