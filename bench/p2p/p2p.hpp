#pragma once
// The p2p family's transfers and per-case fixture, shared by the benchmark binary and its GPU
// tests (which push every method through awkward sizes between two GPUs). See p2p.cpp for what
// is timed.
#include "hdb/buffers.hpp"
#include "hdb/family.hpp"
#include "hdb/stream.hpp"
#include "p2p_plan.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace hdb::p2p {

// The process's peer-access state, per (accessing device, peer) pair. Peer access belongs to the
// context pair, so a case that needs it on or off asks here and only what differs is toggled.
class peer_access {
 public:
  // Turns access on or off in both directions of every pair (a copy engine or kernel of either
  // GPU may touch the other's memory). Throws skip_case when a pair cannot have it.
  void require(const std::vector<ordered_pair>& pairs, bool enabled);
  [[nodiscard]] int toggles() const noexcept { return toggles_; }

 private:
  void set(int device, int peer, bool enabled);
  std::map<ordered_pair, bool> enabled_;
  int toggles_ = 0;
};

// Pinned, portable bounce buffers kept for the whole process: pinning costs about half a
// millisecond per MiB, which must not be paid again by every staged case.
class staging_pool {
 public:
  // At least `bytes` of pinned host memory for pipeline `index`; grows (never shrinks) on demand.
  void* get(std::size_t index, std::size_t bytes);

 private:
  std::vector<std::unique_ptr<host_buffer>> buffers_;
};

// Slots of the staged pipeline: chunk i+1 leaves the source GPU while chunk i enters the
// destination, and a third slot absorbs jitter between the two streams.
inline constexpr std::size_t staging_slots = 3;

// One movement of `bytes` from pair.src to pair.dst by one method, with its buffers and streams.
class transfer {
 public:
  transfer(method how, ordered_pair pair, std::size_t bytes, int sm_count, void* staging);

  // Enqueues one transfer (for the staged method: every chunk, with the cross-stream events).
  void enqueue() const;
  // The staged pipeline's chunk; every other method ignores it. Must keep staging_slots x chunk
  // within the staging buffer given to the constructor.
  void set_chunk(std::size_t chunk) { chunk_ = chunk; }
  [[nodiscard]] std::size_t chunk() const { return chunk_; }

  // Streams the timed batch waits on; the last one finishes the transfer.
  [[nodiscard]] std::vector<cudaStream_t> streams() const;
  void fill_source(std::uint32_t seed) const;
  void clear_destination() const;
  // Number of destination bytes that differ from the pattern.
  [[nodiscard]] std::uint64_t count_wrong_bytes(std::uint32_t seed) const;
  [[nodiscard]] const ordered_pair& pair() const { return pair_; }

 private:
  void enqueue_staged() const;

  method how_;
  ordered_pair pair_;
  std::size_t bytes_;
  int blocks_;
  device_buffer src_;
  device_buffer dst_;
  stream src_side_;  // on pair.src: copies, the SM write kernel, the staged D2H
  stream dst_side_;  // on pair.dst: the SM read kernel, the staged H2D, verification
  std::byte* staging_ = nullptr;
  std::size_t chunk_ = 0;
  std::vector<event> left_source_;      // staged: slot's D2H done (pair.src), ordering only
  std::vector<event> reached_target_;   // staged: slot's H2D done (pair.dst), ordering only
  mutable std::size_t next_slot_ = 0;
};

// Several transfers that run at once (one for uni and loopback, two for bidir, every ordered
// pair for aggregate), verified once when built.
class transfer_set {
 public:
  // `staging_chunk` sizes the staging buffers (staged method); 0 when unused.
  transfer_set(method how, const std::vector<ordered_pair>& pairs, std::size_t bytes, std::size_t staging_chunk,
               const family_env& env, staging_pool& pool);

  void issue(std::size_t n) const;
  void synchronize() const;
  void set_chunk(std::size_t chunk);
  [[nodiscard]] std::span<const cudaStream_t> streams() const { return streams_; }
  // Index into streams() of the stream that finishes transfer i.
  [[nodiscard]] std::size_t finishing_stream(std::size_t i) const { return finishing_[i]; }
  [[nodiscard]] std::size_t size() const { return transfers_.size(); }
  // Fills, clears, runs one round and checks every destination; throws on a wrong byte.
  void verify() const;

 private:
  method how_;
  std::size_t bytes_;
  std::vector<std::unique_ptr<transfer>> transfers_;
  std::vector<cudaStream_t> streams_;
  std::vector<std::size_t> finishing_;
};

// Whether a call of `issue(1)` returns before the copy it queued has run: the call is made
// behind a kernel that keeps the issuing streams busy for `probe_ms`; a call that returns long
// before that was queued, one that takes as long blocked. Synchronises before returning.
[[nodiscard]] bool issue_blocks_host(const transfer_set& set, double probe_ms);

[[nodiscard]] family_spec family();

}  // namespace hdb::p2p
