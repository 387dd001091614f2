#pragma once
// Naming and creating results/<run-id>/.
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace hdb {

// "20261129T103122Z-gpu01": UTC to the second, then the short hostname with anything
// outside [A-Za-z0-9_-] replaced by '_' so the id is a safe file name.
[[nodiscard]] std::string make_run_id(std::chrono::system_clock::time_point when, std::string_view hostname);

// ISO 8601 UTC, "2026-11-29T10:31:22Z".
[[nodiscard]] std::string utc_timestamp(std::chrono::system_clock::time_point when);

// This machine's hostname ("unknown" if it has none).
[[nodiscard]] std::string local_hostname();

// Creates base/<run_id> with mkdir, which fails if it exists, so two runs in the same second
// never share a directory: the second gets <run_id>-2, then -3, ... Creates `base` if needed.
[[nodiscard]] std::filesystem::path create_run_dir(const std::filesystem::path& base, const std::string& run_id);

}  // namespace hdb
