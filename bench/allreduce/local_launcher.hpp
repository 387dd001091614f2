#pragma once
// Ranks as local processes: the driver re-executes its own binary once per GPU with a hidden
// worker flag and talks to each child over a socket pair. A child that dies (EOF on its socket) or
// does not answer in time is reported by name and pid, and the whole group is killed: the caller
// fails that case and starts a fresh group for the next one. Children die with the driver
// (PR_SET_PDEATHSIG), so a killed driver never leaves ranks spinning on a GPU.
#include "transport.hpp"

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace hdb::allreduce {

// Who a worker is, as the worker flag carries it: "FD,RANK,WORLD,DEVICE".
struct worker_identity {
  int fd = -1;
  int rank = 0;
  int world = 1;
  int device = 0;
};
[[nodiscard]] std::string format_worker_identity(const worker_identity& identity);
// Throws usage_error naming the flag for anything malformed.
[[nodiscard]] worker_identity parse_worker_identity(const std::string& flag, const std::string& text);

// The multicast-off variables every process of a multi-GPU run keeps (NVLink SHARP / multicast
// objects are not to be created on these machines).
[[nodiscard]] const std::vector<std::pair<std::string, std::string>>& forced_environment();

struct worker_launch {
  std::string executable;                 // usually /proc/self/exe
  std::vector<std::string> arguments;     // after argv[0], before the worker flag
  std::string worker_flag;                // "--allreduce-worker"; "=FD,RANK,WORLD,DEVICE" is appended
  std::vector<int> devices;               // one worker per entry; rank r drives devices[r]
  // Set in every worker (then forced_environment() on top): e.g. NCCL_P2P_DISABLE=1.
  std::vector<std::pair<std::string, std::string>> environment;
};

class local_group final : public rank_group {
 public:
  // Starts every worker; throws rank_lost when one cannot be started.
  explicit local_group(const worker_launch& launch);
  // Sends quit, gives the workers a moment to exit, then kills any that remain.
  ~local_group() override;
  local_group(const local_group&) = delete;
  local_group& operator=(const local_group&) = delete;

  [[nodiscard]] int size() const override { return static_cast<int>(workers_.size()); }
  std::vector<rank_reply> exchange(const command& cmd, std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::vector<pid_t> pids() const;

 private:
  struct worker {
    pid_t pid = -1;
    int fd = -1;
    int device = 0;
  };
  [[noreturn]] void lose(const std::string& reason);
  void kill_all() noexcept;
  [[nodiscard]] std::string name(std::size_t rank) const;

  std::vector<worker> workers_;
  bool lost_ = false;
};

// The worker's end of the socket.
class fd_channel final : public worker_channel {
 public:
  explicit fd_channel(int fd) : fd_(fd) {}
  std::optional<command> receive() override;
  void send(const rank_reply& reply) override;

 private:
  int fd_;
};

}  // namespace hdb::allreduce
