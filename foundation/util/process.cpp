#include "hdb/util/process.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/util/units.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace hdb {
namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::chrono::milliseconds tick{200};
// Without a pidfd (kernel before 5.3) the end of a child that captures nothing is seen by polling.
constexpr int fallback_poll_ms = 20;

// A descriptor above 0, 1 and 2, so that wiring the child's standard streams never overwrites one
// that is still to be wired (a parent started with a closed stdout gets fd 1 from open()).
unique_fd above_standard(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return unique_fd(fd);
  unique_fd low(fd);
  return unique_fd(::fcntl(low.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
}

unique_fd open_for_child(const std::filesystem::path& path, int flags) {
  unique_fd fd = above_standard(::open(path.c_str(), flags | O_CLOEXEC, 0644));
  if (!fd) throw std::runtime_error(errno_text("cannot open " + path.string()));
  return fd;
}

struct pipe_ends {
  unique_fd read, write;
};

pipe_ends make_pipe() {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("pipe"));
  return {above_standard(fds[0]), above_standard(fds[1])};
}

// What the child's fds 0, 1 and 2 become: a descriptor of the parent's (-1: left as inherited).
struct wiring {
  unique_fd in, out, err;
  bool out_to_stderr = false;
  pipe_ends out_pipe, err_pipe;  // read ends stay with the parent
};

wiring wire(const child_spec& spec, bool allow_capture) {
  wiring w;
  if (spec.stdin_from != child_stream::inherit) w.in = open_for_child("/dev/null", O_RDONLY);
  const auto output = [&](child_stream to, const std::filesystem::path& path, unique_fd& fd, pipe_ends& pipe) {
    if (!path.empty()) {
      fd = open_for_child(path, O_WRONLY | O_CREAT | O_TRUNC);
    } else if (to == child_stream::discard) {
      fd = open_for_child("/dev/null", O_WRONLY);
    } else if (to == child_stream::capture) {
      if (!allow_capture) throw std::invalid_argument("start_child cannot capture output: use run_with_deadline");
      pipe = make_pipe();
      fd = unique_fd(pipe.write.release());
    }
  };
  output(spec.stdout_to, spec.stdout_path, w.out, w.out_pipe);
  w.out_to_stderr = spec.stdout_path.empty() && spec.stdout_to == child_stream::to_stderr;
  output(spec.stderr_to, spec.stderr_path, w.err, w.err_pipe);
  return w;
}

// In the child: `from` becomes `to`, without close-on-exec.
void place(int from, int to) {
  if (from < 0) return;
  if (from == to) {
    ::fcntl(to, F_SETFD, 0);
  } else {
    ::dup2(from, to);
  }
}

// What the child needs, prepared by the parent (the child shares its memory until exec).
struct spawn_args {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const wiring* w = nullptr;
  const child_spec* spec = nullptr;
  pid_t parent = 0;
  sigset_t mask{};     // the caller's signal mask, restored just before exec
  int exec_errno = 0;  // set by the child when exec fails
};

// Runs on its own stack in the parent's address space (CLONE_VM | CLONE_VFORK, as glibc's
// posix_spawn does), so a CUDA process's mappings are never copied or shared copy-on-write.
// System calls only, no allocation: another thread of the parent may hold the allocator's lock.
int child_main(void* raw) {
  auto& a = *static_cast<spawn_args*>(raw);
  const child_spec& spec = *a.spec;
  if (spec.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != a.parent) ::_exit(127);
  }
  if (spec.own_process_group) ::setpgid(0, 0);
  // A handler of the parent must never run here; INT, TERM and PIPE start at their defaults even
  // where the parent ignores them (the harness does, the family binaries must not).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction old {};
    if (sig == SIGKILL || sig == SIGSTOP || ::sigaction(sig, nullptr, &old) != 0) continue;
    const bool reset = sig == SIGINT || sig == SIGTERM || sig == SIGPIPE;
    if (old.sa_handler != SIG_DFL && (old.sa_handler != SIG_IGN || reset)) ::sigaction(sig, &default_action, nullptr);
  }
  place(a.w->in.get(), STDIN_FILENO);
  if (a.w->out_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  place(a.w->out.get(), STDOUT_FILENO);
  place(a.w->err.get(), STDERR_FILENO);
  for (const int fd : spec.keep_fds) ::fcntl(fd, F_SETFD, 0);
  ::sigprocmask(SIG_SETMASK, &a.mask, nullptr);
  ::execve(a.argv[0], a.argv, a.envp);
  a.exec_errno = errno;
  ::_exit(127);
}

struct spawned {
  pid_t pid = -1;
  int exec_errno = 0;  // non-zero: exec failed and the child has exited with status 127
};

spawned spawn(const child_spec& spec, const wiring& w) {
  if (spec.argv.empty()) throw std::invalid_argument("a child needs argv[0]");
  std::vector<char*> argv;
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> env;
  if (spec.environment) {
    for (const auto& entry : *spec.environment) env.push_back(const_cast<char*>(entry.c_str()));
    env.push_back(nullptr);
  }
  spawn_args args;
  args.argv = argv.data();
  args.envp = spec.environment ? env.data() : environ;
  args.w = &w;
  args.spec = &spec;
  args.parent = ::getpid();

  constexpr std::size_t stack_bytes = std::size_t{256} << 10;
  void* stack = ::mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw std::runtime_error(errno_text("mmap (child stack)"));
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &args.mask);
  // Returns once the child has called exec or exited.
  const pid_t pid = ::clone(child_main, static_cast<char*>(stack) + stack_bytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &args.mask, nullptr);
  ::munmap(stack, stack_bytes);
  if (pid < 0) throw std::runtime_error(std::string("clone: ") + std::strerror(clone_errno));
  return {pid, args.exec_errno};
}

void signal_child(pid_t pid, bool group, int sig) {
  if (!group || ::kill(-pid, sig) != 0) ::kill(pid, sig);
}

struct capture {
  unique_fd fd;
  std::string* into = nullptr;
};

// Reads what is there (non-blocking); closes the descriptor at end of file.
void drain(capture& c, std::size_t limit, bool& truncated) {
  char buffer[8192];
  while (c.fd) {
    const auto n = ::read(c.fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      const auto room = limit - std::min(limit, c.into->size());
      const auto keep = std::min(room, static_cast<std::size_t>(n));
      c.into->append(buffer, keep);
      if (keep < static_cast<std::size_t>(n)) truncated = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) c.fd.reset();  // end of file
    return;                    // or EAGAIN: nothing more for now
  }
}

int milliseconds_until(double seconds_left) {
  if (!(seconds_left > 0)) return 0;
  return static_cast<int>(std::min(std::ceil(seconds_left * 1000), 3'600'000.0));
}

}  // namespace

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

void unique_fd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* text = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + (text ? " (" + std::string(text) + ")" : "");
  }
  return "stopped (status " + std::to_string(status) + ")";
}

std::string child_result::describe() const {
  switch (end) {
    case child_end::not_started: return "did not start: " + start_error;
    case child_end::timed_out: return "timed out after " + format_seconds(elapsed_s) + " (killed)";
    case child_end::cancelled: return "was cancelled (killed)";
    case child_end::exited: return "exited with status " + std::to_string(exit_code.value_or(-1));
    case child_end::signalled: {
      const int sig = signal.value_or(0);
      const char* text = ::strsignal(sig);
      return "was killed by signal " + std::to_string(sig) + (text ? " (" + std::string(text) + ")" : "");
    }
  }
  return "?";
}

pid_t start_child(const child_spec& spec) {
  const wiring w = wire(spec, /*allow_capture=*/false);
  return spawn(spec, w).pid;  // an exec failure shows when the caller reaps it (status 127)
}

child_result run_with_deadline(const child_spec& spec, const std::function<void()>& on_tick) {
  child_result result;
  const auto start = clock_type::now();
  pid_t pid = -1;
  capture out, err;
  try {
    wiring w = wire(spec, /*allow_capture=*/true);
    const auto child = spawn(spec, w);
    pid = child.pid;
    if (child.exec_errno != 0) {  // the child has exited already
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result.start_error = spec.argv[0] + ": " + std::strerror(child.exec_errno);
      return result;
    }
    out = {std::move(w.out_pipe.read), &result.output};
    err = {std::move(w.err_pipe.read), &result.error_output};
  } catch (const std::exception& e) {
    result.start_error = e.what();
    return result;
  }
  for (auto* c : {&out, &err}) {
    if (c->fd) ::fcntl(c->fd.get(), F_SETFL, O_NONBLOCK);
  }
#ifdef SYS_pidfd_open
  const unique_fd exited(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // readable once the child ends
#else
  const unique_fd exited;
#endif

  const double timeout_s = spec.timeout.count();
  const double grace_s = spec.kill_grace.count();
  double kill_at = -1;  // elapsed seconds at which SIGKILL follows the SIGTERM; < 0: none pending
  bool stopping = false;
  auto next_tick = start + tick;
  int wait_status = 0;
  bool reaped = false;
  while (!reaped) {
    const pid_t done = ::waitpid(pid, &wait_status, WNOHANG);
    if (done == pid) {
      reaped = true;
      break;
    }
    if (done < 0 && errno != EINTR) break;  // not our child any more: nothing to wait for
    const auto now = clock_type::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (!stopping) {
      const bool cancelled = spec.cancel != nullptr && *spec.cancel != 0;
      if (cancelled || elapsed >= timeout_s) {
        result.end = cancelled ? child_end::cancelled : child_end::timed_out;
        stopping = true;
        if (grace_s > 0) {
          signal_child(pid, spec.own_process_group, SIGTERM);
          kill_at = elapsed + grace_s;
        } else {
          signal_child(pid, spec.own_process_group, SIGKILL);
        }
      }
    } else if (kill_at >= 0 && elapsed >= kill_at) {
      signal_child(pid, spec.own_process_group, SIGKILL);
      kill_at = -1;
    }
    if (on_tick && now >= next_tick) {
      on_tick();
      next_tick = clock_type::now() + tick;
    }

    // Sleep until the child writes or ends, or the next thing to do.
    int wait_ms = !stopping      ? milliseconds_until(timeout_s - elapsed)
                  : kill_at >= 0 ? milliseconds_until(kill_at - elapsed)
                                 : 3'600'000;
    if (on_tick) wait_ms = std::min(wait_ms, milliseconds_until(std::chrono::duration<double>(next_tick - now).count()));
    if (spec.cancel != nullptr) wait_ms = std::min(wait_ms, static_cast<int>(tick.count()));
    if (!exited) wait_ms = std::min(wait_ms, fallback_poll_ms);
    std::vector<pollfd> fds;
    for (auto* c : {&out, &err}) {
      if (c->fd) fds.push_back({c->fd.get(), POLLIN, 0});
    }
    if (exited) fds.push_back({exited.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), wait_ms) > 0) {
      drain(out, spec.output_limit, result.output_truncated);
      drain(err, spec.output_limit, result.output_truncated);
    }
  }
  result.elapsed_s = std::chrono::duration<double>(clock_type::now() - start).count();
  // Everything the child wrote is in the pipes now; a helper it left behind may hold them open.
  drain(out, spec.output_limit, result.output_truncated);
  drain(err, spec.output_limit, result.output_truncated);

  if (reaped && WIFEXITED(wait_status)) result.exit_code = WEXITSTATUS(wait_status);
  if (reaped && WIFSIGNALED(wait_status)) result.signal = WTERMSIG(wait_status);
  if (result.end == child_end::not_started) result.end = result.signal ? child_end::signalled : child_end::exited;
  // Whatever the leader left behind (helpers of a crashed or killed program) goes with it.
  if (spec.own_process_group && !result.succeeded()) ::kill(-pid, SIGKILL);
  return result;
}

std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = clock_type::now() + limit;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if ((r < 0 && errno != EINTR) || clock_type::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(overrides.begin(), overrides.end(), [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env.emplace_back(entry);
  }
  // A later override of the same name wins (forced variables come last).
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    const auto& [name, value] = overrides[i];
    const bool overridden = std::any_of(overrides.begin() + static_cast<std::ptrdiff_t>(i) + 1, overrides.end(),
                                        [&](const auto& kv) { return kv.first == name; });
    if (!overridden) env.push_back(name + "=" + value);
  }
  return env;
}

std::optional<std::filesystem::path> find_in_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split_nonempty(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    const auto candidate = std::filesystem::path(dir) / program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace hdb
