#include "hdb/stream.hpp"

namespace hdb {
namespace {
cudaStream_t create_stream(unsigned flags, int priority) {
  cudaStream_t handle = nullptr;
  HDB_CUDA_CALL(cudaStreamCreateWithPriority(&handle, flags, priority));
  return handle;
}
cudaEvent_t create_event(unsigned flags) {
  cudaEvent_t handle = nullptr;
  HDB_CUDA_CALL(cudaEventCreateWithFlags(&handle, flags));
  return handle;
}
}  // namespace

int current_device() {
  int device = 0;
  HDB_CUDA_CALL(cudaGetDevice(&device));
  return device;
}

stream::stream() : device_(current_device()), handle_(create_stream(cudaStreamNonBlocking, 0)) {}
stream::stream(int device, unsigned flags, int priority) : device_(device) {
  const device_scope on(device);
  handle_ = unique_handle<cudaStream_t, cudaStreamDestroy>(create_stream(flags, priority));
}
void stream::synchronize() const { HDB_CUDA_CALL(cudaStreamSynchronize(get())); }

event::event() : device_(current_device()), handle_(create_event(cudaEventDefault)) {}
event::event(int device, unsigned flags) : device_(device) {
  const device_scope on(device);
  handle_ = unique_handle<cudaEvent_t, cudaEventDestroy>(create_event(flags));
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

graph_handle capture_graph(cudaStream_t origin, const std::function<void()>& enqueue) {
  HDB_CUDA_CALL(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t abandoned = nullptr;
    HDB_CUDA_CALL_NOTHROW(cudaStreamEndCapture(origin, &abandoned));
    if (abandoned != nullptr) HDB_CUDA_CALL_NOTHROW(cudaGraphDestroy(abandoned));
    throw;
  }
  cudaGraph_t captured = nullptr;
  HDB_CUDA_CALL(cudaStreamEndCapture(origin, &captured));
  return graph_handle(captured);
}

graph_exec_handle instantiate(const graph_handle& graph) {
  cudaGraphExec_t exec = nullptr;
  HDB_CUDA_CALL(cudaGraphInstantiate(&exec, graph.get(), 0));
  return graph_exec_handle(exec);
}

device_scope::device_scope(int device) {
  HDB_CUDA_CALL(cudaGetDevice(&previous_));
  HDB_CUDA_CALL(cudaSetDevice(device));
}
device_scope::~device_scope() { HDB_CUDA_CALL_NOTHROW(cudaSetDevice(previous_)); }

}  // namespace hdb
