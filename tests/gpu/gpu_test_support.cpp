#include "gpu_test_support.hpp"

#include "catch_compat.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/sizes.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace hdb_test {
namespace {
int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}
}  // namespace

std::vector<int> test_devices() {
  const int count = device_count();
  if (count == 0) skip_test("no CUDA device on this machine");
  const char* wanted = std::getenv("HDB_TEST_DEVICES");
  return hdb::resolve_devices(hdb::parse_device_selection(wanted != nullptr && *wanted != '\0' ? wanted : "all"), count);
}

hdb::family_env& gpu_env() {
  const auto devices = test_devices();
  static hdb::family_env env = [&devices] {
    hdb::family_env e;
    for (int d : devices) {
      e.devices.push_back(hdb::read_device_info(d));
    }
    HDB_CUDA_CALL(cudaSetDevice(devices.front()));
    e.gate = std::make_unique<hdb::spin_gate>(std::chrono::milliseconds(2000));
    return e;
  }();
  HDB_CUDA_CALL(cudaSetDevice(env.devices.front().index));
  return env;
}

void require_gpus(int n) {
  if (static_cast<int>(test_devices().size()) < n) skip_test(("needs >= " + std::to_string(n) + " GPUs").c_str());
}

}  // namespace hdb_test
