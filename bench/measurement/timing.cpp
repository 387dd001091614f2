#include "hdb/timing.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <string>

namespace hdb {

spin_gate::spin_gate(std::chrono::milliseconds timeout) : timeout_(timeout) {
  // Portable and mapped: one pair of flags that a spin kernel on any device of the node can
  // read (with unified addressing the host pointer is the device pointer everywhere).
  HDB_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  flags_[0] = 1;
  flags_[1] = 0;
}

spin_gate::~spin_gate() {
  if (flags_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaFreeHost(flags_));
}

void spin_gate::arm() noexcept {
  std::atomic_ref<int>(flags_[0]).store(0, std::memory_order_release);
  std::atomic_ref<int>(flags_[1]).store(0, std::memory_order_release);
}

void spin_gate::hold(cudaStream_t stream) {
  arm();
  add_hold(stream);
}

void spin_gate::add_hold(cudaStream_t stream) {
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
  // Events only time against events of their own device, so each device gets its own start,
  // recorded on its first stream right behind the gate; its other streams wait for that start.
  // One release then starts every device together.
  std::vector<int> stream_device;
  std::vector<int> devices;
  for (cudaStream_t s : streams) {
    stream_device.push_back(device_of(s));
    if (std::find(devices.begin(), devices.end(), stream_device.back()) == devices.end()) devices.push_back(stream_device.back());
  }
  // Every event exists before the first stream is held, so that only CUDA calls that enqueue
  // work sit between hold and release.
  std::vector<event> starts;
  for (int device : devices) starts.emplace_back(device);
  std::vector<event> stops;
  for (int d : stream_device) stops.emplace_back(d);
  std::vector<std::size_t> start_of_stream(streams.size());
  try {
    if (gate != nullptr) gate->arm();
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const auto first =
          static_cast<std::size_t>(std::find(stream_device.begin(), stream_device.end(), devices[k]) - stream_device.begin());
      if (gate != nullptr) gate->add_hold(streams[first]);
      starts[k].record(streams[first]);
      for (std::size_t i = 0; i < streams.size(); ++i) {
        if (stream_device[i] != devices[k]) continue;
        start_of_stream[i] = k;
        if (i != first) HDB_CUDA_CALL(cudaStreamWaitEvent(streams[i], starts[k].get(), 0));
      }
    }
    enqueue();
    for (std::size_t i = 0; i < streams.size(); ++i) stops[i].record(streams[i]);
  } catch (...) {
    // Once one stream is held, any failure (a second device's hold included) must release the
    // gate: never leave a device spinning until the timeout.
    if (gate != nullptr) gate->release();
    throw;
  }
  if (gate != nullptr) gate->release();
  batch_timing timing;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    stops[i].synchronize();
    timing.per_stream_ms.push_back(elapsed_ms(starts[start_of_stream[i]], stops[i]));
  }
  if (gate != nullptr) gate->check();
  timing.max_ms = *std::max_element(timing.per_stream_ms.begin(), timing.per_stream_ms.end());
  return timing;
}

}  // namespace hdb
