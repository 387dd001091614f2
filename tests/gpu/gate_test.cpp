#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <array>
#include <chrono>
#include <thread>

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
