#include "transport.hpp"

#include <cstdio>
#include <exception>

namespace hdb::allreduce {

int serve(worker_channel& channel, rank_executor& executor) {
  try {
    while (const std::optional<command> cmd = channel.receive()) {
      channel.send(executor.execute(*cmd));
      if (cmd->kind == command_kind::quit) return 0;
    }
    return 0;  // the driver went away: nothing left to serve
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hdbench-allreduce worker: %s\n", e.what());
    return 1;
  }
}

}  // namespace hdb::allreduce
