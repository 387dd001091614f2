// hdbench-p2p: GPU-to-GPU transfers for every ordered pair of the selected GPUs.
//
// Timed: device time from CUDA events. Transfers are queued behind the spin gate (per-device start
// events behind one portable gate), so enqueue cost is never timed; a transfer whose call turns out
// to block the host (probed per case: cudaMemcpyPeerAsync without peer access may) is timed per
// call with its own event pair instead. A round of several concurrent transfers (bidirectional,
// all pairs) ends at its slowest stream; each transfer's own rate uses its own stream's end.
// Host-observed time is the median of calls timed from issue to completion with the host clock.
// Excluded: allocation, pinning, pattern fill, verification, peer-access toggling and the staged
// pipeline's chunk sweep (all outside the timed region).
// Bytes: a transfer of n bytes counts n (each byte crosses the link once; the staged pipeline moves
// it over PCIe twice); bidirectional and all-pairs rates add every transfer of the round; GB = 1e9 B.
#include "p2p.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/family.hpp"
#include "hdb/gpu_topology.hpp"
#include "hdb/util/units.hpp"
#include "hdb/kernels.hpp"
#include "hdb/measure.hpp"
#include "hdb/sizes.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"
#include "p2p_kernels.hpp"
#include "p2p_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hdb::p2p {

// --- peer access -------------------------------------------------------------------------------

void peer_access::set(int device, int peer, bool enabled) {
  const ordered_pair key{device, peer};
  const auto it = enabled_.find(key);
  if ((it != enabled_.end() && it->second) == enabled) return;
  if (enabled) {
    int can = 0;
    HDB_CUDA_CALL(cudaDeviceCanAccessPeer(&can, device, peer));
    if (can == 0) {
      throw skip_case("GPU " + std::to_string(device) + " cannot access GPU " + std::to_string(peer) +
                      "'s memory (cudaDeviceCanAccessPeer = 0)");
    }
  }
  const device_scope on(device);
  const cudaError_t status = enabled ? cudaDeviceEnablePeerAccess(peer, 0) : cudaDeviceDisablePeerAccess(peer);
  // Someone else's state (a library in this process) may already be what we want: not an error.
  const cudaError_t already = enabled ? cudaErrorPeerAccessAlreadyEnabled : cudaErrorPeerAccessNotEnabled;
  if (status == already) {
    static_cast<void>(cudaGetLastError());  // clears the non-sticky error the call recorded
  } else {
    HDB_CUDA_CALL(status);
  }
  enabled_[key] = enabled;
  ++toggles_;
}

void peer_access::require(const std::vector<ordered_pair>& pairs, bool enabled) {
  for (const ordered_pair& p : pairs) {
    if (p.src == p.dst) continue;
    set(p.src, p.dst, enabled);
    set(p.dst, p.src, enabled);
  }
}

// --- staging pool ----------------------------------------------------------------------------

void* staging_pool::get(std::size_t index, std::size_t bytes) {
  if (buffers_.size() <= index) buffers_.resize(index + 1);
  auto& buffer = buffers_[index];
  if (!buffer || buffer->size() < bytes) {
    buffer.reset();  // release first: the old and the new buffer need not coexist
    buffer = std::make_unique<host_buffer>(host_kind::pinned, bytes);
  }
  return buffer->data();
}

// --- one transfer ------------------------------------------------------------------------------

namespace {

constexpr int copy_threads = 512;
constexpr int copy_unroll = 4;

// Enough blocks for the data (each thread moves `copy_unroll` 16-byte vectors per step), at most
// four per SM: full occupancy, so remote loads keep NVLink busy.
int blocks_for(std::size_t bytes, int sm_count) {
  const std::size_t per_block = std::size_t{copy_threads} * copy_unroll * 16;
  const std::size_t needed = (bytes + per_block - 1) / per_block;
  return static_cast<int>(std::clamp<std::size_t>(needed, 1, static_cast<std::size_t>(std::max(sm_count, 1)) * 4));
}

}  // namespace

transfer::transfer(method how, ordered_pair pair, std::size_t bytes, int sm_count, void* staging)
    : how_(how),
      pair_(pair),
      bytes_(bytes),
      blocks_(blocks_for(bytes, sm_count)),
      src_(pair.src, std::max<std::size_t>(bytes, 1)),
      dst_(pair.dst, std::max<std::size_t>(bytes, 1)),
      src_side_(pair.src),
      dst_side_(pair.dst),
      staging_(static_cast<std::byte*>(staging)) {
  if (how == method::staged) {
    if (staging_ == nullptr) throw std::logic_error("staged transfer without staging memory");
    for (std::size_t slot = 0; slot < staging_slots; ++slot) {
      left_source_.emplace_back(pair.src, cudaEventDisableTiming);
      reached_target_.emplace_back(pair.dst, cudaEventDisableTiming);
    }
  }
}

void transfer::enqueue() const {
  switch (how_) {
    case method::ce_peer:
    case method::ce_no_peer: {
      const device_scope on(pair_.src);
      HDB_CUDA_CALL(cudaMemcpyPeerAsync(dst_.data(), pair_.dst, src_.data(), pair_.src, bytes_, src_side_.get()));
      break;
    }
    case method::sm_write: {
      const device_scope on(pair_.src);
      kernels::peer_copy(dst_.data(), src_.data(), bytes_, blocks_, src_side_.get());
      break;
    }
    case method::sm_read: {
      const device_scope on(pair_.dst);
      kernels::peer_copy(dst_.data(), src_.data(), bytes_, blocks_, dst_side_.get());
      break;
    }
    case method::staged: enqueue_staged(); break;
  }
}

void transfer::enqueue_staged() const {
  const std::size_t chunk = std::clamp<std::size_t>(chunk_, 1, std::max<std::size_t>(bytes_, 1));
  const auto* src = static_cast<const std::byte*>(src_.data());
  auto* dst = static_cast<std::byte*>(dst_.data());
  for (std::size_t offset = 0; offset < bytes_; offset += chunk) {
    const std::size_t n = std::min(chunk, bytes_ - offset);
    const std::size_t slot = next_slot_++ % staging_slots;
    std::byte* bounce = staging_ + slot * chunk;
    {
      // The slot is free once the H2D that last read it has finished (a never-recorded event
      // is complete, so the first round does not wait).
      const device_scope on(pair_.src);
      HDB_CUDA_CALL(cudaStreamWaitEvent(src_side_.get(), reached_target_[slot].get(), 0));
      HDB_CUDA_CALL(cudaMemcpyAsync(bounce, src + offset, n, cudaMemcpyDeviceToHost, src_side_.get()));
      HDB_CUDA_CALL(cudaEventRecord(left_source_[slot].get(), src_side_.get()));
    }
    const device_scope on(pair_.dst);
    HDB_CUDA_CALL(cudaStreamWaitEvent(dst_side_.get(), left_source_[slot].get(), 0));
    HDB_CUDA_CALL(cudaMemcpyAsync(dst + offset, bounce, n, cudaMemcpyHostToDevice, dst_side_.get()));
    HDB_CUDA_CALL(cudaEventRecord(reached_target_[slot].get(), dst_side_.get()));
  }
}

std::vector<cudaStream_t> transfer::streams() const {
  switch (how_) {
    case method::staged: return {src_side_.get(), dst_side_.get()};
    case method::sm_read: return {dst_side_.get()};
    default: return {src_side_.get()};
  }
}

void transfer::fill_source(std::uint32_t seed) const {
  const device_scope on(pair_.src);
  hdb::kernels::fill_pattern(src_.data(), bytes_, seed, src_side_.get());
  src_side_.synchronize();
}

void transfer::clear_destination() const {
  const device_scope on(pair_.dst);
  HDB_CUDA_CALL(cudaMemsetAsync(dst_.data(), 0, bytes_, dst_side_.get()));
  dst_side_.synchronize();
}

std::uint64_t transfer::count_wrong_bytes(std::uint32_t seed) const {
  const device_scope on(pair_.dst);
  return hdb::kernels::verify_pattern(dst_.data(), bytes_, seed, dst_side_.get()).count;
}

// --- a round of concurrent transfers -----------------------------------------------------------

transfer_set::transfer_set(method how, const std::vector<ordered_pair>& pairs, std::size_t bytes,
                           std::size_t staging_chunk, const family_env& env, staging_pool& pool)
    : how_(how), bytes_(bytes) {
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const ordered_pair& p = pairs[i];
    void* staging = how == method::staged ? pool.get(i, staging_slots * staging_chunk) : nullptr;
    const int kernel_device = how == method::sm_read ? p.dst : p.src;
    transfers_.push_back(std::make_unique<transfer>(how, p, bytes, env.device(kernel_device).sm_count, staging));
    transfers_.back()->set_chunk(staging_chunk);
    for (cudaStream_t s : transfers_.back()->streams()) streams_.push_back(s);
    finishing_.push_back(streams_.size() - 1);
  }
}

void transfer_set::issue(std::size_t n) const {
  for (std::size_t k = 0; k < n; ++k) {
    for (const auto& t : transfers_) t->enqueue();
  }
}

void transfer_set::synchronize() const {
  for (cudaStream_t s : streams_) HDB_CUDA_CALL(cudaStreamSynchronize(s));
}

void transfer_set::set_chunk(std::size_t chunk) {
  for (auto& t : transfers_) t->set_chunk(chunk);
}

namespace {
std::uint32_t seed_for(std::size_t transfer_index) { return 0x9EE20 + static_cast<std::uint32_t>(transfer_index); }
}  // namespace

void transfer_set::verify() const {
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    transfers_[i]->fill_source(seed_for(i));
    transfers_[i]->clear_destination();
  }
  issue(1);
  synchronize();
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    const std::uint64_t wrong = transfers_[i]->count_wrong_bytes(seed_for(i));
    if (wrong != 0) {
      const auto& p = transfers_[i]->pair();
      throw std::runtime_error("verification failed: GPU " + std::to_string(p.src) + " -> GPU " + std::to_string(p.dst) +
                               " by " + std::string(to_string(how_)) + ": " + std::to_string(wrong) + " of " +
                               std::to_string(bytes_) + " bytes differ from the pattern after one transfer");
    }
  }
}

bool issue_blocks_host(const transfer_set& set, double probe_ms) {
  for (cudaStream_t s : set.streams()) {
    const device_scope on(device_of(s));
    kernels::busy_wait(static_cast<std::uint64_t>(probe_ms * 1e6), s);
  }
  const double call_us = host_time_us([&] { set.issue(1); });
  set.synchronize();
  return call_us > probe_ms * 1e3 / 2;
}

// --- cases -------------------------------------------------------------------------------------

namespace {

// Long enough that a blocking call is unmistakable, short enough to probe every case.
constexpr double blocking_probe_ms = 20.0;

struct family_state {
  peer_access peers;
  staging_pool staging;
};

// Buffers, streams and decisions of the case now running, kept across its repetitions.
struct p2p_fixture {
  p2p_fixture(const planned_case& c, const std::vector<std::size_t>& chunk_sizes, family_env& env, staging_pool& pool)
      : chunk(initial_chunk(c, chunk_sizes)), set(c.how, c.transfers, c.bytes, chunk, env, pool) {
    if (c.how == method::staged && c.chunk == 0) choose_chunk(c, chunk_sizes, *env.gate);
    set.verify();  // with the chunk that will be timed
    if (c.how == method::ce_no_peer) blocks_host = issue_blocks_host(set, blocking_probe_ms);
  }

  // The chunk-sweep case's own chunk, or the largest candidate: the staging buffers are sized
  // for it, so every smaller candidate fits too.
  static std::size_t initial_chunk(const planned_case& c, const std::vector<std::size_t>& chunk_sizes) {
    if (c.how != method::staged) return 0;
    return c.chunk != 0 ? c.chunk : chunk_candidates(chunk_sizes, c.bytes).back();
  }

  // The chunk with the shortest gated round (best of two), outside the timed region.
  void choose_chunk(const planned_case& c, const std::vector<std::size_t>& chunk_sizes, spin_gate& gate) {
    double best_ms = std::numeric_limits<double>::infinity();
    for (std::size_t candidate : chunk_candidates(chunk_sizes, c.bytes)) {
      set.set_chunk(candidate);
      for (int attempt = 0; attempt < 2; ++attempt) {
        const double ms = time_batch(set.streams(), &gate, [&] { set.issue(1); }).max_ms;
        if (ms < best_ms) {
          best_ms = ms;
          chunk = candidate;
        }
      }
    }
    set.set_chunk(chunk);
  }

  std::size_t chunk;
  transfer_set set;
  bool blocks_host = false;
};

void require_memory(const planned_case& c, const family_env& env) {
  std::map<int, std::size_t> needed;
  for (const ordered_pair& p : c.transfers) {
    needed[p.src] += c.bytes;
    needed[p.dst] += c.bytes;
  }
  for (const auto& [device, bytes] : needed) require_device_memory(bytes, env.device(device));
}

void set_counters(benchmark::State& state, const planned_case& c, const p2p_fixture& fx, const loop_result& r) {
  const auto gbps = [](std::size_t bytes, double us) { return us > 0 ? gb_per_s(static_cast<double>(bytes), us) : 0.0; };
  const std::size_t n = fx.set.size();
  if (c.kind == case_kind::chunk_sweep) {
    // One size per chunk: no per-copy time, which the harness would try to fit over sizes.
    state.counters["bandwidth"] = gbps(c.bytes, r.device_us_per_op);
  } else if (c.kind == case_kind::latency) {
    state.counters["latency"] = r.device_us_per_op;
    state.counters["host_latency"] = r.host_median_us;
  } else if (n == 1) {
    state.counters["bandwidth"] = gbps(c.bytes, r.device_us_per_op);
    state.counters["time_per_copy"] = r.device_us_per_op;
    state.counters["host_time_per_copy"] = r.host_median_us;
  } else {
    state.counters["bandwidth"] = gbps(c.bytes * n, r.device_us_per_op);
    state.counters["time_per_round"] = r.device_us_per_op;
    state.counters["host_time_per_round"] = r.host_median_us;
    std::vector<double> own;
    for (std::size_t i = 0; i < n; ++i) own.push_back(gbps(c.bytes, r.stream_us_per_op[fx.set.finishing_stream(i)]));
    if (c.pattern == traffic::bidir) {
      state.counters["bandwidth_fwd"] = own[0];
      state.counters["bandwidth_rev"] = own[1];
    } else {
      state.counters["bandwidth_slowest"] = *std::min_element(own.begin(), own.end());
    }
  }
  // A chunk-sweep case's chunk is its chunk_bytes parameter; the others report the one chosen.
  if (c.how == method::staged && c.kind != case_kind::chunk_sweep) state.counters["best_chunk_bytes"] = static_cast<double>(fx.chunk);
  if (c.how == method::ce_no_peer) state.counters["blocks_host"] = fx.blocks_host ? 1.0 : 0.0;
}

void measure(benchmark::State& state, const planned_case& c, const p2p_fixture& fx, spin_gate& gate) {
  const std::size_t round_bytes = c.bytes * fx.set.size();
  std::size_t ops = ops_per_batch(round_bytes);
  if (c.how == method::staged) ops = staged_ops_per_batch(c.bytes, fx.chunk, ops);
  const timed_operation op{fx.set.streams(), !fx.blocks_host, [&fx](std::size_t n) { fx.set.issue(n); },
                           [&fx] { fx.set.synchronize(); }};
  set_counters(state, c, fx, run_timed_loop(state, op, ops, gate));
}

label_list case_params(const planned_case& c) {
  label_list params = {{"api", std::string(to_string(c.how))}, {"direction", std::string(to_string(c.pattern))}};
  if (!c.src_label.empty()) params.emplace_back("src", c.src_label);
  if (!c.dst_label.empty()) params.emplace_back("dst", c.dst_label);
  params.emplace_back("size_bytes", std::to_string(c.bytes));
  if (c.kind == case_kind::chunk_sweep) params.emplace_back("chunk_bytes", std::to_string(c.chunk));
  return params;
}

// The link a bandwidth's bytes cross (schema.json's traffic classes). Peer copies and SM kernels
// cross the NVLinks between the pair; the staged pipeline crosses each GPU's PCIe link once per
// direction, so two GPUs are bound by the slower link and a loopback by its one GPU's. Copies
// without peer access (the driver's choice of path) and all pairs at once (no single pair's
// links) have no peak; neither has the staged bidir total (each link carries both directions).
std::map<std::string, std::string> traffic_of(const planned_case& c) {
  if (c.kind == case_kind::latency || c.how == method::ce_no_peer || c.pattern == traffic::all_pairs) return {};
  if (c.how == method::staged) {
    if (c.pattern == traffic::loopback) return {{"bandwidth", "pcie_per_direction"}};
    if (c.pattern == traffic::bidir) {
      return {{"bandwidth_fwd", "pcie_per_direction_per_gpu"}, {"bandwidth_rev", "pcie_per_direction_per_gpu"}};
    }
    return {{"bandwidth", "pcie_per_direction_per_gpu"}};
  }
  if (c.pattern == traffic::loopback) return {{"bandwidth", "hbm_read_write"}};  // a copy within one GPU's memory
  if (c.pattern == traffic::bidir) {
    return {{"bandwidth", "nvlink_both_directions"}, {"bandwidth_fwd", "nvlink_per_direction"}, {"bandwidth_rev", "nvlink_per_direction"}};
  }
  return {{"bandwidth", "nvlink_per_direction"}};
}

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  plan_options plan;
  plan.sizes = parse_size_list(options.value("sizes"));
  plan.latency_sizes = parse_size_list(options.value("latency-sizes"));
  plan.chunk_sizes = parse_size_list(options.value("chunk-sizes"));
  plan.chunk_sweep_size = parse_size_list(options.value("chunk-sweep-size")).front();
  plan.aggregate_sizes = parse_size_list(options.value("aggregate-sizes"));

  const std::vector<int> devices = device_indices(env);
  // The topology travels with the family's own JSON, so a p2p result can be read without meta.json.
  if (!listing_only(options)) benchmark::AddCustomContext("p2p.topology", read_gpu_topology(devices).dump());

  auto state = std::make_shared<family_state>();
  auto cache = std::make_shared<fixture_cache<p2p_fixture>>();
  for (planned_case& c : plan_cases(devices, plan)) {
    case_spec spec = make_case("p2p", to_string(c.kind), case_params(c), c.devices);
    spec.skip_reason = c.skip_reason.value_or("");
    spec.traffic = traffic_of(c);
    spec.iterations = batches_per_repetition(c.bytes * std::max<std::size_t>(c.transfers.size(), 1));
    spec.body = [c = std::move(c), chunk_sizes = plan.chunk_sizes, state, cache, &env,
                 key = spec.name](benchmark::State& st) {
      const peer_state need = required_peer_state(c);
      if (need != peer_state::either) state->peers.require(c.transfers, need == peer_state::enabled);
      require_memory(c, env);
      const p2p_fixture& fx = cache->get(key, c, chunk_sizes, env, state->staging);
      measure(st, c, fx, *env.gate);
    };
    registry.add(std::move(spec));
  }
}

void single_size(const std::string& flag, const std::string& value) {
  flag_checks::size_list(flag, value);
  if (parse_size_list(value).size() != 1) throw usage_error("--" + flag + " takes one size, not a list: '" + value + "'");
}

}  // namespace

family_spec family() {
  family_spec spec;
  spec.name = "p2p";
  spec.flags = {
      {"sizes", "4K:1G:x4", "64K,16M,256M", "transfer sizes: FROM:TO:xF and/or a comma list (K,M,G binary)",
       flag_checks::size_list},
      {"latency-sizes", "1,64,4K", "1,4K", "small-transfer latency sizes", flag_checks::size_list},
      {"chunk-sizes", "512K,2M,8M,32M", "2M,8M",
       "staged pipeline chunk candidates (each raised to at least size/128); the best is reported",
       flag_checks::size_list},
      {"chunk-sweep-size", "256M", "64M", "transfer size of the staged chunk-sweep cases (one size)", single_size},
      {"aggregate-sizes", "64M,1G", "64M", "sizes of the all-pairs-at-once cases", flag_checks::size_list},
  };
  spec.register_cases = register_cases;
  return spec;
}

}  // namespace hdb::p2p
