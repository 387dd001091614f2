#pragma once
// Host work split over a fixed crew of threads: the CPU's own copies and fills that the copy and
// overlap families time beside the GPU's (copy's host_memcpy, overlap's host_fill). Host-only,
// no CUDA, so it is unit-tested without a GPU (tests/common/host_parallel_test.cpp).
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hdb {

struct byte_range {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] std::size_t size() const noexcept { return end - begin; }
};

// `bytes` as `parts` contiguous ranges in order, covering every byte once. Every boundary but
// the end is a multiple of `align` (a page: no two threads write one page), and the ranges are
// as even as that allows; when `align` leaves fewer pieces than parts, the last ranges are empty.
[[nodiscard]] std::vector<byte_range> split_bytes(std::size_t bytes, int parts, std::size_t align);

// `threads` threads that run one job together: run(job) calls job(i) once for each i in
// 0..threads-1, job(0) on the calling thread and the others on threads started by the constructor
// (so starting a thread is never inside a timed run), and returns when every call has returned;
// an exception thrown by one call is rethrown by run. The threads inherit the CPU affinity of the
// thread that constructs the crew.
class thread_crew {
 public:
  explicit thread_crew(int threads);
  ~thread_crew();
  thread_crew(const thread_crew&) = delete;
  thread_crew& operator=(const thread_crew&) = delete;

  void run(const std::function<void(int)>& job);
  [[nodiscard]] int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

 private:
  void serve(int index);

  std::mutex mutex_;
  std::condition_variable started_;
  std::condition_variable finished_;
  const std::function<void(int)>* job_ = nullptr;
  std::uint64_t generation_ = 0;  // one per run: a worker runs each job once
  int busy_ = 0;                  // workers still in the current job
  bool closing_ = false;
  std::exception_ptr failure_;
  std::vector<std::thread> workers_;  // last: started once the state above exists
};

}  // namespace hdb
