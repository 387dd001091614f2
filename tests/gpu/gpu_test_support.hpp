#pragma once
#include "hdb/family.hpp"

namespace hdb_test {
// The environment a family gets, for device 0; skips the test (CTest skip code) without a GPU.
[[nodiscard]] hdb::family_env& gpu_env();
}  // namespace hdb_test
