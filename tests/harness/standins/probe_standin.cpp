// A stand-in for hdbench-probe: one GPU with a PCIe link trained below its maximum.
#include <cstdio>

int main() {
  std::puts(R"({"driver_version": "13.0", "driver_release": "580.159.04", "cuda_runtime": "13.0", "nccl_version": null,
 "gpus": [{"index": 0, "name": "Stand-in GPU", "uuid": "GPU-0000", "pci_bus_id": "0000:3b:00.0",
   "pcie": {"gen_current": 4, "gen_max": 5, "width_current": 16, "width_max": 16, "source": "stand-in"},
   "clocks": {"throttle_reasons": "0x0000000000000001", "throttle_description": "idle"},
   "hbm_peak_GBps": 4800.0}]})");
  return 0;
}
