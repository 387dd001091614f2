#pragma once
// Device-side timing of queued work. A batch of operations is queued behind a spin kernel that
// holds the stream(s) until the host releases it, so what the events measure is the device
// executing the batch back to back, never the host enqueueing it (the nvbandwidth technique).
#include "hdb/stream.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

namespace hdb {

class gate_timeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Owns the two host-mapped flags of the spin-gate protocol. hold() queues the spin kernel,
// release() lets it finish; if the host takes longer than the timeout to release (enqueue
// blocked, a queue filled up), the kernel gives up and check() throws: a batch whose start
// was not held is not a measurement.
class spin_gate {
 public:
  explicit spin_gate(std::chrono::milliseconds timeout);
  ~spin_gate();
  spin_gate(const spin_gate&) = delete;
  spin_gate& operator=(const spin_gate&) = delete;

  // Arms the gate and holds `stream` (on any device) behind it.
  void hold(cudaStream_t stream);
  // Several streams, possibly on several devices, behind one release: arm() once, then
  // add_hold() for each stream.
  void arm() noexcept;
  void add_hold(cudaStream_t stream);
  void release() noexcept;
  // Call after the stream has passed the gate (synchronised).
  void check() const;
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }

 private:
  std::chrono::milliseconds timeout_;
  int* flags_ = nullptr;  // [0] release, [1] timed out; mapped pinned memory
};

// Device time of one batch, per stream: from its device's start to the stream's end.
struct batch_timing {
  double max_ms = 0.0;              // the longest stream
  std::vector<double> per_stream_ms;
};

// Queues `enqueue` (which issues one batch on the given streams) behind the gate. The streams
// may span devices: each device's first stream is held by the gate and records that device's
// start event; the device's other streams wait for it; one release starts all devices together.
// Synchronises before returning.
// With gate == nullptr the batch is bracketed by events without a gate: the only option for
// operations that block the calling thread (pageable copies, cudaMemcpy), whose time then
// includes what the host did while the device waited.
[[nodiscard]] batch_timing time_batch(std::span<const cudaStream_t> streams, spin_gate* gate,
                                      const std::function<void()>& enqueue);

// Host wall time of `work` (call to completion; `work` must synchronise what it starts).
template <class Work>
[[nodiscard]] double host_time_us(Work&& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(stop - start).count();
}

}  // namespace hdb
