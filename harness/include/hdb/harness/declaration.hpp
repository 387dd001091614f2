#pragma once
// A family's declaration, bench/<family>/schema.json: its typed parameters, its metrics (unit,
// better, the traffic classes they may carry), its case kinds and any traffic class of its own.
// It is the only description of a family's numbers: the CSV's parameter columns, the checks on
// what a binary reported, % of peak and the report's tables are derived from it. A binary
// publishes it unchanged in its Google Benchmark context as `hdbench.schema`; the build copies
// each one beside hdbench as schema/<family>.json for the commands that read no raw JSON.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/results.hpp"

namespace hdb {

// int: decimal digits only; text: never all digits, so pandas always loads it as text.
enum class param_type { integer, text };

struct parameter_decl {
  std::string name;
  param_type type = param_type::text;
  std::vector<std::string> values;  // the allowed values of a text parameter; empty: any
  std::string description;
};

struct metric_decl {
  std::string name;
  std::string unit;  // one of metric_units
  better direction = better::higher;
  std::string description;
  std::vector<std::string> traffic;  // classes a case may pick for it; empty: it has no peak
};

struct case_decl {
  std::string name;  // the `case` column
  std::string description;
  std::vector<std::string> parameters;  // exactly those appear in the case's label
  std::vector<std::string> metrics;     // the counters it may set
  std::vector<std::string> headlines;   // which of them it may make headlines
};

// Links whose rates meta.json records, from which every traffic class is composed.
enum class link_kind {
  pcie,         // one GPU's PCIe rate per direction at its maximum link
  hbm,          // one GPU's HBM peak
  nvlink_pair,  // NVLinks between the row's src and dst x per-link rate
  nvlink_gpu,   // one GPU's active NVLinks x per-link rate
};
enum class link_combine { sum, min, first };  // over the row's GPUs

struct traffic_class {
  std::string name;
  link_kind link = link_kind::pcie;
  link_combine combine = link_combine::first;
  int directions = 1;         // 2: both directions at once
  double traffic_factor = 1;  // bytes the hardware moves per byte the metric counts
  std::string basis;          // how the report words the peak, "PCIe per direction"
};

struct family_declaration {
  std::string family;
  std::string summary;
  std::vector<parameter_decl> parameters;  // declaration order
  std::vector<metric_decl> metrics;        // declaration order
  std::vector<case_decl> cases;            // declaration order
  std::string fit_metric;                  // "" when the family has no alpha-beta fit
  std::vector<traffic_class> traffic_classes;  // the family's own, beside the built-in ones
  nlohmann::ordered_json source;           // the document as read, for meta.json

  // nullptr when not declared.
  [[nodiscard]] const parameter_decl* parameter(std::string_view name) const;
  [[nodiscard]] const metric_decl* metric(std::string_view name) const;
  [[nodiscard]] const case_decl* case_kind(std::string_view name) const;
};

// The closed set of units.
inline constexpr std::string_view metric_units[] = {"GB/s", "us", "us/MiB", "B", "%", "ratio", "count"};

// Columns of results.csv that are never a parameter.
[[nodiscard]] bool is_core_column(std::string_view name);
// Keys Google Benchmark writes into every entry itself: never a metric, ignored when collecting.
[[nodiscard]] bool is_benchmark_field(std::string_view key);

// Checks everything schema.json's rules say (docs/csv-schema.md) and throws harness_error
// "<family>: <what is wrong>" on the first problem.
[[nodiscard]] family_declaration parse_declaration(const nlohmann::ordered_json& document);
// The same from text (a schema.json, or the context's `hdbench.schema`).
[[nodiscard]] family_declaration parse_declaration(std::string_view text);
// Reads and parses a file; errors name it.
[[nodiscard]] family_declaration read_declaration(const std::filesystem::path& path);

// The declarations of a manifest's families from `schema_dir`/<family>.json (as installed beside
// hdbench: <bin dir>/schema/), in manifest order. Throws harness_error naming a missing or bad file.
[[nodiscard]] std::vector<family_declaration> installed_declarations(const std::filesystem::path& manifest,
                                                                     const std::filesystem::path& schema_dir);

// The CSV's parameter columns: the union of the families' parameters, in the given order, each
// family's in declaration order, first appearance wins. Throws harness_error naming both families
// when a parameter is `int` in one and `text` in another.
[[nodiscard]] std::vector<std::string> parameter_columns(const std::vector<const family_declaration*>& families);

}  // namespace hdb
