#include "hdb/stream.hpp"

#include "hdb/cuda_check.hpp"

#include <utility>

namespace hdb {

stream::stream() { HDB_CUDA_CALL(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }
stream::~stream() {
  if (handle_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaStreamDestroy(handle_));
}
stream::stream(stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaStreamDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void stream::synchronize() const { HDB_CUDA_CALL(cudaStreamSynchronize(handle_)); }

event::event() { HDB_CUDA_CALL(cudaEventCreate(&handle_)); }
event::~event() {
  if (handle_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaEventDestroy(handle_));
}
event::event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) HDB_CUDA_CALL_NOTHROW(cudaEventDestroy(handle_));
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void event::record(cudaStream_t on) const { HDB_CUDA_CALL(cudaEventRecord(handle_, on)); }
void event::synchronize() const { HDB_CUDA_CALL(cudaEventSynchronize(handle_)); }

double elapsed_ms(const event& start, const event& stop) {
  float ms = 0.0F;
  HDB_CUDA_CALL(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

device_scope::device_scope(int device) {
  HDB_CUDA_CALL(cudaGetDevice(&previous_));
  HDB_CUDA_CALL(cudaSetDevice(device));
}
device_scope::~device_scope() { HDB_CUDA_CALL_NOTHROW(cudaSetDevice(previous_)); }

}  // namespace hdb
