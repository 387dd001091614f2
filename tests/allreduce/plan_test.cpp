// Which cases a run registers: the lesson sweep gets every size, variations the sampled ones,
// rank counts beyond the GPUs are reported as skipped, P2P-disabled cases come last (they need
// their own worker processes), one rank in place (a no-op in NCCL) is one skipped case, and the
// collective cases carry --launch (auto: graph for small messages) while the overlap case is always stream-launched;
// the straggler case is a row per rank and delay at the largest rank count, skipped with the reason
// on one GPU, and --straggler-delays refuses anything but whole µs in range, naming the flag.
#include "catch_compat.hpp"

#include "plan.hpp"

#include "hdb/sizes.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

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
  o.straggler_delays_us = parse_straggler_delays("straggler-delays", "0,10,100,1000");  // the flag's default
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
      return c.kind == case_kind::collective && c.via == interconnect::default_transports && c.ranks == n;
    });
  };
  CHECK(default_cases_of(2) == 30 + 17 * 9);
  CHECK(default_cases_of(1) == 30 + 8 * 9 + 1);
  CHECK(count_if(cases, [](const planned_case& c) { return c.via == interconnect::p2p_disabled; }) == 9);
  CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::overlap && c.ranks == 2; }) == 1);
  CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::straggler; }) == 4 * 2);
  // The P2P-disabled group runs last, once.
  const auto first_p2p = std::find_if(cases.begin(), cases.end(),
                                      [](const planned_case& c) { return c.via == interconnect::p2p_disabled; });
  CHECK(std::all_of(first_p2p, cases.end(), [](const planned_case& c) { return c.via == interconnect::p2p_disabled; }));
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
    CHECK(count_if(cases, [&](const planned_case& c) { return c.kind == case_kind::collective && c.launch != launch; }) == 0);
    CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::overlap && c.launch == launch_method::stream; }) == 1);
    CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::straggler && c.launch != launch_method::stream; }) == 0);
  }
  // Auto (the default): a graph below graph_below, the host-launched loop from there (under capture
  // NCCL's 4 GiB one-rank copy ran at 1387 GB/s against 2151 launched from the host, on an H200).
  o.launch.reset();
  REQUIRE_FALSE(plan_options{}.launch.has_value());
  o.graph_below = std::size_t{1} << 20;
  const auto cases = plan_cases(o);
  for (const planned_case& c : cases) {
    if (c.kind != case_kind::collective) continue;
    INFO(c.bytes << " B");
    CHECK(c.launch == (c.bytes < o.graph_below ? launch_method::graph : launch_method::stream));
  }
  CHECK(count_if(cases, [](const planned_case& c) { return c.launch == launch_method::graph; }) > 0);
  CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::collective && c.launch == launch_method::stream; }) > 0);
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
  // default + P2P disabled beyond the GPUs, one rank in place, and the straggler
  CHECK(count_if(cases, [](const planned_case& c) { return !c.skip_reason.empty(); }) == 4);
  CHECK(count_if(cases, [](const planned_case& c) { return c.kind == case_kind::overlap && c.ranks == 1; }) == 1);
}

TEST_CASE("too small to split over the ranks is skipped, and sizes are the rounded message", "[allreduce]") {
  plan_options o = default_options(8);
  o.sizes = {6};
  o.ranks = {8};
  o.types = {data_type::float32};
  o.placements = {placement::out_of_place};
  o.interconnects = {interconnect::default_transports};
  o.overlap_bytes = 0;
  o.straggler_delays_us = {};
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

TEST_CASE("the straggler case: a row per rank and delay at the largest n, the last rank late", "[allreduce]") {
  plan_options o = default_options(8);
  o.straggler_bytes = std::size_t{64} << 20;
  const auto cases = plan_cases(o);
  std::vector<planned_case> late;
  std::copy_if(cases.begin(), cases.end(), std::back_inserter(late),
               [](const planned_case& c) { return c.kind == case_kind::straggler; });
  REQUIRE(late.size() == 4 * 8);
  for (std::size_t i = 0; i < late.size(); ++i) {
    const planned_case& c = late[i];
    INFO("straggler case " << i);
    CHECK(c.skip_reason.empty());
    CHECK(c.ranks == 8);
    CHECK(c.straggler_rank == 7);
    CHECK(c.rank == static_cast<int>(i % 8));
    CHECK(c.delay_us == std::vector<int>{0, 10, 100, 1000}[i / 8]);
    CHECK(c.op == collective::all_reduce);
    CHECK(c.type == data_type::float32);
    CHECK(c.where == placement::out_of_place);
    CHECK(c.via == interconnect::default_transports);
    CHECK(c.bytes == (std::size_t{64} << 20));
    CHECK(c.launch == launch_method::stream);
  }
  // Before the P2P-disabled group: it runs with the default transports' workers.
  const auto first_p2p = std::find_if(cases.begin(), cases.end(),
                                      [](const planned_case& c) { return c.via == interconnect::p2p_disabled; });
  CHECK(std::none_of(first_p2p, cases.end(), [](const planned_case& c) { return c.kind == case_kind::straggler; }));
  // --ranks=2,4 on eight GPUs: the largest asked for.
  o.ranks = {2, 4};
  CHECK(count_if(plan_cases(o), [](const planned_case& c) { return c.kind == case_kind::straggler && c.ranks == 4; }) == 4 * 4);
  // none: no straggler case at all; P2P disabled only: neither (it measures the default transports).
  o.straggler_delays_us = {};
  CHECK(count_if(plan_cases(o), [](const planned_case& c) { return c.kind == case_kind::straggler; }) == 0);
  o = default_options(8);
  o.interconnects = {interconnect::p2p_disabled};
  CHECK(count_if(plan_cases(o), [](const planned_case& c) { return c.kind == case_kind::straggler; }) == 0);
}

TEST_CASE("the straggler case on one GPU, or with --ranks=1, is one skipped case with the reason", "[allreduce]") {
  const auto one_gpu = plan_cases(default_options(1));
  const auto is_straggler = [](const planned_case& c) { return c.kind == case_kind::straggler; };
  REQUIRE(count_if(one_gpu, is_straggler) == 1);
  const planned_case& c = *std::find_if(one_gpu.begin(), one_gpu.end(), is_straggler);
  CHECK(c.skip_reason == "the straggler case needs 2 ranks (one process and GPU each); 1 available");
  CHECK(c.ranks == 2);
  CHECK(c.delay_us == 1000);
  plan_options o = default_options(8);
  o.ranks = {1};
  const auto one_rank = plan_cases(o);
  REQUIRE(count_if(one_rank, is_straggler) == 1);
  CHECK(std::find_if(one_rank.begin(), one_rank.end(), is_straggler)->skip_reason ==
        "the straggler case needs 2 ranks; the largest of --ranks is 1");
}

TEST_CASE("the straggler delays flag takes whole us from 0 to the limit, sorted, or none", "[allreduce]") {
  CHECK(parse_straggler_delays("straggler-delays", "0,10,100,1000") == std::vector<int>{0, 10, 100, 1000});
  CHECK(parse_straggler_delays("straggler-delays", "1000, 0,10,0") == std::vector<int>{0, 10, 1000});
  CHECK(parse_straggler_delays("straggler-delays", "100000") == std::vector<int>{max_straggler_delay_us});
  CHECK(parse_straggler_delays("straggler-delays", "none").empty());
  for (const char* bad : {"", "-1", "1.5", "10us", "100001", "1,,2", "abc", "9999999", "none,10", "+5"}) {
    INFO("'" << bad << "'");
    try {
      static_cast<void>(parse_straggler_delays("straggler-delays", bad));
      FAIL("expected a usage error");
    } catch (const hdb::usage_error& e) {
      const std::string what = e.what();
      CHECK(what.rfind("bad value for --straggler-delays: '", 0) == 0);
      CHECK(what.find("(whole us from 0 to 100000, or none)") != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);  // one line
    }
  }
}

