#pragma once
// Move-only owners of CUDA streams, events and graphs, and a guard that restores the current
// device.
#include "hdb/cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <functional>
#include <utility>

namespace hdb {

// Owns one CUDA runtime handle and destroys it exactly once, reporting (never throwing) a
// failure, since it runs in destructors.
template <class Handle, cudaError_t (*destroy)(Handle)>
class unique_handle {
 public:
  unique_handle() = default;
  explicit unique_handle(Handle handle) noexcept : handle_(handle) {}
  ~unique_handle() { reset(); }
  unique_handle(unique_handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  unique_handle& operator=(unique_handle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;

  [[nodiscard]] Handle get() const noexcept { return handle_; }

 private:
  void reset() noexcept {
    if (handle_ != nullptr) HDB_CUDA_CALL_NOTHROW(destroy(handle_));
    handle_ = nullptr;
  }
  Handle handle_ = nullptr;
};

// The device current on the calling thread.
[[nodiscard]] int current_device();

class stream {
 public:
  // Non-blocking by default: the stream never synchronises implicitly with the legacy default
  // stream, so a blocking cudaMemcpy elsewhere cannot distort what is timed here. A case that
  // studies that synchronisation passes cudaStreamDefault. Priority 0 is CUDA's default.
  // On the current device.
  stream();
  // On `device`; the current device is left as it was.
  explicit stream(int device, unsigned flags = cudaStreamNonBlocking, int priority = 0);
  [[nodiscard]] cudaStream_t get() const noexcept { return handle_.get(); }
  [[nodiscard]] int device() const noexcept { return device_; }
  void synchronize() const;

 private:
  int device_ = 0;
  unique_handle<cudaStream_t, cudaStreamDestroy> handle_;
};

// An event belongs to the device that was current when it was created, and can only be recorded
// on that device's streams and timed against that device's events.
// Timing events by default; cudaEventDisableTiming makes an ordering-only event (cheapest to
// record), cudaEventBlockingSync one whose wait sleeps instead of spinning.
class event {
 public:
  event();
  explicit event(int device, unsigned flags = cudaEventDefault);
  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_.get(); }
  [[nodiscard]] int device() const noexcept { return device_; }
  void record(cudaStream_t on) const;
  void synchronize() const;

 private:
  int device_ = 0;
  unique_handle<cudaEvent_t, cudaEventDestroy> handle_;
};

// The device a stream belongs to; the legacy and per-thread default streams belong to the
// current device.
[[nodiscard]] int device_of(cudaStream_t stream);

// Milliseconds between two recorded, completed events (device clock, ~0.5 us resolution).
[[nodiscard]] double elapsed_ms(const event& start, const event& stop);

using graph_handle = unique_handle<cudaGraph_t, cudaGraphDestroy>;
using graph_exec_handle = unique_handle<cudaGraphExec_t, cudaGraphExecDestroy>;

// What `enqueue` issues on `origin` (and on the streams it forks from it with events), captured
// in thread-local mode so another thread's CUDA calls cannot invalidate the capture. When
// `enqueue` throws, the capture is ended and its partial graph destroyed before the exception
// goes on, so the stream is usable again.
[[nodiscard]] graph_handle capture_graph(cudaStream_t origin, const std::function<void()>& enqueue);
// The executable form of `graph` (cudaGraphInstantiate, no flags).
[[nodiscard]] graph_exec_handle instantiate(const graph_handle& graph);

class device_scope {
 public:
  explicit device_scope(int device);
  ~device_scope();
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace hdb
