#include "hdb/measure.hpp"

#include "hdb/util/stats.hpp"
#include "hdb/util/units.hpp"
#include "hdb/sizes.hpp"

#include <algorithm>
#include <utility>

namespace hdb {

std::size_t ops_per_batch(std::size_t bytes_per_op) {
  constexpr std::size_t target_bytes = std::size_t{64} << 20;
  constexpr std::size_t max_ops = 100;
  const std::size_t bytes = std::max<std::size_t>(bytes_per_op, 1);
  return std::clamp<std::size_t>((target_bytes + bytes - 1) / bytes, 1, max_ops);
}

benchmark::IterationCount batches_per_repetition(std::size_t bytes_per_op) {
  const std::size_t per_batch = ops_per_batch(bytes_per_op) * std::max<std::size_t>(bytes_per_op, 1);
  return static_cast<benchmark::IterationCount>(std::clamp<std::size_t>((std::size_t{256} << 20) / per_batch, 1, 8));
}

loop_result run_timed_loop(benchmark::State& state, const timed_operation& op, std::size_t ops_per_batch, spin_gate& gate) {
  spin_gate* const held_by = op.queueable ? &gate : nullptr;
  const auto issue = [&op](std::size_t n) { return [&op, n] { op.issue(n); }; };
  // Warm-up: clocks up, first-touch and driver caches out of the timed region.
  static_cast<void>(time_batch(op.streams, held_by, issue(std::min<std::size_t>(ops_per_batch, 8))));

  loop_result result;
  double device_ms = 0.0;
  std::vector<double> stream_ms(op.streams.size(), 0.0);
  for (auto _ : state) {
    double batch_ms = 0.0;
    const auto add = [&](const batch_timing& t) {
      batch_ms += t.max_ms;
      for (std::size_t s = 0; s < stream_ms.size(); ++s) stream_ms[s] += t.per_stream_ms[s];
    };
    if (held_by != nullptr) {
      add(time_batch(op.streams, held_by, issue(ops_per_batch)));
    } else {
      // Blocking operations cannot wait behind the gate: one event pair around each call.
      for (std::size_t i = 0; i < ops_per_batch; ++i) add(time_batch(op.streams, nullptr, issue(1)));
    }
    state.SetIterationTime(batch_ms / 1e3);
    device_ms += batch_ms;
    result.ops += ops_per_batch;
  }
  std::vector<double> host_us(ops_per_batch);
  for (double& us : host_us) {
    us = host_time_us([&] {
      op.issue(1);
      op.synchronize();
    });
  }
  result.host_median_us = median(std::move(host_us));

  const double ops = static_cast<double>(std::max<std::size_t>(result.ops, 1));
  result.device_us_per_op = device_ms * 1e3 / ops;
  for (double ms : stream_ms) result.stream_us_per_op.push_back(ms * 1e3 / ops);
  return result;
}

void require_device_memory(std::size_t needed, const device_info& device) {
  // Leave headroom for the context and the driver's own allocations.
  if (needed > device.free_memory / 10 * 9) {
    throw skip_case("needs " + format_size(needed) + " of device memory on GPU " + std::to_string(device.index) + ", " +
                    format_size(device.free_memory) + " free at start-up");
  }
}

}  // namespace hdb
