// The collective table (nccl-tests' byte counts and bus factors) and the value pattern the
// verification relies on: expected outputs match a host simulation of each collective, and every
// sum stays an exact integer in its element type.
#include "catch_compat.hpp"

#include "collective.hpp"
#include "value_pattern.hpp"

#include <vector>

using namespace hdb::allreduce;
using hdb_test::Approx;

TEST_CASE("bus factors are nccl-tests' 2(n-1)/n and (n-1)/n", "[allreduce]") {
  struct row {
    collective op;
    int ranks;
    double factor;
  };
  for (const row r : {row{collective::all_reduce, 1, 0.0}, row{collective::all_reduce, 2, 1.0},
                      row{collective::all_reduce, 4, 1.5}, row{collective::all_reduce, 8, 1.75},
                      row{collective::reduce_scatter, 2, 0.5}, row{collective::reduce_scatter, 8, 0.875},
                      row{collective::all_gather, 2, 0.5}, row{collective::all_gather, 8, 0.875}}) {
    INFO(std::string(to_string(r.op)) << " n=" << r.ranks);
    CHECK(traits(r.op).bus_factor(r.ranks) == Approx(r.factor));
  }
}

TEST_CASE("per-rank element counts follow the message size S", "[allreduce]") {
  // S = 1024 floats on 4 ranks: all-reduce moves the whole vector on each rank, reduce-scatter
  // reads S and keeps S/4, all-gather contributes S/4 and receives S.
  CHECK(traits(collective::all_reduce).send_count(1024, 4) == 1024);
  CHECK(traits(collective::all_reduce).recv_count(1024, 4) == 1024);
  CHECK(traits(collective::reduce_scatter).send_count(1024, 4) == 1024);
  CHECK(traits(collective::reduce_scatter).recv_count(1024, 4) == 256);
  CHECK(traits(collective::all_gather).send_count(1024, 4) == 256);
  CHECK(traits(collective::all_gather).recv_count(1024, 4) == 1024);
  CHECK(traits(collective::all_reduce).nccl_call == "ncclAllReduce");
}

TEST_CASE("message sizes round down to whole elements and, when split, to whole blocks per rank", "[allreduce]") {
  CHECK(message_count(collective::all_reduce, data_type::float32, 8, 2) == 2);
  CHECK(message_count(collective::all_reduce, data_type::float32, 7, 2) == 1);
  CHECK(message_count(collective::all_reduce, data_type::float16, 7, 8) == 3);
  CHECK(message_count(collective::reduce_scatter, data_type::float32, 8, 2) == 2);
  CHECK(message_count(collective::reduce_scatter, data_type::float32, 8, 8) == 0);  // < 1 element per rank
  CHECK(message_count(collective::all_gather, data_type::bfloat16, 30, 4) == 12);
}

TEST_CASE("algbw is S / t and busbw applies the factor", "[allreduce]") {
  const std::size_t gib = std::size_t{1} << 30;
  CHECK(algbw_gbps(gib, 1e-3) == Approx(1073.741824));
  CHECK(busbw_gbps(collective::all_reduce, 8, gib, 1e-3) == Approx(1073.741824 * 1.75));
  CHECK(busbw_gbps(collective::all_gather, 2, gib, 1e-3) == Approx(1073.741824 * 0.5));
}

TEST_CASE("names round-trip", "[allreduce]") {
  for (collective op : all_collectives()) CHECK(parse_collective(to_string(op)) == op);
  for (data_type t : {data_type::float32, data_type::bfloat16, data_type::float16}) CHECK(parse_data_type(to_string(t)) == t);
  CHECK_FALSE(parse_collective("broadcast").has_value());
  CHECK_FALSE(parse_data_type("double").has_value());
  CHECK(element_bytes(data_type::bfloat16) == 2);
}

namespace {
// What each rank's output holds after the collective, simulated on the host from the inputs.
std::vector<std::uint64_t> simulate(collective op, int rank, int ranks, std::uint64_t count, std::uint64_t modulus) {
  const collective_traits& t = traits(op);
  const std::uint64_t send = t.send_count(count, ranks);
  const std::uint64_t recv = t.recv_count(count, ranks);
  std::vector<std::uint64_t> out(recv, 0);
  for (std::uint64_t j = 0; j < recv; ++j) {
    switch (op) {
      case collective::all_reduce:
        for (int q = 0; q < ranks; ++q) out[j] += input_value(q, j, modulus);
        break;
      case collective::reduce_scatter:
        for (int q = 0; q < ranks; ++q) out[j] += input_value(q, rank * recv + j, modulus);
        break;
      case collective::all_gather: out[j] = input_value(static_cast<int>(j / send), j % send, modulus); break;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("expected outputs match a host simulation of every collective", "[allreduce]") {
  const int ranks = GENERATE(1, 2, 3, 8);
  const data_type type = GENERATE(data_type::float32, data_type::bfloat16, data_type::float16);
  for (collective op : all_collectives()) {
    const std::uint64_t count = message_count(op, type, 4 * 1000 + 6, ranks);
    const collective_traits& t = traits(op);
    const std::uint64_t modulus = pattern_modulus(type, ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      const auto simulated = simulate(op, rank, ranks, count, modulus);
      for (std::uint64_t j = 0; j < simulated.size(); ++j) {
        const std::uint64_t expected =
            expected_output(op, rank, ranks, j, t.send_count(count, ranks), t.recv_count(count, ranks), modulus);
        if (expected != simulated[j]) FAIL(to_string(op) << " rank " << rank << " element " << j);
        // Exact in the element type: no rounding can make a right answer look wrong.
        if (expected > exact_integer_limit(type)) FAIL("sum " << expected << " beyond the exact range");
      }
    }
  }
}

TEST_CASE("the input pattern is never zero and depends on position and rank", "[allreduce]") {
  const std::uint64_t modulus = pattern_modulus(data_type::float32, 2);
  int equal_neighbours = 0;
  int equal_ranks = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    REQUIRE(input_value(0, i, modulus) >= 1);
    equal_neighbours += input_value(0, i, modulus) == input_value(0, i + 1, modulus) ? 1 : 0;
    equal_ranks += input_value(0, i, modulus) == input_value(1, i, modulus) ? 1 : 0;
  }
  CHECK(equal_neighbours < 10);
  CHECK(equal_ranks == 0);
  CHECK(pattern_modulus(data_type::bfloat16, 2) == 128);
  CHECK(pattern_modulus(data_type::float16, 1024) == 2);
  CHECK(pattern_modulus(data_type::bfloat16, 1000) == 1);
}
