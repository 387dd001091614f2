#include "hdb/host_parallel.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hdb {

std::vector<byte_range> split_bytes(std::size_t bytes, int parts, std::size_t align) {
  if (parts < 1 || align == 0) throw std::invalid_argument("split_bytes: parts and align must be positive");
  const auto count = static_cast<std::size_t>(parts);
  const std::size_t pieces = (bytes + align - 1) / align;  // whole aligned pieces, the last one short
  std::vector<byte_range> ranges;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < count; ++i) {
    // Each part gets pieces / count pieces, the first pieces % count parts one more: the counts
    // differ by one at most, and when there are fewer pieces than parts the first parts take them.
    const std::size_t taken = (i + 1) * (pieces / count) + std::min(i + 1, pieces % count);
    const std::size_t end = std::min(bytes, taken * align);
    ranges.push_back({begin, i + 1 == count ? bytes : std::max(begin, end)});
    begin = ranges.back().end;
  }
  return ranges;
}

thread_crew::thread_crew(int threads) {
  if (threads < 1) throw std::invalid_argument("thread_crew: " + std::to_string(threads) + " threads");
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { serve(i); });
}

thread_crew::~thread_crew() {
  {
    const std::lock_guard lock(mutex_);
    closing_ = true;
  }
  started_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void thread_crew::run(const std::function<void(int)>& job) {
  {
    const std::lock_guard lock(mutex_);
    job_ = &job;
    busy_ = static_cast<int>(workers_.size());
    failure_ = nullptr;
    ++generation_;
  }
  started_.notify_all();
  std::exception_ptr own;
  try {
    job(0);
  } catch (...) {
    own = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [this] { return busy_ == 0; });
  job_ = nullptr;
  if (own) std::rethrow_exception(own);
  if (failure_) std::rethrow_exception(failure_);
}

void thread_crew::serve(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      started_.wait(lock, [&] { return closing_ || generation_ != seen; });
      if (closing_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr failed;
    try {
      (*job)(index);
    } catch (...) {
      failed = std::current_exception();
    }
    {
      const std::lock_guard lock(mutex_);
      if (failed && !failure_) failure_ = failed;
      --busy_;
    }
    finished_.notify_one();
  }
}

}  // namespace hdb
