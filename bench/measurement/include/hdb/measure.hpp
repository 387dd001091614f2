#pragma once
// The pieces every family's timed cases share: a cache for the fixture of the case now running,
// batch sizing, the timed loop (device time from events, host-observed median call) and the
// device-memory check. A family supplies what one operation is; this layer times it.
#include "hdb/devices.hpp"
#include "hdb/family.hpp"
#include "hdb/timing.hpp"

#include <benchmark/benchmark.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hdb {

// Keeps the fixture (buffers, streams, verified once) of the case now running, so its
// repetitions do not pay allocation, pinning and verification again; the previous case's
// fixture is destroyed before the next one is built, so two large cases never coexist.
template <class Fixture>
class fixture_cache {
 public:
  template <class... Args>
  Fixture& get(const std::string& key, Args&&... args) {
    if (key_ != key || !fixture_) {
      fixture_.reset();
      key_.clear();
      fixture_ = std::make_unique<Fixture>(std::forward<Args>(args)...);
      key_ = key;
    }
    return *fixture_;
  }
  void clear() noexcept {
    fixture_.reset();
    key_.clear();
  }

 private:
  std::string key_;
  std::unique_ptr<Fixture> fixture_;
};

// Operations per timed batch: enough bytes (64 MiB) that event resolution and the gate release
// are negligible, at most 100 so a gated batch never fills the device's queue.
[[nodiscard]] std::size_t ops_per_batch(std::size_t bytes_per_op);
// Batches per repetition: a repetition moves about 256 MiB, at least 1 and at most 8 batches.
[[nodiscard]] benchmark::IterationCount batches_per_repetition(std::size_t bytes_per_op);

// One kind of operation the timed loop repeats. `issue(n)` enqueues (or, when it blocks the host,
// performs) n operations on `streams`; `synchronize()` waits for everything it issued.
struct timed_operation {
  std::span<const cudaStream_t> streams;  // may span devices
  bool queueable = true;                  // false: it blocks the host, so it cannot wait behind the gate
  std::function<void(std::size_t n)> issue;
  std::function<void()> synchronize;
};

struct loop_result {
  double device_us_per_op = 0;              // device time of the batches / operations timed
  std::vector<double> stream_us_per_op;     // per stream, from its device's start to its end
  double host_median_us = 0;                // median host-observed call (issue one + synchronize)
  std::size_t ops = 0;                      // operations timed
};

// Warm-up batch, then one batch per Google Benchmark iteration (SetIterationTime per batch),
// then `ops_per_batch` host-observed calls. Queueable operations run behind the gate; blocking
// ones get one event pair per call. The host figure is the median call, so one interrupt landing
// in one of a hundred calls does not move it.
[[nodiscard]] loop_result run_timed_loop(benchmark::State& state, const timed_operation& op, std::size_t ops_per_batch,
                                         spin_gate& gate);

// Throws skip_case when `needed` bytes exceed 90 % of what `device` had free at start-up
// (headroom for the context and the driver's own allocations).
void require_device_memory(std::size_t needed, const device_info& device);

}  // namespace hdb
