#include "hdb/stream.hpp"

namespace hdb {
namespace {
cudaStream_t create_stream() {
  cudaStream_t handle = nullptr;
  HDB_CUDA_CALL(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking));
  return handle;
}
cudaEvent_t create_event() {
  cudaEvent_t handle = nullptr;
  HDB_CUDA_CALL(cudaEventCreate(&handle));
  return handle;
}
int current_device() {
  int device = 0;
  HDB_CUDA_CALL(cudaGetDevice(&device));
  return device;
}
}  // namespace

stream::stream() : device_(current_device()), handle_(create_stream()) {}
stream::stream(int device) : device_(device) {
  const device_scope on(device);
  handle_ = unique_handle<cudaStream_t, cudaStreamDestroy>(create_stream());
}
void stream::synchronize() const { HDB_CUDA_CALL(cudaStreamSynchronize(get())); }

event::event() : device_(current_device()), handle_(create_event()) {}
event::event(int device) : device_(device) {
  const device_scope on(device);
  handle_ = unique_handle<cudaEvent_t, cudaEventDestroy>(create_event());
}
void event::record(cudaStream_t on) const { HDB_CUDA_CALL(cudaEventRecord(get(), on)); }
void event::synchronize() const { HDB_CUDA_CALL(cudaEventSynchronize(get())); }

double elapsed_ms(const event& start, const event& stop) {
  float ms = 0.0F;
  HDB_CUDA_CALL(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

int device_of(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return current_device();
  int device = 0;
  HDB_CUDA_CALL(cudaStreamGetDevice(stream, &device));
  return device;
}

device_scope::device_scope(int device) {
  HDB_CUDA_CALL(cudaGetDevice(&previous_));
  HDB_CUDA_CALL(cudaSetDevice(device));
}
device_scope::~device_scope() { HDB_CUDA_CALL_NOTHROW(cudaSetDevice(previous_)); }

}  // namespace hdb
