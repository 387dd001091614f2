#pragma once
// Runs one child program under a deadline. The child leads its own process group, so a
// timeout (SIGTERM, then SIGKILL after a grace period) also ends anything it started.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hdb {

enum class process_end { exited, signalled, timed_out, cancelled, not_started };

struct process_spec {
  std::vector<std::string> argv;               // argv[0] is the program path
  std::filesystem::path stdout_path;           // empty: capture into process_result::output
  std::filesystem::path stderr_path;           // empty: /dev/null
  std::chrono::duration<double> timeout{60};
  std::chrono::duration<double> kill_grace{3};
  // Set asynchronously (by a signal handler) to stop the child early, e.g. on Ctrl-C.
  const volatile std::sig_atomic_t* cancel = nullptr;
};

struct process_result {
  process_end end = process_end::not_started;
  std::optional<int> exit_code;
  std::optional<int> signal;      // the signal that ended it (also after a timeout kill)
  double elapsed_s = 0;
  std::string output;             // captured stdout when stdout_path is empty
  std::string start_error;        // why it could not start
};

// Blocks until the child ends or is killed; calls on_tick about every 200 ms meanwhile.
[[nodiscard]] process_result run_process(const process_spec& spec, const std::function<void()>& on_tick = {});

}  // namespace hdb
