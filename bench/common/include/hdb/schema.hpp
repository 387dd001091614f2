#pragma once
// A family's declaration (bench/<family>/schema.json, embedded in its binary) and the checks the
// shared main holds every case to: parameters, values, counters, headlines and traffic classes
// must be declared there, so no layer downstream ever meets a name the family did not describe.
// Host-only (no CUDA, no Google Benchmark), so the rules are unit-tested without a GPU.
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hdb {

// A case's parameters as labelled, in label order: {"direction", "h2d"}, {"size_bytes", "4096"}.
using label_list = std::vector<std::pair<std::string, std::string>>;

// A schema.json that breaks the contract (unknown unit, a metric named like a Google Benchmark
// key, a case listing an undeclared metric, ...): a programming error in the family.
class schema_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct schema_parameter {
  bool is_int = false;              // "int": decimal digits only; else "text": never all digits
  std::vector<std::string> values;  // text: the closed list of allowed values (empty: any)
};

struct schema_metric {
  std::string unit;
  std::string better;
  std::vector<std::string> traffic;  // the traffic classes a case may pick for it
};

struct schema_case {
  std::vector<std::string> parameters;
  std::vector<std::string> metrics;
  std::vector<std::string> headlines;
};

struct family_schema {
  std::string family;
  std::string summary;
  std::string fit_metric;  // empty: none
  std::map<std::string, schema_parameter> parameters;
  std::map<std::string, schema_metric> metrics;
  std::map<std::string, schema_case> cases;
  std::vector<std::string> family_classes;  // the family's own traffic classes
  std::string text;  // the declaration as one line of JSON, key order kept (hdbench.schema)
};

// Parses and checks a declaration; throws schema_error naming what is wrong.
[[nodiscard]] family_schema parse_schema(std::string_view json_text);

// Google Benchmark's own keys of a run in its JSON output: a counter of that name would collide.
[[nodiscard]] bool is_benchmark_json_key(std::string_view name);

// What is wrong with a case at registration, or nullopt: its kind and every label parameter
// must be declared for the kind, every value must have the parameter's type and, for a text
// parameter with values, be one of them. The message names the parameter.
[[nodiscard]] std::optional<std::string> check_registration(const family_schema& schema, std::string_view kind,
                                                            const label_list& labels);

// What is wrong with a finished case, or nullopt: every counter it set must be declared for its
// kind (and never be named like a Google Benchmark key), every headline must be one of the kind's
// headlines, every traffic pick a metric of the kind with a class that metric allows. The
// message names the counter, headline or metric.
[[nodiscard]] std::optional<std::string> check_outputs(const family_schema& schema, std::string_view kind,
                                                       const std::vector<std::string>& counters,
                                                       const std::vector<std::string>& headlines,
                                                       const std::map<std::string, std::string>& traffic);

}  // namespace hdb
