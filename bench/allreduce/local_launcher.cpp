#include "local_launcher.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/util/process.hpp"
#include "hdb/util/units.hpp"
#include "hdb/sizes.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hdb::allreduce {
namespace {

using clock = std::chrono::steady_clock;

bool write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);  // a dead peer must not SIGPIPE us
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

int parse_field(const std::string& flag, const std::string& text, std::string_view field) {
  int value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() || value < 0) {
    throw usage_error("bad value for --" + flag + ": '" + text + "' (internal flag: FD,RANK,WORLD,DEVICE)");
  }
  return value;
}

}  // namespace

std::string format_worker_identity(const worker_identity& id) {
  return std::to_string(id.fd) + "," + std::to_string(id.rank) + "," + std::to_string(id.world) + "," +
         std::to_string(id.device);
}

worker_identity parse_worker_identity(const std::string& flag, const std::string& text) {
  std::vector<int> fields;
  for (const std::string& item : split_list(text)) fields.push_back(parse_field(flag, text, item));
  if (fields.size() != 4 || fields[1] >= fields[2]) {
    throw usage_error("bad value for --" + flag + ": '" + text + "' (internal flag: FD,RANK,WORLD,DEVICE)");
  }
  return {fields[0], fields[1], fields[2], fields[3]};
}

const std::vector<std::pair<std::string, std::string>>& forced_environment() {
  static const std::vector<std::pair<std::string, std::string>> env = {
      {"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}};
  return env;
}

local_group::local_group(const worker_launch& launch) {
  auto overrides = launch.environment;
  for (const auto& kv : forced_environment()) overrides.push_back(kv);
  child_spec spec;
  spec.environment = environment_with(overrides);
  spec.stdin_from = child_stream::inherit;
  spec.stdout_to = child_stream::to_stderr;  // the driver's stdout is the benchmark table
  spec.stderr_to = child_stream::inherit;
  spec.own_process_group = false;  // in the driver's group: whatever ends that group ends the ranks
  spec.die_with_parent = true;
  const int world = static_cast<int>(launch.devices.size());
  for (int rank = 0; rank < world; ++rank) {
    int sockets[2] = {-1, -1};
    // CLOEXEC on both ends: no worker inherits another worker's socket.
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
      kill_all();
      throw rank_lost("cannot create a socket for rank " + std::to_string(rank) + ": " + std::strerror(errno));
    }
    unique_fd ours(sockets[0]);
    const unique_fd theirs(sockets[1]);
    const worker_identity identity{theirs.get(), rank, world, launch.devices[static_cast<std::size_t>(rank)]};
    spec.argv = {launch.executable};
    spec.argv.insert(spec.argv.end(), launch.arguments.begin(), launch.arguments.end());
    spec.argv.push_back(launch.worker_flag + "=" + format_worker_identity(identity));
    spec.keep_fds = {theirs.get()};  // this one end survives exec
    pid_t pid = -1;
    try {
      pid = start_child(spec);
    } catch (const std::exception& e) {
      kill_all();
      throw rank_lost("cannot start rank " + std::to_string(rank) + ": " + e.what());
    }
    workers_.push_back({pid, ours.release(), identity.device});
  }
}

local_group::~local_group() {
  if (!lost_) {
    command quit;
    quit.kind = command_kind::quit;
    for (const worker& w : workers_) static_cast<void>(write_all(w.fd, &quit, sizeof(quit)));
    for (worker& w : workers_) {
      if (reap_within(w.pid, std::chrono::milliseconds(5000))) w.pid = -1;
    }
  }
  kill_all();
}

std::vector<pid_t> local_group::pids() const {
  std::vector<pid_t> out;
  for (const worker& w : workers_) out.push_back(w.pid);
  return out;
}

std::string local_group::name(std::size_t rank) const {
  return "rank " + std::to_string(rank) + " (GPU " + std::to_string(workers_[rank].device) + ", pid " +
         std::to_string(workers_[rank].pid) + ")";
}

void local_group::kill_all() noexcept {
  for (worker& w : workers_) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGKILL);
      static_cast<void>(reap_within(w.pid, std::chrono::milliseconds(10000)));
      w.pid = -1;
    }
    if (w.fd >= 0) close(w.fd);
    w.fd = -1;
  }
}

void local_group::lose(const std::string& reason) {
  lost_ = true;
  kill_all();
  throw rank_lost(reason);
}

std::vector<rank_reply> local_group::exchange(const command& cmd, std::chrono::milliseconds timeout) {
  if (lost_) throw rank_lost("the worker processes were lost earlier");
  for (std::size_t r = 0; r < workers_.size(); ++r) {
    if (!write_all(workers_[r].fd, &cmd, sizeof(cmd))) {
      const auto status = reap_within(workers_[r].pid, std::chrono::milliseconds(1000));
      if (status) workers_[r].pid = -1;
      lose(name(r) + " is gone (" + (status ? describe_wait_status(*status) : "its socket closed") + ") before " +
           std::string(to_string(cmd.kind)));
    }
  }
  std::vector<rank_reply> replies(workers_.size());
  std::vector<std::size_t> received(workers_.size(), 0);
  const auto deadline = clock::now() + timeout;
  while (true) {
    std::vector<pollfd> waiting;
    std::vector<std::size_t> ranks;
    for (std::size_t r = 0; r < workers_.size(); ++r) {
      if (received[r] < sizeof(rank_reply)) {
        waiting.push_back({workers_[r].fd, POLLIN, 0});
        ranks.push_back(r);
      }
    }
    if (waiting.empty()) return replies;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    const int ready = left.count() <= 0 ? 0 : poll(waiting.data(), waiting.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::string hung;
      for (std::size_t r : ranks) hung += (hung.empty() ? "" : ", ") + name(r);
      lose(hung + " did not answer '" + std::string(to_string(cmd.kind)) + "' within " + format_seconds(std::chrono::duration<double>(timeout).count()) +
           " (watchdog); the workers were killed");
    }
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      if (waiting[i].revents == 0) continue;
      const std::size_t r = ranks[i];
      auto* into = reinterpret_cast<char*>(&replies[r]) + received[r];
      const ssize_t n = ::recv(workers_[r].fd, into, sizeof(rank_reply) - received[r], 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const auto status = reap_within(workers_[r].pid, std::chrono::milliseconds(2000));
        if (status) workers_[r].pid = -1;
        lose(name(r) + " died during '" + std::string(to_string(cmd.kind)) + "': " +
             (status ? describe_wait_status(*status) : std::string("its socket closed")));
      }
      received[r] += static_cast<std::size_t>(n);
    }
  }
}

std::optional<command> fd_channel::receive() {
  command cmd;
  auto* into = reinterpret_cast<char*>(&cmd);
  std::size_t got = 0;
  while (got < sizeof(cmd)) {
    const ssize_t n = ::recv(fd_, into + got, sizeof(cmd) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  return cmd;
}

void fd_channel::send(const rank_reply& reply) {
  if (!write_all(fd_, &reply, sizeof(reply))) throw std::runtime_error("the driver's socket closed");
}

}  // namespace hdb::allreduce
