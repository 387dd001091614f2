#include "gpu_test_support.hpp"

#include "catch_compat.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/kernels.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>

namespace hdb_test {

hdb::family_env& gpu_env() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) skip_test("no CUDA device on this machine");
  static hdb::family_env env = [] {
    hdb::family_env e;
    HDB_CUDA_CALL(cudaSetDevice(0));
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&e.sm_count, cudaDevAttrMultiProcessorCount, 0));
    std::size_t total = 0;
    HDB_CUDA_CALL(cudaMemGetInfo(&e.free_device_memory, &total));
    hdb::kernels::preload();
    e.gate = std::make_unique<hdb::spin_gate>(std::chrono::milliseconds(2000));
    return e;
  }();
  return env;
}

}  // namespace hdb_test
