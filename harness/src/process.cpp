#include "hdb/harness/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace hdb {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::chrono::milliseconds tick{200};

// posix_spawn file actions and attributes, destroyed on scope exit.
class spawn_setup {
 public:
  spawn_setup() {
    ::posix_spawn_file_actions_init(&actions_);
    ::posix_spawnattr_init(&attr_);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
  ~spawn_setup() {
    ::posix_spawn_file_actions_destroy(&actions_);
    ::posix_spawnattr_destroy(&attr_);
  }
  posix_spawn_file_actions_t* actions() { return &actions_; }
  posix_spawnattr_t* attr() { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_{};
  posix_spawnattr_t attr_{};
};

// The read end of the capture pipe; closed on scope exit.
class pipe_pair {
 public:
  pipe_pair() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  pipe_pair(const pipe_pair&) = delete;
  pipe_pair& operator=(const pipe_pair&) = delete;
  ~pipe_pair() {
    close_write();
    if (fds_[0] >= 0) ::close(fds_[0]);
  }
  [[nodiscard]] bool ok() const { return fds_[0] >= 0; }
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_write() {
    if (fds_[1] >= 0) ::close(std::exchange(fds_[1], -1));
  }

 private:
  int fds_[2] = {-1, -1};
};

void configure(spawn_setup& setup, const process_spec& spec, const pipe_pair* capture) {
  auto* actions = setup.actions();
  if (capture != nullptr) {
    ::posix_spawn_file_actions_adddup2(actions, capture->write_end(), STDOUT_FILENO);
  } else {
    ::posix_spawn_file_actions_addopen(actions, STDOUT_FILENO, spec.stdout_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  const auto err = spec.stderr_path.empty() ? std::filesystem::path("/dev/null") : spec.stderr_path;
  ::posix_spawn_file_actions_addopen(actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Own process group (pgid = child pid); default dispositions for the signals the CLI handles.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : {SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, sig);
  ::posix_spawnattr_setpgroup(setup.attr(), 0);
  ::posix_spawnattr_setsigdefault(setup.attr(), &defaults);
  ::posix_spawnattr_setflags(setup.attr(), POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
}

void drain(int fd, std::string& into) {
  char buffer[4096];
  for (;;) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EOF or EAGAIN
  }
}

// Waits up to `budget` for the child, reading captured output meanwhile. Returns true once reaped.
bool wait_for(pid_t pid, int& wait_status, int capture_fd, std::string& output, std::chrono::milliseconds budget) {
  const auto until = clock_type::now() + budget;
  do {
    const pid_t done = ::waitpid(pid, &wait_status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (capture_fd >= 0) {
      pollfd p{capture_fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) drain(capture_fd, output);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } while (clock_type::now() < until);
  return false;
}

}  // namespace

process_result run_process(const process_spec& spec, const std::function<void()>& on_tick) {
  process_result result;
  std::vector<char*> argv;
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  std::optional<pipe_pair> capture;
  if (spec.stdout_path.empty()) {
    capture.emplace();
    if (!capture->ok()) {
      result.start_error = std::string("pipe: ") + std::strerror(errno);
      return result;
    }
    ::fcntl(capture->read_end(), F_SETFL, O_NONBLOCK);
  }
  spawn_setup setup;
  configure(setup, spec, capture ? &*capture : nullptr);

  const auto start = clock_type::now();
  pid_t pid = 0;
  if (const int rc = ::posix_spawn(&pid, argv[0], setup.actions(), setup.attr(), argv.data(), environ); rc != 0) {
    result.start_error = spec.argv[0] + ": " + std::strerror(rc);
    return result;
  }
  if (capture) capture->close_write();  // EOF arrives when the child (and its children) close theirs
  const int capture_fd = capture ? capture->read_end() : -1;

  int wait_status = 0;
  bool reaped = false;
  while (!reaped) {
    reaped = wait_for(pid, wait_status, capture_fd, result.output, tick);
    if (reaped) break;
    if (on_tick) on_tick();
    const bool cancelled = spec.cancel != nullptr && *spec.cancel != 0;
    if (cancelled || clock_type::now() - start > spec.timeout) {
      result.end = cancelled ? process_end::cancelled : process_end::timed_out;
      ::kill(-pid, SIGTERM);
      const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(spec.kill_grace);
      reaped = wait_for(pid, wait_status, capture_fd, result.output, grace);
      if (!reaped) {
        ::kill(-pid, SIGKILL);
        reaped = wait_for(pid, wait_status, capture_fd, result.output, std::chrono::hours(1));
      }
    }
  }
  result.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  if (capture_fd >= 0) drain(capture_fd, result.output);

  if (WIFEXITED(wait_status)) result.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) result.signal = WTERMSIG(wait_status);
  if (result.end == process_end::not_started) {
    result.end = result.signal ? process_end::signalled : process_end::exited;
  }
  // Whatever the leader left behind (helpers of a crashed or killed binary) goes with it.
  if (result.end != process_end::exited || result.exit_code != 0) ::kill(-pid, SIGKILL);
  return result;
}

}  // namespace hdb
