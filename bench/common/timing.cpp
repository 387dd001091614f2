#include "hdb/timing.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <string>

namespace hdb {

spin_gate::spin_gate(std::chrono::milliseconds timeout) : timeout_(timeout) {
  HDB_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int), cudaHostAllocMapped));
  flags_[0] = 1;
  flags_[1] = 0;
}

spin_gate::~spin_gate() {
  if (flags_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaFreeHost(flags_));
}

void spin_gate::hold(cudaStream_t stream) {
  std::atomic_ref<int>(flags_[0]).store(0, std::memory_order_release);
  std::atomic_ref<int>(flags_[1]).store(0, std::memory_order_release);
  int* device_flags = nullptr;
  HDB_CUDA_CALL(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), flags_, 0));
  const auto timeout_ns = static_cast<std::uint64_t>(timeout_.count()) * 1'000'000ull;
  kernels::launch_spin_gate(device_flags, device_flags + 1, timeout_ns, stream);
}

void spin_gate::release() noexcept { std::atomic_ref<int>(flags_[0]).store(1, std::memory_order_release); }

void spin_gate::check() const {
  if (std::atomic_ref<int>(flags_[1]).load(std::memory_order_acquire) != 0) {
    throw gate_timeout("spin gate timed out after " + std::to_string(timeout_.count()) +
                       " ms before the host released it (enqueueing the batch blocked or took too long); "
                       "no number is reported for this batch");
  }
}

batch_timing time_batch(std::span<const cudaStream_t> streams, spin_gate* gate,
                        const std::function<void()>& enqueue) {
  const event start;
  std::vector<event> stops(streams.size());
  if (gate != nullptr) gate->hold(streams[0]);
  start.record(streams[0]);
  for (std::size_t i = 1; i < streams.size(); ++i) HDB_CUDA_CALL(cudaStreamWaitEvent(streams[i], start.get(), 0));
  try {
    enqueue();
  } catch (...) {
    if (gate != nullptr) gate->release();  // never leave the device spinning behind an exception
    throw;
  }
  for (std::size_t i = 0; i < streams.size(); ++i) stops[i].record(streams[i]);
  if (gate != nullptr) gate->release();
  batch_timing timing;
  for (const event& stop : stops) {
    stop.synchronize();
    timing.per_stream_ms.push_back(elapsed_ms(start, stop));
  }
  if (gate != nullptr) gate->check();
  timing.max_ms = *std::max_element(timing.per_stream_ms.begin(), timing.per_stream_ms.end());
  return timing;
}

}  // namespace hdb
