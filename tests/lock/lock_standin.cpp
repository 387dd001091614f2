// A stand-in for a family binary that only takes the GPU locks: it locks the UUIDs it is given,
// prints when it got them and when it lets go (CLOCK_MONOTONIC, comparable across processes),
// and holds them meanwhile. Exit codes as the shared main's: 0 done, 2 the GPU stayed busy.
//   lock-standin --dir=DIR --timeout-s=N --hold-ms=M UUID [UUID...]
#include "hdb/gpu_lock.hpp"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

long long monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long timeout_s = 0;
  long hold_ms = 0;
  std::vector<hdb::gpu_lock_target> gpus;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--dir=")) {
      dir = arg.substr(6);
    } else if (arg.starts_with("--timeout-s=")) {
      timeout_s = std::stol(std::string(arg.substr(12)));
    } else if (arg.starts_with("--hold-ms=")) {
      hold_ms = std::stol(std::string(arg.substr(10)));
    } else {
      gpus.push_back({static_cast<int>(gpus.size()), std::string(arg)});
    }
  }
  if (dir.empty() || gpus.empty()) {
    std::fprintf(stderr, "usage: lock-standin --dir=DIR --timeout-s=N --hold-ms=M UUID...\n");
    return 2;
  }
  try {
    const hdb::gpu_locks locks(gpus, std::chrono::seconds(timeout_s), "lock-standin", std::cerr, dir);
    std::printf("acquired %lld\n", monotonic_ns());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    std::printf("released %lld\n", monotonic_ns());
    std::fflush(stdout);
  } catch (const hdb::gpu_busy_error& e) {
    std::fprintf(stderr, "lock-standin: %s\n", e.what());
    return 2;
  }
  return 0;
}
