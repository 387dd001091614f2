#pragma once
// `hdbench convert RUN_DIR`: rewrites a schema-2 results.csv as schema 3, the one place that still
// reads schema 2 (docs/csv-schema.md). Committed runs whose raw/ is gone stay readable this way.
// - names: bench/renames-schema3.json (installed beside hdbench) renames metrics, parameters and
//   values per family (a value renamed to null leaves the parameter unset) and gives each
//   converted metric its traffic class (schema 2 recorded none);
// - parameters: the old columns and `extra` become the case kind's declared parameters; `device`
//   "0,1" becomes device 0, gpus 2; a parameter the case kind does not declare is dropped, counted;
// - rows: metric rows the case kind does not declare are dropped and counted (Google Benchmark's
//   cpu_time and iterations filed under a family's metric names, issue 17); `benchmark` and the
//   derived statistics go; medians are recomputed from the samples (a metric without samples keeps
//   its median, mean and stddev rows, as an aggregates-only run writes them); fit rows are
//   recomputed from those medians; unit, better and headline follow the declaration.
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hdb/harness/data/installed_declarations.hpp"
#include "hdb/harness/data/results.hpp"

namespace hdb {

struct conversion {
  std::vector<std::string> param_columns;
  std::vector<result_row> rows;
  std::size_t rows_read = 0;
  // Rows of the schema-2 file (any statistic) dropped because their metric is not declared for
  // their case kind, by (family, case, metric).
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> undeclared_metric_rows;
  // Set parameter values dropped because the case kind does not declare the parameter, by
  // (family, case, parameter), counted once per row of the old file.
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> undeclared_parameter_values;
  std::size_t derived_rows_dropped = 0;  // mean/min/max/stddev/cv and the old median/fit rows
};

// Converts the text of a schema-2 results.csv with the families' current declarations and the
// rename table's JSON text. Throws harness_error naming the line for a file that is not schema 2,
// a family or case kind without a declaration, a value the declaration refuses, or two rows that
// the conversion would make the same.
[[nodiscard]] conversion convert_schema2(std::string_view csv_text, const std::vector<family_declaration>& declarations,
                                         std::string_view renames_json);

// The lines `hdbench convert` prints: rows read and written, and every count of `conversion`.
[[nodiscard]] std::string describe_conversion(const conversion& result);

// Converts RUN_DIR/results.csv in place and records each converted family's declaration and plot
// module in RUN_DIR/meta.json (as collect does). `bin_dir` holds suite.json, schema/ and
// renames-schema3.json. Returns the conversion for its counts.
conversion convert_run(const std::filesystem::path& run_dir, const std::filesystem::path& bin_dir);

}  // namespace hdb
