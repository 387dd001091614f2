#include "standin_executor.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

namespace hdb_test {

using namespace hdb::allreduce;

standin_mode parse_standin_mode(const std::string& text) {
  if (text == "normal") return standin_mode::normal;
  if (text == "skip_on_prepare") return standin_mode::skip_on_prepare;
  if (text == "die_on_run") return standin_mode::die_on_run;
  if (text == "hang_on_run") return standin_mode::hang_on_run;
  if (text == "wrong_on_verify") return standin_mode::wrong_on_verify;
  throw std::invalid_argument("unknown stand-in mode " + text);
}

namespace {
std::string env_or_unset(const char* name) {
  const char* value = std::getenv(name);
  return std::string(name) + "=" + (value ? value : "(unset)");
}
}  // namespace

rank_reply standin_executor::execute(const command& cmd) {
  rank_reply reply;
  reply.rank = rank_;
  reply.device = rank_;
  if (rank_ >= cmd.ranks && cmd.kind != command_kind::release && cmd.kind != command_kind::reset &&
      cmd.kind != command_kind::quit) {
    reply.status = reply_status::idle;
    return reply;
  }
  const bool misbehaves = rank_ == 1;
  switch (cmd.kind) {
    case command_kind::connect:
      reply.token = fingerprint(cmd.id);
      set_reason(reply, env_or_unset("NCCL_NVLS_ENABLE") + ";" + env_or_unset("TORCH_SYMM_MEM_DISABLE_MULTICAST") + ";" +
                            env_or_unset("NVSHMEM_DISABLE_NVLS") + ";" + env_or_unset("NCCL_P2P_DISABLE"));
      break;
    case command_kind::prepare:
      if (misbehaves && mode_ == standin_mode::skip_on_prepare) {
        reply.status = reply_status::skip;
        set_reason(reply, "needs 8 GiB of device memory, 1 GiB free");
      }
      break;
    case command_kind::verify:
      if (misbehaves && mode_ == standin_mode::wrong_on_verify) {
        reply.wrong = 3;
        reply.first_wrong = 17;
      }
      break;
    case command_kind::run:
    case command_kind::overlap:
      if (misbehaves && mode_ == standin_mode::die_on_run) raise(SIGKILL);
      if (misbehaves && mode_ == standin_mode::hang_on_run) {
        while (true) pause();
      }
      for (double& t : reply.times_us) t = (cmd.launch == launch_method::stream ? 20 : 10) + rank_;
      break;
    case command_kind::straggler: {
      // NCCL's rule, played without a GPU: every rank starts its clock at 0, rank r arrives at
      // a_r (the late rank after its delay, the others at once), and the collective ends on every
      // rank at max_r a_r + cost. A rank's time is that end less its own start: the wait included.
      if (misbehaves && mode_ == standin_mode::die_on_run) raise(SIGKILL);
      const double late_us = static_cast<double>(cmd.delay_ns) / 1000.0;
      double last_arrival = 0;
      for (int r = 0; r < cmd.ranks; ++r) last_arrival = std::max(last_arrival, r == cmd.straggler_rank ? late_us : 0.0);
      reply.times_us[0] = last_arrival + straggler_cost_us;
      reply.times_us[1] = rank_ == cmd.straggler_rank ? late_us : 0.0;
      break;
    }
    case command_kind::release:
    case command_kind::reset:
    case command_kind::quit:
      break;
  }
  return reply;
}

}  // namespace hdb_test
