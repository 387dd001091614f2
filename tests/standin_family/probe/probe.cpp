// The stand-in family's hdbench-probe: two GPUs, GPU 0 at PCIe Gen5 x16 (63.0 GB/s per direction),
// GPU 1 at Gen4 x16 (31.5 GB/s), both at their maximum link, so the family's own traffic class
// (combine: min) has one right answer and the report flags nothing about the links.
#include <cstdio>

int main() {
  std::puts(R"({"driver_version": "13.0", "driver_release": "580.159.04", "cuda_runtime": "13.0", "nccl_version": null,
 "gpus": [
  {"index": 0, "name": "Stand-in GPU", "uuid": "GPU-standin-0", "pci_bus_id": "0000:3b:00.0",
   "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16, "source": "stand-in"},
   "clocks": {"throttle_reasons": "0x0000000000000001", "throttle_description": "idle"}, "hbm_peak_GBps": 4800.0},
  {"index": 1, "name": "Stand-in GPU", "uuid": "GPU-standin-1", "pci_bus_id": "0000:5e:00.0",
   "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16, "source": "stand-in"},
   "clocks": {"throttle_reasons": "0x0000000000000001", "throttle_description": "idle"}, "hbm_peak_GBps": 4800.0}]})");
  return 0;
}
