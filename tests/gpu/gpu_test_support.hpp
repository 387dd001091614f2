#pragma once
// What GPU tests share: the environment a family binary would get, for every visible device (or
// the devices named by HDB_TEST_DEVICES, e.g. "1" or "0,1"), and skips for missing hardware.
#include "hdb/family.hpp"

#include <vector>

namespace hdb_test {
// Skips the test (CTest skip code) without a GPU. Devices, gate and kernels are ready on every
// selected device; device 0 of the selection is current.
[[nodiscard]] hdb::family_env& gpu_env();
// The selected devices' indices.
[[nodiscard]] std::vector<int> test_devices();
// Skips the test with a reason when fewer than n devices are selected.
void require_gpus(int n);
}  // namespace hdb_test
