#include "hdb/devices.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/stream.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>

namespace hdb {

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof(text), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

device_info read_device_info(int index) {
  device_info info;
  info.index = index;
  cudaDeviceProp props{};
  HDB_CUDA_CALL(cudaGetDeviceProperties(&props, index));
  info.name = props.name;
  info.sm_count = props.multiProcessorCount;
  info.uuid = format_uuid(props.uuid);
  char bus_id[32] = {};
  HDB_CUDA_CALL(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index));
  info.pci_bus_id = bus_id;
  const device_scope on(index);
  HDB_CUDA_CALL(cudaMemGetInfo(&info.free_memory, &info.total_memory));
  return info;
}

}  // namespace hdb
