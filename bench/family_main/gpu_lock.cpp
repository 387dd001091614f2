#include "hdb/gpu_lock.hpp"

#include "hdb/util/process.hpp"  // unique_fd, errno_text

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>
#include <utility>

namespace hdb {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr std::chrono::milliseconds poll_interval{100};
constexpr std::size_t max_holder_bytes = 256;

// Opens (creating if needed) the lock file. O_NOFOLLOW: in /tmp another user could plant a
// symlink to one of our files, which the holder record would then overwrite. An existing file
// is opened without O_CREAT first, because with fs.protected_regular a sticky world-writable
// directory refuses O_CREAT on another user's file even when its mode allows writing. A file
// another user created read-only still locks: flock needs no write access.
int open_lock_file(const fs::path& path) {
  constexpr int flags = O_CLOEXEC | O_NOFOLLOW;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (const int fd = ::open(path.c_str(), O_RDWR | flags); fd >= 0) return fd;
    if (errno == EACCES) {
      if (const int fd = ::open(path.c_str(), O_RDONLY | flags); fd >= 0) return fd;
      throw std::runtime_error(errno_text("cannot open the GPU lock file " + path.string()));
    }
    if (errno != ENOENT) throw std::runtime_error(errno_text("cannot open the GPU lock file " + path.string()));
    if (const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | flags, 0666); fd >= 0) {
      // Every user's runs share the file: undo the umask so any of them can record itself.
      ::fchmod(fd, 0666);
      return fd;
    }
    if (errno != EEXIST) throw std::runtime_error(errno_text("cannot create the GPU lock file " + path.string()));
    // Another process created it between our two opens: open the existing one.
  }
  throw std::runtime_error("cannot open the GPU lock file " + path.string() + ": it keeps disappearing");
}

// "<pid> <program>\n" for waiters. Best effort: without it a waiter cannot name the holder, and
// the lock itself is unaffected (a read-only descriptor cannot record anything).
void record_holder(int fd, const std::string& program) noexcept {
  const std::string text = std::to_string(::getpid()) + " " + program + "\n";
  if (::ftruncate(fd, 0) != 0) return;
  const auto written = ::pwrite(fd, text.data(), text.size(), 0);
  static_cast<void>(written);
}

// "pid 1234 (hdbench-copy)" from the holder record, or "another process" when it says nothing
// usable (not yet written, or written by something else). Only printable text is echoed.
std::string describe_holder(int fd) {
  char buffer[max_holder_bytes] = {};
  const auto n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return "another process";
  const std::string record(buffer, static_cast<std::size_t>(n));
  const auto space = record.find(' ');
  const std::string pid = record.substr(0, space);
  const bool digits = std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (pid.empty() || space == std::string::npos || !digits) {
    return "another process";
  }
  std::string program;
  for (const char c : record.substr(space + 1)) {
    if (c == '\n') break;
    program += (c >= ' ' && c <= '~') ? c : '?';
  }
  return "pid " + pid + (program.empty() ? "" : " (" + program + ")");
}

std::string gpu_name(const gpu_lock_target& gpu) {
  return "GPU " + std::to_string(gpu.index) + " (" + gpu.uuid + ")";
}

long long seconds_left(clock_type::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::seconds>(deadline - clock_type::now());
  return std::max<long long>(0, left.count());
}

}  // namespace

fs::path default_gpu_lock_dir() {
  // World-writable (normally sticky 1777) means every user of the node can lock there.
  struct stat info {};
  if (::stat("/run/lock", &info) == 0 && S_ISDIR(info.st_mode) && (info.st_mode & S_IWOTH) != 0) return "/run/lock";
  return "/tmp";
}

fs::path gpu_lock_path(const fs::path& dir, const std::string& uuid) {
  if (uuid.empty()) throw std::invalid_argument("a GPU lock needs the GPU's UUID");
  std::string name = uuid;
  for (char& c : name) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return dir / ("hdbench-gpu-" + name + ".lock");
}

gpu_locks::gpu_locks(std::vector<gpu_lock_target> gpus, std::chrono::seconds timeout, std::string program,
                     std::ostream& log, fs::path dir) {
  std::sort(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.uuid < b.uuid; });
  gpus.erase(std::unique(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) { return a.uuid == b.uuid; }),
             gpus.end());
  const auto deadline = clock_type::now() + timeout;
  fds_.reserve(gpus.size());  // so that handing a locked descriptor over cannot throw
  uuids_.reserve(gpus.size());
  try {
    for (const auto& gpu : gpus) {
      const auto path = gpu_lock_path(dir, gpu.uuid);
      unique_fd fd(open_lock_file(path));
      int busy_polls = 0;
      while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) throw std::runtime_error(errno_text("cannot lock " + path.string()));
        if (timeout.count() == 0) {
          throw gpu_busy_error(gpu_name(gpu) + " is being measured by " + describe_holder(fd.get()) +
                               "; not waiting (lock timeout 0 s). Lock file: " + path.string());
        }
        if (clock_type::now() >= deadline) {
          throw gpu_busy_error(gpu_name(gpu) + " is still being measured by " + describe_holder(fd.get()) + " after " +
                               std::to_string(timeout.count()) + " s; giving up. Lock file: " + path.string());
        }
        // Announced after one poll: by then the holder has recorded itself, and a lock that frees
        // within a poll is not worth a line.
        if (++busy_polls == 2) {
          log << program << ": " << gpu_name(gpu) << " is being measured by " << describe_holder(fd.get())
              << "; waiting up to " << seconds_left(deadline) << " s\n"
              << std::flush;
        }
        std::this_thread::sleep_for(poll_interval);
      }
      record_holder(fd.get(), program);
      fds_.push_back(fd.release());
      uuids_.push_back(gpu.uuid);
    }
  } catch (...) {
    release();
    throw;
  }
}

gpu_locks::~gpu_locks() { release(); }

gpu_locks::gpu_locks(gpu_locks&& other) noexcept
    : fds_(std::exchange(other.fds_, {})), uuids_(std::exchange(other.uuids_, {})) {}

gpu_locks& gpu_locks::operator=(gpu_locks&& other) noexcept {
  if (this != &other) {
    release();
    fds_ = std::exchange(other.fds_, {});
    uuids_ = std::exchange(other.uuids_, {});
  }
  return *this;
}

void gpu_locks::release() noexcept {
  // Closing the last descriptor of the open file drops its flock.
  for (auto it = fds_.rbegin(); it != fds_.rend(); ++it) ::close(*it);
  fds_.clear();
  uuids_.clear();
}

}  // namespace hdb
