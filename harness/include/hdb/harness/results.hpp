#pragma once
// The results.csv model (docs/csv-schema.md, schema 2): one tidy row per number, its
// writer and its reader. The column list lives here and nowhere else.
#include <array>
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

inline constexpr int results_schema_version = 2;

enum class better { higher, lower };
enum class statistic { sample, median, mean, min, max, stddev, cv, fit };
enum class row_status { ok, skipped, failed };

[[nodiscard]] std::string_view to_string(better value);
[[nodiscard]] std::string_view to_string(statistic value);
[[nodiscard]] std::string_view to_string(row_status value);
// Parsers throw harness_error naming the unknown word.
[[nodiscard]] better parse_better(std::string_view text);
[[nodiscard]] statistic parse_statistic(std::string_view text);
[[nodiscard]] row_status parse_row_status(std::string_view text);

// Label keys that have their own CSV column, in column order. Any other key goes to `extra`.
// `device` (CUDA index, "0,1" for several) identifies the measured GPU(s) within the node and is
// how runs are matched; `gpu_uuid` (same order) says which physical GPU that was.
inline constexpr std::array<std::string_view, 11> param_keys = {
    "direction", "host_kind", "api", "size_bytes", "streams", "gpus", "src", "dst", "dtype", "device", "gpu_uuid"};

// A case's parameters as written in the CSV (values are kept as text, exactly as labelled).
struct case_params {
  std::array<std::string, param_keys.size()> known{};
  std::string extra;  // sorted "k=v;k=v"

  [[nodiscard]] const std::string& get(std::string_view key) const;  // "" for unknown keys
  void set(std::string_view key, std::string value);                  // known keys only
  // "direction=h2d host_kind=pinned ..." — only the parameters that are set.
  [[nodiscard]] std::string describe() const;
  auto operator<=>(const case_params&) const = default;
};

struct result_row {
  std::string run_id;
  std::string family;
  std::string case_name;
  case_params params;
  std::string metric;
  std::string unit;
  std::optional<better> better_direction;
  bool headline = false;
  std::optional<statistic> stat;
  std::optional<int> sample_index;
  std::optional<double> value;
  row_status status = row_status::ok;
  std::string reason;
  std::string benchmark;
};

// Shortest text that reads back as the same double ("52.1", "1e-05").
[[nodiscard]] std::string format_value(double value);

[[nodiscard]] std::string write_results_csv(const std::vector<result_row>& rows);
// Throws harness_error for a missing column, a malformed field or another schema version.
[[nodiscard]] std::vector<result_row> read_results_csv(std::string_view text);

}  // namespace hdb
