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
}  // namespace

stream::stream() : handle_(create_stream()) {}
void stream::synchronize() const { HDB_CUDA_CALL(cudaStreamSynchronize(get())); }

event::event() : handle_(create_event()) {}
void event::record(cudaStream_t on) const { HDB_CUDA_CALL(cudaEventRecord(get(), on)); }
void event::synchronize() const { HDB_CUDA_CALL(cudaEventSynchronize(get())); }

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
