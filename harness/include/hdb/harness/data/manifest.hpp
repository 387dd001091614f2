#pragma once
// The suite manifest (harness/suite.json): which family binaries `hdbench run` starts, with
// which flags and how long each may take. Format in docs/harness.md.
#include <filesystem>
#include <string>
#include <vector>

namespace hdb {

struct family_entry {
  std::string name;                      // "copy"
  std::string folder;                    // "bench/copy": its schema.json, report.cpp, CMake
  std::string binary;                    // "hdbench-copy", looked up in the bin dir
  std::string plots;                     // plot module plots/hdbplots/<plots>.py
  std::vector<std::string> flags;        // always passed
  std::vector<std::string> quick_flags;  // added with --quick
  double timeout_s = 0;                  // before --timeout-scale
};

struct suite_manifest {
  std::vector<family_entry> families;
};

// Throws harness_error naming the file and the problem.
[[nodiscard]] suite_manifest load_manifest(const std::filesystem::path& path);

// The entries named in `wanted` (manifest order when empty: all). Throws harness_error
// for a name the manifest does not have.
[[nodiscard]] std::vector<family_entry> select_families(const suite_manifest& manifest,
                                                        const std::vector<std::string>& wanted);

}  // namespace hdb
