#pragma once
// One measurement per GPU at a time. Two hdbench processes on one GPU measure each other and
// both report plausible, wrong numbers; an advisory lock per GPU, keyed by its UUID (indices
// change with CUDA_VISIBLE_DEVICES, UUIDs do not), makes the second one wait or refuse.
//
// The lock is flock(2) on <dir>/hdbench-gpu-<uuid>.lock: the kernel drops it when the holder
// exits, however it exits (kill -9 included), so a crashed run never leaves a GPU locked. The
// holder writes "<pid> <program>" into the file so a waiter can say whom it waits for. Lock
// files are never deleted: removing one while another process waits on it would let a third
// process lock a fresh file and measure alongside the second.
#include <chrono>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace hdb {

// The GPU stayed busy for the whole timeout (or the timeout was 0). The message names the GPU
// and the holder; a family binary reports it on stderr and exits 2 (no usable GPU).
class gpu_busy_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct gpu_lock_target {
  int index = 0;     // CUDA index, for messages only
  std::string uuid;  // "GPU-..." (or "MIG-..."): what the lock is keyed by
};

// /run/lock when this process can create files there, else the temporary directory (/tmp).
// Every process on a node must pick the same directory for the lock to mean anything, so the
// choice depends only on the directory, never on the caller.
[[nodiscard]] std::filesystem::path default_gpu_lock_dir();

// <dir>/hdbench-gpu-<uuid>.lock; characters outside [A-Za-z0-9_-] (a MIG UUID's '/') become '_'.
// Throws std::invalid_argument for an empty UUID.
[[nodiscard]] std::filesystem::path gpu_lock_path(const std::filesystem::path& dir, const std::string& uuid);

// Holds the locks of a set of GPUs from construction to destruction. The GPUs are locked in
// ascending UUID order, so a run on {A,B} and a run on {B} (or on {B,A}) can never each hold one
// lock the other needs. A GPU still busy after a first 100 ms poll is announced on `log` with one
// line, and waited for until `timeout` (one deadline for the whole set; 0 = do not wait, and
// fail at once without a line on `log`: the error says it all). On timeout every lock taken
// so far is released and gpu_busy_error is thrown. Other failures (the lock file cannot be
// opened) throw std::runtime_error naming the file.
class gpu_locks {
 public:
  gpu_locks(std::vector<gpu_lock_target> gpus, std::chrono::seconds timeout, std::string program, std::ostream& log,
            std::filesystem::path dir = default_gpu_lock_dir());
  ~gpu_locks();
  gpu_locks(gpu_locks&& other) noexcept;
  gpu_locks& operator=(gpu_locks&& other) noexcept;
  gpu_locks(const gpu_locks&) = delete;
  gpu_locks& operator=(const gpu_locks&) = delete;

  // The UUIDs held, in the order they were locked (ascending, no duplicates).
  [[nodiscard]] const std::vector<std::string>& uuids() const noexcept { return uuids_; }

 private:
  void release() noexcept;

  std::vector<int> fds_;
  std::vector<std::string> uuids_;
};

}  // namespace hdb
