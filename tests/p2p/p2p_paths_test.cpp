// Every p2p method delivers the right bytes between two GPUs at awkward sizes (1 B, 4097 B,
// 64 MiB + 3), one direction and both at once; the staged loopback on one GPU. Each transfer
// set verifies itself against the position-dependent pattern when built and throws on a wrong byte.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"
#include "p2p.hpp"

#include <cstddef>
#include <vector>

using namespace hdb::p2p;

namespace {

const std::vector<std::size_t> awkward_sizes = {1, 4097, (std::size_t{64} << 20) + 3};

// Chunks that leave a remainder and run the pipeline through every slot several times.
std::size_t staged_chunk(std::size_t bytes) { return bytes > 4096 ? 4096 * ((bytes / 4096) / 7 + 1) : bytes; }

void check_method(method how, const std::vector<ordered_pair>& pairs) {
  auto& env = hdb_test::gpu_env();
  static peer_access peers;
  static staging_pool pool;
  const peer_state need = required_peer_state(how);
  if (need != peer_state::either) peers.require(pairs, need == peer_state::enabled);
  for (std::size_t bytes : awkward_sizes) {
    INFO(to_string(how) << " " << bytes << " B over " << pairs.size() << " transfer(s)");
    const std::size_t chunk = how == method::staged ? staged_chunk(bytes) : 0;
    const transfer_set set(how, pairs, bytes, chunk, env, pool);
    CHECK_NOTHROW(set.verify());
    // A second round through the same buffers (the staged pipeline reuses its slots) stays right.
    CHECK_NOTHROW(set.verify());
  }
}

std::vector<ordered_pair> forward() {
  const auto devices = hdb_test::test_devices();
  return {{devices[0], devices[1]}};
}

std::vector<ordered_pair> both_ways() {
  const auto devices = hdb_test::test_devices();
  return {{devices[0], devices[1]}, {devices[1], devices[0]}};
}

}  // namespace

TEST_CASE("cudaMemcpyPeerAsync with peer access delivers every byte", "[gpu][p2p]") {
  hdb_test::require_gpus(2);
  check_method(method::ce_peer, forward());
  check_method(method::ce_peer, both_ways());
}

TEST_CASE("cudaMemcpyPeerAsync without peer access delivers every byte", "[gpu][p2p]") {
  hdb_test::require_gpus(2);
  check_method(method::ce_no_peer, forward());
  check_method(method::ce_no_peer, both_ways());
}

TEST_CASE("the host-staged pipeline delivers every byte", "[gpu][p2p]") {
  hdb_test::require_gpus(2);
  check_method(method::staged, forward());
  check_method(method::staged, both_ways());
}

TEST_CASE("SM kernels reading from and writing to a peer deliver every byte", "[gpu][p2p]") {
  hdb_test::require_gpus(2);
  check_method(method::sm_read, forward());
  check_method(method::sm_write, forward());
  check_method(method::sm_read, both_ways());
  check_method(method::sm_write, both_ways());
}

TEST_CASE("the staged loopback through host memory delivers every byte on one GPU", "[gpu][p2p]") {
  const int device = hdb_test::test_devices().front();
  check_method(method::staged, {{device, device}});
}

TEST_CASE("a copy with peer access is queued, not blocking the caller", "[gpu][p2p]") {
  hdb_test::require_gpus(2);
  auto& env = hdb_test::gpu_env();
  peer_access peers;
  peers.require(forward(), true);
  staging_pool pool;
  const transfer_set set(method::ce_peer, forward(), std::size_t{1} << 20, 0, env, pool);
  CHECK_FALSE(issue_blocks_host(set, 20.0));
}
