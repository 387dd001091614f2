#pragma once
// Helpers shared by the harness tests (contains, temp_dir: test_helpers.hpp).
#include <filesystem>
#include <string>

#include "test_helpers.hpp"

namespace hdb_test {

inline std::filesystem::path fixture(const std::string& relative) {
  return std::filesystem::path(HDB_TEST_FIXTURES) / relative;
}

// The hand-written copy-family run: raw/copy.json, meta.json and the golden results.csv.
inline std::filesystem::path golden_run() { return fixture("copy_run/20261129T103122Z-gpu01"); }

}  // namespace hdb_test
