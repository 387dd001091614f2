// hdbench-probe: the node fingerprint (driver, runtime, NCCL, every GPU with link, clocks and
// NUMA placement) as one JSON object on stdout, for the harness's meta.json.
// Exit 0 on success; 2 with {"gpus": [], "error": "..."} when no GPU can be read.
#include "hdb/fingerprint.hpp"
#include "hdb/gpu_topology.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#if defined(HDB_HAVE_NCCL)
#include <nccl.h>
#endif

namespace {
nlohmann::json nccl_version() {
#if defined(HDB_HAVE_NCCL)
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) {
    return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." + std::to_string(version % 100);
  }
#endif
  return nullptr;
}
}  // namespace

int main() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    const std::string why = status == cudaSuccess ? "no CUDA device present" : cudaGetErrorString(status);
    std::printf("%s\n", nlohmann::json{{"gpus", nlohmann::json::array()}, {"error", why}}.dump(2).c_str());
    std::fprintf(stderr, "hdbench-probe: no usable CUDA GPU: %s\n", why.c_str());
    return 2;
  }
  try {
    auto node = hdb::read_node_fingerprint(true).facts;
    node["nccl_version"] = nccl_version();
    std::vector<int> devices;
    for (const auto& gpu : node["gpus"]) devices.push_back(gpu.value("index", 0));
    node["topology"] = hdb::read_gpu_topology(devices);
    std::printf("%s\n", node.dump(2).c_str());
  } catch (const std::exception& e) {
    std::printf("%s\n", nlohmann::json{{"gpus", nlohmann::json::array()}, {"error", e.what()}}.dump(2).c_str());
    std::fprintf(stderr, "hdbench-probe: %s\n", e.what());
    return 2;
  }
  return 0;
}
