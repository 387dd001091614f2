#pragma once
// Reads what a family binary wrote with --benchmark_out (docs/benchmark-output.md). The
// binaries flush after every case, so a killed binary leaves a valid JSON *prefix*: the
// reader keeps the context and every complete entry of the "benchmarks" array.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/installed_declarations.hpp"

namespace hdb {

enum class run_outcome { measured, skipped, failed };

// One entry of the "benchmarks" array, reduced to what the harness uses.
struct raw_run {
  std::string run_name;
  bool aggregate = false;
  std::string aggregate_name;      // "median", "mean", "stddev", "cv", ... for aggregates
  std::optional<int> repetition_index;
  std::string label;
  run_outcome outcome = run_outcome::measured;
  std::string message;             // skip reason (without "skipped: ") or error message
  std::map<std::string, double> numbers;  // every numeric field: counters and Google Benchmark's own
};

struct raw_family_output {
  nlohmann::json context;                 // the "context" object as written
  // The family's declaration from the context's `hdbench.schema`; nullopt when the binary
  // published none (built before schema 3).
  std::optional<family_declaration> declaration;
  std::vector<raw_run> runs;              // complete entries, file order
  bool complete = false;                  // the whole document parsed (not truncated)
};

// Throws harness_error when not even the context could be read (empty, garbage, or cut
// before the context ended) or when hdbench.schema is not a valid declaration.
[[nodiscard]] raw_family_output read_raw_json(std::string_view text);

// Distinct cases (run names) among the complete entries: "cases finished" for progress
// and failure messages.
[[nodiscard]] std::size_t count_cases(const raw_family_output& output);

}  // namespace hdb
