#include <cuda_runtime_api.h>

namespace {
__global__ void write_through(int* target) { *target = 1; }
}  // namespace

// An illegal address on purpose: the error is sticky and poisons the process's CUDA context.
void write_through_null_pointer(cudaStream_t stream) { write_through<<<1, 1, 0, stream>>>(nullptr); }
