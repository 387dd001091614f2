#pragma once
// Small file helpers. Every file the harness publishes (meta.json, results.csv, report.md,
// status files) goes through atomic_write_file, so a reader or a killed run never sees half
// a file.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hdb {

// Whole file as bytes; throws harness_error naming the file when it cannot be read.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path);

// Whole file, or nullopt when it does not exist or cannot be read (/proc, /sys probing).
[[nodiscard]] std::optional<std::string> try_read_text_file(const std::filesystem::path& path);

// At most the last max_bytes of a file ("" when unreadable), for stderr tails.
[[nodiscard]] std::string read_file_tail(const std::filesystem::path& path, std::size_t max_bytes);

// Writes a temporary file in the same directory, fsyncs it and renames it over `path`.
void atomic_write_file(const std::filesystem::path& path, std::string_view content);

// Pretty-printed JSON, atomically. Invalid UTF-8 (a binary's stderr tail) is replaced, not fatal.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value);

// A path as output shows it: relative to the working directory when it lies below it (a report
// committed from a checkout must not carry one machine's directory layout), else unchanged.
[[nodiscard]] std::string display_path(const std::filesystem::path& path);

// The directory of the running executable (hdbench's: suite.json and schema/ lie beside it);
// the working directory when /proc/self/exe cannot be read.
[[nodiscard]] std::filesystem::path own_directory();

}  // namespace hdb
