#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("a gate never released times out instead of hanging", "[gpu][gate]") {
  static_cast<void>(hdb_test::gpu_env());
  hdb::spin_gate gate(50ms);
  const hdb::stream s;
  const auto start = std::chrono::steady_clock::now();
  gate.hold(s.get());
  s.synchronize();  // returns because the kernel gives up, not because anyone released it
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK_THROWS_AS(gate.check(), hdb::gate_timeout);
  CHECK(waited >= 50ms);
  CHECK(waited < 5s);
}

TEST_CASE("a batch whose enqueue outlasts the gate fails instead of yielding a number", "[gpu][gate]") {
  static_cast<void>(hdb_test::gpu_env());
  hdb::spin_gate gate(20ms);
  const hdb::stream s;
  const std::array<cudaStream_t, 1> streams{s.get()};
  CHECK_THROWS_AS(hdb::time_batch(streams, &gate, [] { std::this_thread::sleep_for(200ms); }), hdb::gate_timeout);
}

TEST_CASE("a released gate times the batch, not the enqueue", "[gpu][gate]") {
  static_cast<void>(hdb_test::gpu_env());
  hdb::spin_gate gate(2000ms);
  const hdb::stream s;
  const std::array<cudaStream_t, 1> streams{s.get()};
  // The host dawdles 100 ms while enqueueing nothing: held by the gate, the device sees none of it.
  const auto t = hdb::time_batch(streams, &gate, [] { std::this_thread::sleep_for(100ms); });
  CHECK(t.max_ms < 5.0);
  // Without a gate the device stamps each event as it arrives, so the dawdling is inside them.
  const auto ungated = hdb::time_batch(streams, nullptr, [] { std::this_thread::sleep_for(100ms); });
  CHECK(ungated.max_ms > 90.0);
}

TEST_CASE("one gate holds a batch spanning streams on every device and times it per device", "[gpu][gate][multi]") {
  hdb_test::require_gpus(2);
  auto& env = hdb_test::gpu_env();
  constexpr std::size_t bytes = std::size_t{64} << 20;
  std::vector<hdb::stream> streams;
  std::vector<hdb::device_buffer> src, dst;
  for (const auto& d : env.devices) {
    for (int i = 0; i < 2; ++i) {  // two streams per device: the second waits for its device's start
      streams.emplace_back(d.index);
      src.emplace_back(d.index, bytes);
      dst.emplace_back(d.index, bytes);
    }
  }
  std::vector<cudaStream_t> handles;
  for (const auto& s : streams) handles.push_back(s.get());
  // Every stream dawdles behind the gate while the host sleeps: none of it may be timed.
  const auto t = hdb::time_batch(handles, env.gate.get(), [&] {
    std::this_thread::sleep_for(50ms);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      HDB_CUDA_CALL(cudaMemcpyAsync(dst[i].data(), src[i].data(), bytes, cudaMemcpyDeviceToDevice, handles[i]));
    }
  });
  REQUIRE(t.per_stream_ms.size() == streams.size());
  for (double ms : t.per_stream_ms) {
    CHECK(ms > 0.01);  // a 64 MiB copy takes tens of microseconds at HBM speed
    CHECK(ms < 20.0);  // and never includes the 50 ms the host slept
  }
  CHECK(t.max_ms == *std::max_element(t.per_stream_ms.begin(), t.per_stream_ms.end()));
}
