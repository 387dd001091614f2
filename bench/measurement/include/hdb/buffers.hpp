#pragma once
// Move-only owners for every kind of memory a transfer can touch. Each host kind is one
// allocation strategy; the copy family names them in its case table and never calls an
// allocator itself.
#include "hdb/stream.hpp"

#include <cstddef>
#include <string_view>

namespace hdb {

enum class host_kind {
  pageable,        // malloc'd (page-aligned): the driver stages it through a pinned bounce buffer
  pinned,          // cudaMallocHost: page-locked, DMA-able, mapped into the device address space
  write_combined,  // cudaHostAlloc(WriteCombined): pinned, CPU writes bypass the cache, CPU reads are slow
  registered,      // malloc + cudaHostRegister: pageable memory pinned after the fact
  mapped,          // cudaHostAlloc(Mapped): pinned and read/written by SM kernels in place (zero-copy)
};

[[nodiscard]] std::string_view to_string(host_kind kind) noexcept;
// Pageable memory cannot be read by the device; every other kind can, through device_ptr().
[[nodiscard]] constexpr bool device_accessible(host_kind kind) noexcept { return kind != host_kind::pageable; }

class host_buffer {
 public:
  host_buffer(host_kind kind, std::size_t bytes);
  ~host_buffer();
  host_buffer(host_buffer&& other) noexcept;
  host_buffer& operator=(host_buffer&& other) noexcept;
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return host_ptr_; }
  // The address kernels use for this memory; throws for pageable memory.
  [[nodiscard]] void* device_ptr() const;
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  [[nodiscard]] host_kind kind() const noexcept { return kind_; }

 private:
  void release() noexcept;

  host_kind kind_;
  std::size_t bytes_ = 0;
  void* host_ptr_ = nullptr;
  void* device_ptr_ = nullptr;
};

class device_buffer {
 public:
  // On the current device.
  explicit device_buffer(std::size_t bytes);
  // On `device`; the current device is left as it was.
  device_buffer(int device, std::size_t bytes);
  [[nodiscard]] void* data() const noexcept { return memory_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  int device_ = 0;
  std::size_t bytes_ = 0;
  unique_handle<void*, cudaFree> memory_;
};

}  // namespace hdb
