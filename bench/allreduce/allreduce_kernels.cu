#include "allreduce_kernels.hpp"
#include "value_pattern.hpp"

#include "hdb/cuda_check.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace hdb::allreduce::kernels {
namespace {

template <class T>
__device__ T from_integer(std::uint64_t v);
template <>
__device__ float from_integer<float>(std::uint64_t v) { return static_cast<float>(v); }
template <>
__device__ __half from_integer<__half>(std::uint64_t v) { return __ull2half_rn(v); }
template <>
__device__ __nv_bfloat16 from_integer<__nv_bfloat16>(std::uint64_t v) { return __ull2bfloat16_rn(v); }

__device__ float to_float(float v) { return v; }
__device__ float to_float(__half v) { return __half2float(v); }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__global__ void fill_kernel(T* dst, std::uint64_t count, int rank, std::uint64_t modulus) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    dst[i] = from_integer<T>(input_value(rank, i, modulus));
  }
}

template <class T>
__global__ void check_kernel(const T* out, collective op, int rank, int ranks, std::uint64_t send_count,
                             std::uint64_t recv_count, std::uint64_t modulus, unsigned long long* result) {
  for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; j < recv_count;
       j += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t expected = expected_output(op, rank, ranks, j, send_count, recv_count, modulus);
    // Expected values are exact integers in T, so equality is the test.
    if (to_float(out[j]) != static_cast<float>(expected)) {
      atomicAdd(&result[0], 1ull);
      atomicMin(&result[1], static_cast<unsigned long long>(j));
    }
  }
}

__global__ void busy_kernel(float* sink, std::uint32_t rounds) {
  const unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  float a = 1.0f + id * 1e-7f, b = 0.5f, c = 0.25f, d = 0.125f;
  for (std::uint32_t i = 0; i < rounds; ++i) {
    a = fmaf(a, 0.999f, 0.001f);
    b = fmaf(b, 0.999f, 0.001f);
    c = fmaf(c, 0.999f, 0.001f);
    d = fmaf(d, 0.999f, 0.001f);
  }
  sink[id] = a + b + c + d;
}

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < ns) {
  }
}

unsigned grid_for(std::uint64_t count) {
  return static_cast<unsigned>(std::clamp<std::uint64_t>((count + 255) / 256, 1, 65536));
}

template <class T>
void fill_typed(void* dst, std::uint64_t count, int rank, std::uint64_t modulus, cudaStream_t stream) {
  fill_kernel<T><<<grid_for(count), 256, 0, stream>>>(static_cast<T*>(dst), count, rank, modulus);
}

template <class T>
void check_typed(const void* out, collective op, int rank, int ranks, std::uint64_t send_count, std::uint64_t recv_count,
                 std::uint64_t modulus, unsigned long long* result, cudaStream_t stream) {
  check_kernel<T><<<grid_for(recv_count), 256, 0, stream>>>(static_cast<const T*>(out), op, rank, ranks, send_count,
                                                            recv_count, modulus, result);
}

}  // namespace

void fill_input(void* dst, data_type type, std::uint64_t count, int rank, std::uint64_t modulus, cudaStream_t stream) {
  if (count == 0) return;
  switch (type) {
    case data_type::float32: fill_typed<float>(dst, count, rank, modulus, stream); break;
    case data_type::float16: fill_typed<__half>(dst, count, rank, modulus, stream); break;
    case data_type::bfloat16: fill_typed<__nv_bfloat16>(dst, count, rank, modulus, stream); break;
  }
  HDB_CUDA_CALL(cudaGetLastError());
}

output_check check_output(const void* out, data_type type, collective op, int rank, int ranks, std::uint64_t send_count,
                          std::uint64_t recv_count, std::uint64_t modulus, cudaStream_t stream) {
  unsigned long long* result = nullptr;
  HDB_CUDA_CALL(cudaMallocAsync(reinterpret_cast<void**>(&result), 2 * sizeof(unsigned long long), stream));
  const unsigned long long init[2] = {0, ~0ull};
  unsigned long long host[2] = {0, 0};
  try {
    HDB_CUDA_CALL(cudaMemcpyAsync(result, init, sizeof(init), cudaMemcpyHostToDevice, stream));
    switch (type) {
      case data_type::float32: check_typed<float>(out, op, rank, ranks, send_count, recv_count, modulus, result, stream); break;
      case data_type::float16: check_typed<__half>(out, op, rank, ranks, send_count, recv_count, modulus, result, stream); break;
      case data_type::bfloat16:
        check_typed<__nv_bfloat16>(out, op, rank, ranks, send_count, recv_count, modulus, result, stream);
        break;
    }
    HDB_CUDA_CALL(cudaGetLastError());
    HDB_CUDA_CALL(cudaMemcpyAsync(host, result, sizeof(host), cudaMemcpyDeviceToHost, stream));
    HDB_CUDA_CALL(cudaFreeAsync(result, stream));
    HDB_CUDA_CALL(cudaStreamSynchronize(stream));
  } catch (...) {
    HDB_CUDA_CALL_NOTHROW(cudaFreeAsync(result, stream));
    throw;
  }
  return {host[0], host[0] > 0 ? host[1] : 0};
}

void busy_compute(float* sink, int blocks, std::uint32_t rounds, cudaStream_t stream) {
  busy_kernel<<<static_cast<unsigned>(blocks), busy_threads_per_block, 0, stream>>>(sink, rounds);
  HDB_CUDA_CALL(cudaGetLastError());
}

void spin_for(std::uint64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

}  // namespace hdb::allreduce::kernels
