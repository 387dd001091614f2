#pragma once
// Move-only owners of CUDA streams, events and device memory, and a guard that restores the
// current device.
#include "hdb/cuda_check.hpp"

#include <cuda_runtime_api.h>

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

class stream {
 public:
  // Non-blocking: the stream never synchronises implicitly with the legacy default stream, so
  // a blocking cudaMemcpy elsewhere cannot distort what is timed here.
  // On the current device.
  stream();
  // On `device`; the current device is left as it was.
  explicit stream(int device);
  [[nodiscard]] cudaStream_t get() const noexcept { return handle_.get(); }
  [[nodiscard]] int device() const noexcept { return device_; }
  void synchronize() const;

 private:
  int device_ = 0;
  unique_handle<cudaStream_t, cudaStreamDestroy> handle_;
};

// An event belongs to the device that was current when it was created, and can only be recorded
// on that device's streams and timed against that device's events.
class event {
 public:
  event();
  explicit event(int device);
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
