#pragma once
// Move-only owners of a CUDA stream and event, and a guard that restores the current device.
#include <cuda_runtime_api.h>

namespace hdb {

class stream {
 public:
  // Non-blocking: the stream never synchronises implicitly with the legacy default stream, so
  // a blocking cudaMemcpy elsewhere cannot distort what is timed here.
  stream();
  ~stream();
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  void synchronize() const;

 private:
  cudaStream_t handle_ = nullptr;
};

class event {
 public:
  event();
  ~event();
  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }
  void record(cudaStream_t on) const;
  void synchronize() const;

 private:
  cudaEvent_t handle_ = nullptr;
};

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
