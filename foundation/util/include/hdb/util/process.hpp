#pragma once
// Child processes, one way: a new process (clone with CLONE_VM | CLONE_VFORK, as glibc's
// posix_spawn does: a CUDA parent's address space is neither copied nor shared copy-on-write)
// that execs an argv with an environment, standard streams wired as asked, and
// (run_with_deadline) stdout/stderr captured up to a size limit while a deadline runs. Used by
// the harness for family binaries, hdbench-probe, nvidia-smi and the plots, by hdbench-sync for
// its scheduling-mode children and by hdbench-allreduce for its ranks.
//
// Until exec the child makes system calls only: the parents have CUDA and NCCL threads, one of
// which may hold the allocator's lock at that moment.
#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hdb {

// A file descriptor, closed when its owner goes.
class unique_fd {
 public:
  unique_fd() noexcept = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }
  // Hands the descriptor over: the owner no longer closes it.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the descriptor held (if any) and takes `fd`.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

// "`what`: " and errno in words, for the exception right after a failed system call (errno is read
// here, so nothing in between may change it).
[[nodiscard]] std::string errno_text(const std::string& what);

// Where a standard stream of the child goes when no file is named for it.
enum class child_stream {
  capture,    // a pipe read into child_result (run_with_deadline only; stdin: as discard)
  discard,    // /dev/null
  inherit,    // this process's own stream
  to_stderr,  // this process's stderr (for stdout: keeps a driver's stdout for its own table)
};

enum class child_end { exited, signalled, timed_out, cancelled, not_started };

struct child_spec {
  std::vector<std::string> argv;  // argv[0] is the program's path: PATH is not searched (find_in_path)
  // "NAME=value" entries; nullopt: this process's environment as it is at the start.
  std::optional<std::vector<std::string>> environment;

  child_stream stdin_from = child_stream::discard;
  child_stream stdout_to = child_stream::capture;
  child_stream stderr_to = child_stream::discard;
  std::filesystem::path stdout_path;  // non-empty: created or truncated, and stdout goes there
  std::filesystem::path stderr_path;  // non-empty: likewise for stderr
  std::vector<int> keep_fds;          // descriptors the program keeps across exec (CLOEXEC cleared)

  // The child leads its own process group, so a kill at the deadline reaches whatever it started
  // and a terminal's Ctrl-C reaches only this process (which then ends the child itself).
  bool own_process_group = true;
  // SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG): no orphan keeps a GPU busy.
  bool die_with_parent = false;

  // run_with_deadline only.
  std::chrono::duration<double> timeout{60};
  // At the deadline SIGTERM, then SIGKILL when the child is still alive this much later; 0: SIGKILL at once.
  std::chrono::duration<double> kill_grace{3};
  std::size_t output_limit = std::size_t{64} << 20;  // per captured stream; the rest is read and dropped
  // Set asynchronously (a signal handler) to end the child early, e.g. on Ctrl-C: same kill as a timeout.
  const volatile std::sig_atomic_t* cancel = nullptr;
};

struct child_result {
  child_end end = child_end::not_started;
  std::optional<int> exit_code;
  std::optional<int> signal;  // the signal that ended it (also after a kill at the deadline)
  double elapsed_s = 0;
  std::string output;        // captured stdout
  std::string error_output;  // captured stderr
  bool output_truncated = false;  // a captured stream went over output_limit
  std::string start_error;   // why it did not start ("/path: No such file or directory")

  // Exited with status 0.
  [[nodiscard]] bool succeeded() const { return end == child_end::exited && exit_code == 0; }
  // "exited with status 3", "was killed by signal 9 (Killed)", "timed out after 30 s (killed)",
  // "was cancelled (killed)", "did not start: /x: No such file or directory".
  [[nodiscard]] std::string describe() const;
};

// Starts the child, waits for it while reading what it captures, and ends it (the process group
// when it has one) at the deadline or on cancel. Calls on_tick about every 200 ms meanwhile. A
// leader that did not exit cleanly takes its process group with it. Never throws for anything
// the child does; a child that cannot be started is end = not_started with start_error.
[[nodiscard]] child_result run_with_deadline(const child_spec& spec, const std::function<void()>& on_tick = {});

// Starts the child and returns its pid without waiting for it (the caller reaps it). A program
// that cannot be executed exits with status 127, as a shell reports it. `capture` is refused.
// Throws std::runtime_error when it cannot fork or open a named file.
[[nodiscard]] pid_t start_child(const child_spec& spec);

// Waits up to `limit` for `pid` to end: its wait status, or nullopt while it still runs (or when
// it is not a child of this process).
[[nodiscard]] std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds limit);

// A waitpid status in words: "exited with status 3", "was killed by signal 9 (Killed)".
[[nodiscard]] std::string describe_wait_status(int status);

// This process's environment with `overrides` replacing or adding variables (in that order).
[[nodiscard]] std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& overrides);

// The first executable `program` in $PATH (unset: /usr/local/bin:/usr/bin:/bin), or nullopt.
[[nodiscard]] std::optional<std::filesystem::path> find_in_path(std::string_view program);

}  // namespace hdb
