#include "hdb/buffers.hpp"

#include "hdb/cuda_check.hpp"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace hdb {
namespace {
constexpr std::size_t page_bytes = 4096;

// Page-aligned like a real application's large buffer; a zero-byte request still gets a page
// so every buffer has a valid address.
void* allocate_pageable(std::size_t bytes) {
  const std::size_t rounded = (bytes + page_bytes - 1) / page_bytes * page_bytes;
  void* p = std::aligned_alloc(page_bytes, rounded == 0 ? page_bytes : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

std::string_view to_string(host_kind kind) noexcept {
  switch (kind) {
    case host_kind::pageable: return "pageable";
    case host_kind::pinned: return "pinned";
    case host_kind::write_combined: return "write_combined";
    case host_kind::registered: return "registered";
    case host_kind::mapped: return "mapped";
  }
  return "unknown";
}

host_buffer::host_buffer(host_kind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
  const std::size_t request = bytes == 0 ? 1 : bytes;
  switch (kind) {
    case host_kind::pageable:
      host_ptr_ = allocate_pageable(bytes);
      return;
    // Portable: pinned (and DMA-able) for every device's context, not only the current one, so
    // one host buffer can feed copies to any GPU of the node.
    case host_kind::pinned:
      HDB_CUDA_CALL(cudaHostAlloc(&host_ptr_, request, cudaHostAllocPortable));
      break;
    case host_kind::write_combined:
      HDB_CUDA_CALL(cudaHostAlloc(&host_ptr_, request, cudaHostAllocWriteCombined | cudaHostAllocMapped | cudaHostAllocPortable));
      break;
    case host_kind::mapped:
      HDB_CUDA_CALL(cudaHostAlloc(&host_ptr_, request, cudaHostAllocMapped | cudaHostAllocPortable));
      break;
    case host_kind::registered:
      host_ptr_ = allocate_pageable(bytes);
      try {
        HDB_CUDA_CALL(cudaHostRegister(host_ptr_, request, cudaHostRegisterMapped | cudaHostRegisterPortable));
      } catch (...) {
        std::free(host_ptr_);
        host_ptr_ = nullptr;
        throw;
      }
      break;
  }
  try {
    HDB_CUDA_CALL(cudaHostGetDevicePointer(&device_ptr_, host_ptr_, 0));
  } catch (...) {
    release();
    throw;
  }
}

void* host_buffer::device_ptr() const {
  if (device_ptr_ == nullptr) {
    throw std::logic_error("host_buffer: " + std::string(to_string(kind_)) + " memory has no device address");
  }
  return device_ptr_;
}

void host_buffer::release() noexcept {
  if (host_ptr_ == nullptr) return;
  switch (kind_) {
    case host_kind::pageable:
      std::free(host_ptr_);
      break;
    case host_kind::registered:
      HDB_CUDA_CALL_NOTHROW(cudaHostUnregister(host_ptr_));
      std::free(host_ptr_);
      break;
    case host_kind::pinned:
    case host_kind::write_combined:
    case host_kind::mapped:
      HDB_CUDA_CALL_NOTHROW(cudaFreeHost(host_ptr_));
      break;
  }
  host_ptr_ = nullptr;
  device_ptr_ = nullptr;
}

host_buffer::~host_buffer() { release(); }

host_buffer::host_buffer(host_buffer&& other) noexcept
    : kind_(other.kind_),
      bytes_(std::exchange(other.bytes_, 0)),
      host_ptr_(std::exchange(other.host_ptr_, nullptr)),
      device_ptr_(std::exchange(other.device_ptr_, nullptr)) {}

host_buffer& host_buffer::operator=(host_buffer&& other) noexcept {
  if (this != &other) {
    release();
    kind_ = other.kind_;
    bytes_ = std::exchange(other.bytes_, 0);
    host_ptr_ = std::exchange(other.host_ptr_, nullptr);
    device_ptr_ = std::exchange(other.device_ptr_, nullptr);
  }
  return *this;
}

namespace {
void* allocate_device(std::size_t bytes) {
  void* p = nullptr;
  HDB_CUDA_CALL(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}
}  // namespace

device_buffer::device_buffer(std::size_t bytes) : bytes_(bytes), memory_(allocate_device(bytes)) {
  HDB_CUDA_CALL(cudaGetDevice(&device_));
}

device_buffer::device_buffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
  const device_scope on(device);
  memory_ = unique_handle<void*, cudaFree>(allocate_device(bytes));
}

}  // namespace hdb
