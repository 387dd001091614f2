#pragma once
// The seam between the driver and the ranks. The driver talks to a rank_group (local worker
// processes, or MPI ranks of which it is rank 0 itself); a rank serves commands from a
// worker_channel with a rank_executor. Everything above this seam is one code path for both.
#include "protocol.hpp"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <vector>

namespace hdb::allreduce {

// A rank died, stopped answering, or the transport broke. The group is unusable afterwards.
class rank_lost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Executes one command on this rank and says how it went (never throws: a failure is a reply).
class rank_executor {
 public:
  virtual ~rank_executor() = default;
  virtual rank_reply execute(const command& cmd) = 0;
};

// The driver's view of all ranks.
class rank_group {
 public:
  virtual ~rank_group() = default;
  [[nodiscard]] virtual int size() const = 0;
  // Sends `cmd` to every rank and returns every reply, in rank order. Throws rank_lost when a rank
  // dies or has not answered `timeout` after the command was sent.
  virtual std::vector<rank_reply> exchange(const command& cmd, std::chrono::milliseconds timeout) = 0;
};

// A rank's view of the driver.
class worker_channel {
 public:
  virtual ~worker_channel() = default;
  // The next command; nullopt when the driver has gone.
  virtual std::optional<command> receive() = 0;
  virtual void send(const rank_reply& reply) = 0;
};

// The worker loop: receive, execute, reply, until quit or the driver disappears. Returns the
// process exit code (0 unless the channel broke).
int serve(worker_channel& channel, rank_executor& executor);

}  // namespace hdb::allreduce
