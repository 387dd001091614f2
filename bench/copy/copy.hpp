#pragma once
// The copy family's paths and per-case fixture, shared by the benchmark binary and its GPU
// tests (which push every path through awkward sizes). See copy.cpp for what is timed.
#include "hdb/buffers.hpp"
#include "hdb/family.hpp"
#include "hdb/kernels.hpp"
#include "hdb/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

namespace hdb::copy {

enum class direction { h2d, d2h, d2d, bidir };
enum class copy_api { async, sync, kernel };

[[nodiscard]] std::string_view to_string(direction d);
[[nodiscard]] std::string_view to_string(copy_api api);

// One measured path. For d2d `host` is unused (both ends are device memory).
struct copy_path {
  direction dir;
  host_kind host;
  copy_api api;
};

// The case tables: adding a path touches only these lists.
[[nodiscard]] std::vector<copy_path> bandwidth_paths();
[[nodiscard]] std::vector<copy_path> latency_paths();

// One end of a copy: device memory or one kind of host memory.
class endpoint {
 public:
  // Device memory on `device`, or host memory of `kind` (usable by every device).
  endpoint(bool on_device, host_kind kind, std::size_t bytes, int device);
  [[nodiscard]] void* data() const;
  [[nodiscard]] std::size_t size() const;
  // The address SM kernels use; nullptr for pageable memory, which the device cannot reach.
  [[nodiscard]] void* device_view() const;
  // Fills on the device where it can (fast, and never reads write-combined memory on the CPU).
  void fill(std::uint32_t seed, cudaStream_t s) const;
  void clear(cudaStream_t s) const;
  [[nodiscard]] kernels::pattern_mismatch verify(std::uint32_t seed, cudaStream_t s) const;

 private:
  std::variant<device_buffer, host_buffer> memory_;
};

struct transfer {
  endpoint src;
  endpoint dst;
  stream on;
};

// Buffers and streams of one (path, size, devices), kept across the repetitions of a case: the
// path's transfers on every device given (several devices = all of them copying at once). The
// constructor verifies the path once: source holds the pattern, destination zeros, and one copy
// through the path under test must turn the destination into the pattern; a wrong byte throws
// before any timing.
class copy_fixture {
 public:
  copy_fixture(const copy_path& path, std::size_t bytes, const std::vector<const device_info*>& devices);

  // Enqueues (or, for blocking paths, performs) one copy on every transfer of the path.
  void issue() const;
  void synchronize() const;
  // Whether a batch can wait behind the spin gate: nothing in it blocks the host.
  [[nodiscard]] bool queueable() const;
  [[nodiscard]] std::span<const cudaStream_t> streams() const { return streams_; }
  [[nodiscard]] std::size_t transfer_count() const { return transfers_.size(); }

 private:
  void verify_once() const;

  copy_path path_;
  std::size_t bytes_;
  std::vector<int> sm_counts_;  // of each transfer's device, to size SM-copy grids
  std::vector<transfer> transfers_;
  std::vector<cudaStream_t> streams_;
};

[[nodiscard]] family_spec family();

}  // namespace hdb::copy
