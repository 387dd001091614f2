#pragma once
// The results.csv model (docs/csv-schema.md, schema 3): one tidy row per number, its writer and
// its reader. The core columns are fixed here; the parameter columns come from the run's family
// declarations (declaration.hpp), so a new parameter is a new column, never a schema bump.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/contract/declaration.hpp"  // better, leading_columns, trailing_columns

namespace hdb {

inline constexpr int results_schema_version = 3;

enum class statistic { sample, median, mean, min, max, stddev, cv, fit };
enum class row_status { ok, skipped, failed };

[[nodiscard]] std::string_view to_string(better value);
[[nodiscard]] std::string_view to_string(statistic value);
[[nodiscard]] std::string_view to_string(row_status value);
// Parsers throw harness_error naming the unknown word.
[[nodiscard]] better parse_better(std::string_view text);
[[nodiscard]] statistic parse_statistic(std::string_view text);
[[nodiscard]] row_status parse_row_status(std::string_view text);

struct result_row {
  std::string run_id;
  std::string family;
  std::string case_name;
  std::optional<int> device;  // the first (lowest) CUDA index of the case's GPUs
  std::optional<int> gpus;    // how many GPUs the case spans
  std::string gpu_uuid;       // their UUIDs, comma-separated, in device order (identity, not matched on)
  std::map<std::string, std::string> params;  // declared parameters that are set, text as labelled
  std::string metric;
  std::string unit;
  std::optional<better> better_direction;
  bool headline = false;
  std::string traffic;  // "" or the traffic class the case picked for this metric (traffic.hpp)
  std::optional<statistic> stat;
  std::optional<int> sample_index;
  std::optional<double> value;
  row_status status = row_status::ok;
  std::string reason;
  // How many repetitions the case took and why it stopped (hdb/util/stopping.hpp: fixed, precise,
  // ceiling, time, failed); unset in a file written before the binaries said so.
  std::optional<int> repetitions;
  std::string stopped_by;
  // Which measurement of the case the row is: 1 the run's, 2 and on the confirmations `hdbench run`
  // measured after a figure of the case FAILed (runner.hpp); 1 in a file written before them.
  int attempt = 1;

  [[nodiscard]] const std::string& param(std::string_view key) const;  // "" when unset
};

// "device=0 gpus=2 direction=h2d size_bytes=1048576": what a human needs to tell one case from
// another (the UUID left out: the node table maps indices to cards). Parameters in name order.
[[nodiscard]] std::string describe_case(const result_row& row);

// Shortest text that reads back as the same double ("52.1", "1e-05").
[[nodiscard]] std::string format_value(double value);

// The core columns before the parameter columns, and those after them, in file order, are
// leading_columns() and trailing_columns() (hdb/contract/declaration.hpp: a parameter never takes one's name).

// What a core column's fields hold as write_results_csv writes them: schema_version, device, gpus
// sample_index and repetitions whole numbers ("int"), value a number ("float"), every other core
// column text.
enum class column_type { integer, number, text };
[[nodiscard]] std::string_view to_string(column_type value);  // "int", "float", "text"
[[nodiscard]] column_type core_column_type(std::string_view name);

// results.csv's core columns and statistics, the one list the plots and tests read (no copy of
// it is written in Python): {"schema_version": 3, "leading_columns": [{"name", "type"}, ...],
// "trailing_columns": [...], "statistics": ["sample", ...], "later_columns": ["repetitions", ...]},
// the columns in file order around the parameters, the statistics in the order of `enum
// statistic`, and the core columns added within schema 3, which a reader takes as unset in an
// older file that lacks them. `hdbench schema-doc --json`
// prints it and meta.json records it as `results_csv` (write_meta).
[[nodiscard]] nlohmann::json results_csv_record();

// `param_columns` are the run's declared parameters (parameter_columns() in declaration.hpp).
// Throws harness_error when a row sets a parameter that has no column.
[[nodiscard]] std::string write_results_csv(const std::vector<result_row>& rows,
                                            const std::vector<std::string>& param_columns);

struct results_table {
  std::vector<std::string> param_columns;  // every header column that is not a core column, in file order
  std::vector<result_row> rows;
};

// Schema 3 only. Throws harness_error for a missing column, a malformed field or another schema
// version (schema 1 with the hint to rebuild it with `hdbench collect RUN_DIR`).
[[nodiscard]] results_table read_results_csv(std::string_view text);

}  // namespace hdb
