// The stand-in worker the launcher tests start: parses the worker flag exactly as the real binary
// does and serves commands with a standin_executor.
//   allreduce_standin_worker --mode=MODE --allreduce-worker=FD,RANK,WORLD,DEVICE
#include "local_launcher.hpp"
#include "standin_executor.hpp"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  try {
    std::string mode = "normal";
    std::string identity;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind("--mode=", 0) == 0) mode = arg.substr(7);
      if (arg.rfind("--allreduce-worker=", 0) == 0) identity = arg.substr(19);
    }
    const auto id = hdb::allreduce::parse_worker_identity("allreduce-worker", identity);
    hdb_test::standin_executor executor(id.rank, hdb_test::parse_standin_mode(mode));
    hdb::allreduce::fd_channel channel(id.fd);
    return hdb::allreduce::serve(channel, executor);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "standin worker: %s\n", e.what());
    return 2;
  }
}
