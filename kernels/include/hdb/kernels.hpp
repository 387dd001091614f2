#pragma once
// Host-callable launchers for the kernels every family shares. Plain C++ (no CUDA syntax), so
// benchmark sources compiled by the host compiler can call them.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hdb::kernels {

// Writes pattern_byte(i, seed) to dst[0, bytes). dst: device-accessible, 8-byte aligned.
void fill_pattern(void* dst, std::size_t bytes, std::uint32_t seed, cudaStream_t stream);

struct pattern_mismatch {
  std::uint64_t count = 0;          // bytes that differ from the pattern
  std::uint64_t first_index = 0;    // lowest differing byte index (valid when count > 0)
};

// Compares src[0, bytes) with the pattern on the device; synchronises `stream`.
// src: device-accessible (device memory or mapped/pinned host memory), 8-byte aligned.
[[nodiscard]] pattern_mismatch verify_pattern(const void* src, std::size_t bytes, std::uint32_t seed,
                                              cudaStream_t stream);

// Copies with SM loads/stores instead of a copy engine: the zero-copy path when one side is
// mapped host memory, the SM path for device-to-device. Any alignment; 16-byte vectors when both
// pointers allow. `blocks` sizes the grid (a few blocks per SM saturates both HBM and PCIe).
void sm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream);

// Spins one thread until *release becomes non-zero or timeout_ns pass (then sets *timed_out).
// release / timed_out: mapped pinned host memory, so the host can flip and read them while the
// kernel runs. See hdb::spin_gate for the owner of that protocol.
void launch_spin_gate(const volatile int* release, int* timed_out, std::uint64_t timeout_ns,
                      cudaStream_t stream);

// One SM clock measurement of launch_clock_probe: block 0's clock64 ticks over %globaltimer
// nanoseconds, both read by the same thread, so ticks / ns is the SM clock in GHz.
struct clock_sample {
  std::uint64_t sm_cycles = 0;
  std::uint64_t elapsed_ns = 0;
};

// Keeps `blocks` blocks (a few per SM loads every SM) busy for about busy_ns and writes the
// clock they ran at to *sample (device memory). The load is light on purpose: a boost clock is
// reached by keeping the SMs busy; heavy arithmetic would only add power and risk a power cap.
void launch_clock_probe(clock_sample* sample, std::uint64_t busy_ns, int blocks, cudaStream_t stream);

// A kernel that does nothing: exercises the launch path (warm start) without touching memory.
void launch_empty(cudaStream_t stream);

}  // namespace hdb::kernels
