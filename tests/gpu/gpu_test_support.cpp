#include "gpu_test_support.hpp"

#include "catch_compat.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/util/nvidia_smi.hpp"
#include "hdb/sizes.hpp"

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hdb_test {
namespace {
int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

// The timing tests assert figures of a GPU they have to themselves (CTest's RESOURCE_LOCK keeps
// other GPU tests away; nothing keeps other programs away). Every compute process of another
// program on a selected GPU is named once, on stdout, so a timing failure reads next to its cause.
void name_other_processes(const std::vector<hdb::device_info>& devices) {
  std::string uuids;
  for (const auto& d : devices) uuids += d.uuid + " ";
  const auto apps = hdb::run_nvidia_smi({"--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
                                         "--format=csv,noheader,nounits"});
  if (!apps.text) return;  // no nvidia-smi: nothing to name
  const auto rows = hdb::parse_smi_query(*apps.text, {"pid", "process_name", "gpu_uuid", "used_memory"});
  for (const auto& row : rows) {
    const auto pid = row.number("pid");
    if (!pid || static_cast<long>(*pid) == static_cast<long>(::getpid())) continue;
    if (row.text("gpu_uuid").empty() || uuids.find(row.text("gpu_uuid")) == std::string::npos) continue;
    std::printf("gpu test: another process uses GPU %s while these tests measure it: pid %ld %s (%s MiB); "
                "a timing assertion below may fail for it\n",
                row.text("gpu_uuid").c_str(), static_cast<long>(*pid), row.text("process_name").c_str(),
                row.text("used_memory").c_str());
  }
  std::fflush(stdout);
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
    name_other_processes(e.devices);
    return e;
  }();
  HDB_CUDA_CALL(cudaSetDevice(env.devices.front().index));
  return env;
}

void require_gpus(int n) {
  if (static_cast<int>(test_devices().size()) < n) skip_test(("needs >= " + std::to_string(n) + " GPUs").c_str());
}

}  // namespace hdb_test
