#include "hdb/cuda_check.hpp"
#include "hdb/grid_copy.cuh"
#include "hdb/kernels.hpp"
#include "hdb/pattern.hpp"

#include <cstdint>

namespace hdb::kernels {
namespace {

constexpr int threads_per_block = 256;
// Enough blocks to keep every SM busy on fill/verify without a device query per launch.
constexpr int pattern_blocks = 1024;

__global__ void fill_pattern_kernel(std::uint64_t* dst, std::size_t bytes, std::uint32_t seed) {
  const std::size_t words = bytes / 8;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t w = first; w < words; w += stride) dst[w] = pattern_word(w, seed);
  auto* tail = reinterpret_cast<std::uint8_t*>(dst);
  for (std::size_t b = words * 8 + first; b < bytes; b += stride) tail[b] = pattern_byte(b, seed);
}

__global__ void verify_pattern_kernel(const std::uint64_t* src, std::size_t bytes, std::uint32_t seed,
                                      unsigned long long* mismatches, unsigned long long* first_bad) {
  const std::size_t words = bytes / 8;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long bad = 0;
  unsigned long long lowest = ~0ull;
  for (std::size_t w = first; w < words; w += stride) {
    const std::uint64_t diff = src[w] ^ pattern_word(w, seed);
    if (diff != 0) {
      for (int j = 0; j < 8; ++j) bad += ((diff >> (8 * j)) & 0xff) != 0;
      const unsigned long long at = w * 8 + (__ffsll(static_cast<long long>(diff)) - 1) / 8;
      lowest = at < lowest ? at : lowest;
    }
  }
  const auto* tail = reinterpret_cast<const std::uint8_t*>(src);
  for (std::size_t b = words * 8 + first; b < bytes; b += stride) {
    if (tail[b] != pattern_byte(b, seed)) {
      ++bad;
      lowest = b < lowest ? b : lowest;
    }
  }
  if (bad != 0) {
    atomicAdd(mismatches, bad);
    atomicMin(first_bad, lowest);
  }
}

__global__ void sm_copy_kernel(std::uint8_t* dst, const std::uint8_t* src, std::size_t bytes) {
  grid_copy<1>(dst, src, bytes);
}

__device__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_gate_kernel(const volatile int* release, int* timed_out, std::uint64_t timeout_ns) {
  const std::uint64_t start = global_timer_ns();
  while (*release == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);  // poll host memory about once a microsecond, not flat out over PCIe
  }
}

constexpr int clock_probe_threads = 128;

__global__ void clock_probe_kernel(clock_sample* sample, std::uint64_t busy_ns) {
  const std::uint64_t start_ns = global_timer_ns();
  const long long start_cycles = clock64();
  std::uint64_t now_ns = start_ns;
  long long now_cycles = start_cycles;
  while (now_ns - start_ns < busy_ns) {
    now_cycles = clock64();
    now_ns = global_timer_ns();
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    sample->sm_cycles = static_cast<std::uint64_t>(now_cycles - start_cycles);
    sample->elapsed_ns = now_ns - start_ns;
  }
}

__global__ void empty_kernel() {}

// A kernel launch (and cudaMallocAsync) goes to the current device, so a launch on another
// device's stream fails. Every launcher switches to its stream's device for the call and back.
class on_stream_device {
 public:
  explicit on_stream_device(cudaStream_t stream) {
    HDB_CUDA_CALL(cudaGetDevice(&previous_));
    int device = previous_;
    if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
      HDB_CUDA_CALL(cudaStreamGetDevice(stream, &device));
    }
    if (device != previous_) HDB_CUDA_CALL(cudaSetDevice(device));
    switched_ = device != previous_;
  }
  ~on_stream_device() {
    if (switched_) HDB_CUDA_CALL_NOTHROW(cudaSetDevice(previous_));
  }
  on_stream_device(const on_stream_device&) = delete;
  on_stream_device& operator=(const on_stream_device&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

int blocks_for(std::size_t bytes) {
  const std::size_t needed = (bytes / 8 + threads_per_block - 1) / threads_per_block;
  return static_cast<int>(needed < 1 ? 1 : (needed > pattern_blocks ? pattern_blocks : needed));
}

}  // namespace

void fill_pattern(void* dst, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  if (bytes == 0) return;
  const on_stream_device on(stream);
  fill_pattern_kernel<<<blocks_for(bytes), threads_per_block, 0, stream>>>(static_cast<std::uint64_t*>(dst),
                                                                            bytes, seed);
  HDB_CUDA_CALL(cudaGetLastError());
}

pattern_mismatch verify_pattern(const void* src, std::size_t bytes, std::uint32_t seed, cudaStream_t stream) {
  if (bytes == 0) return {};
  const on_stream_device on(stream);
  unsigned long long* counters = nullptr;  // [0] mismatches, [1] first bad index
  HDB_CUDA_CALL(cudaMallocAsync(reinterpret_cast<void**>(&counters), 2 * sizeof(unsigned long long), stream));
  const unsigned long long initial[2] = {0, ~0ull};
  unsigned long long result[2] = {0, 0};
  try {
    HDB_CUDA_CALL(cudaMemcpyAsync(counters, initial, sizeof(initial), cudaMemcpyHostToDevice, stream));
    verify_pattern_kernel<<<blocks_for(bytes), threads_per_block, 0, stream>>>(
        static_cast<const std::uint64_t*>(src), bytes, seed, counters, counters + 1);
    HDB_CUDA_CALL(cudaGetLastError());
    HDB_CUDA_CALL(cudaMemcpyAsync(result, counters, sizeof(result), cudaMemcpyDeviceToHost, stream));
    HDB_CUDA_CALL(cudaStreamSynchronize(stream));
  } catch (...) {
    HDB_CUDA_CALL_NOTHROW(cudaFreeAsync(counters, stream));
    throw;
  }
  HDB_CUDA_CALL(cudaFreeAsync(counters, stream));
  return {result[0], result[1]};
}

void sm_copy(void* dst, const void* src, std::size_t bytes, int blocks, cudaStream_t stream) {
  if (bytes == 0) return;
  const on_stream_device on(stream);
  sm_copy_kernel<<<blocks, threads_per_block, 0, stream>>>(static_cast<std::uint8_t*>(dst),
                                                           static_cast<const std::uint8_t*>(src), bytes);
  HDB_CUDA_CALL(cudaGetLastError());
}

void launch_spin_gate(const volatile int* release, int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream) {
  const on_stream_device on(stream);
  spin_gate_kernel<<<1, 1, 0, stream>>>(release, timed_out, timeout_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

void launch_clock_probe(clock_sample* sample, std::uint64_t busy_ns, int blocks, cudaStream_t stream) {
  const on_stream_device on(stream);
  clock_probe_kernel<<<blocks, clock_probe_threads, 0, stream>>>(sample, busy_ns);
  HDB_CUDA_CALL(cudaGetLastError());
}

void launch_empty(cudaStream_t stream) {
  const on_stream_device on(stream);
  empty_kernel<<<1, 1, 0, stream>>>();
  HDB_CUDA_CALL(cudaGetLastError());
}

}  // namespace hdb::kernels
