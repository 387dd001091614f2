#pragma once
// A rank without a GPU for the transport tests: it answers every command the way the real rank
// would shape its reply, with made-up times, and can be told to die or hang on `run`.
#include "transport.hpp"

#include <string>

namespace hdb_test {

enum class standin_mode { normal, skip_on_prepare, die_on_run, hang_on_run, wrong_on_verify };

[[nodiscard]] standin_mode parse_standin_mode(const std::string& text);

// Rank r answers run with times_us[0] = 10 + r (launch=graph) or 20 + r (launch=stream), so the
// driver's maximum is 10 + (n - 1) and shows which launch method reached the ranks; connect
// with the id's fingerprint and, in `reason`, the multicast-off variables and NCCL_P2P_DISABLE as
// it sees them. Straggler: the late rank arrives cmd.delay_ns late, the collective ends on every
// rank straggler_cost_us after the last arrival, and each rank answers that end from its own start
// ([0]) and its delay ([1], the late rank only). Misbehaving modes affect rank 1 only.
inline constexpr double straggler_cost_us = 100;

class standin_executor final : public hdb::allreduce::rank_executor {
 public:
  standin_executor(int rank, standin_mode mode) : rank_(rank), mode_(mode) {}
  hdb::allreduce::rank_reply execute(const hdb::allreduce::command& cmd) override;

 private:
  int rank_;
  standin_mode mode_;
};

}  // namespace hdb_test
