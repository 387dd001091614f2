#pragma once
// The driver's side of a case, the same for local workers and MPI ranks: keep a group of ranks
// with the right environment, a communicator per rank count, and the current case's buffers;
// agree before every collective; reduce each repetition over ranks (slowest time, summed wrong
// values). A lost rank fails the case with its reason and the next case starts a fresh group.
#include "protocol.hpp"
#include "transport.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hdb::allreduce {

// What the ranks' processes must have been started with. NCCL reads NCCL_P2P_DISABLE once per
// process (at its first communicator), so a different value needs different processes.
struct group_profile {
  bool p2p_disabled = false;
  bool operator==(const group_profile&) const = default;
};

struct case_request {
  std::string key;        // a new key means new buffers and a new verification
  group_profile profile;
  command shape;          // op, type, in_place, ranks, count, warmup, iterations (kind is set here)
  // What each repetition sends: run (plain timed batches), overlap (communication against compute)
  // or straggler (shape.straggler_rank enters each collective shape.delay_ns late).
  command_kind timed = command_kind::run;
};

// One repetition, reduced over the participating ranks.
struct repetition_result {
  double time_us = 0;                  // run: the slowest rank's µs per collective
  std::array<double, 5> overlap_us{};  // overlap: each of rank_reply::times_us, slowest rank
  // Every participating rank's times_us, indexed by rank: the straggler case reports each rank.
  std::vector<std::array<double, 5>> rank_times_us;
  std::uint64_t wrong = 0;             // from the case's verification, summed over ranks
};

class collective_driver {
 public:
  using group_factory = std::function<std::unique_ptr<rank_group>(const group_profile&)>;
  using id_factory = std::function<unique_id()>;

  collective_driver(group_factory make_group, id_factory make_id, std::chrono::milliseconds watchdog);
  ~collective_driver();
  collective_driver(const collective_driver&) = delete;
  collective_driver& operator=(const collective_driver&) = delete;

  // Sets the case up on first use of its key (connect, prepare, agree, verify), then runs one
  // repetition. Throws skip_case when a rank cannot run it (all ranks then release), and
  // std::runtime_error when a rank failed or was lost.
  repetition_result run(const case_request& request);

 private:
  std::vector<rank_reply> step(command cmd);
  void ensure_group(const group_profile& profile);
  void set_up(const case_request& request);
  void fail_and_reset(const std::string& reason);
  void drop_group() noexcept;

  group_factory make_group_;
  id_factory make_id_;
  std::chrono::milliseconds watchdog_;
  std::unique_ptr<rank_group> group_;
  group_profile profile_;
  std::set<int> connected_;  // rank counts with a live communicator
  std::string current_key_;
  std::uint64_t current_wrong_ = 0;
};

// The reason text of every reply with `status`, "rank 1 (GPU 1): ...; rank 2 (GPU 2): ...".
[[nodiscard]] std::string join_reasons(const std::vector<rank_reply>& replies, reply_status status);

}  // namespace hdb::allreduce
