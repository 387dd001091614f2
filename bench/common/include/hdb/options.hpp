#pragma once
// Command-line flags of a family binary: the shared ones every family understands, the
// family's own, and everything Google Benchmark owns (--benchmark_*), which passes through.
#include "hdb/topology.hpp"

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace hdb {

struct flag_spec {
  std::string name;           // without the leading "--"
  std::string default_value;  // used when the flag is absent
  std::string quick_value;    // used with --quick when the flag is absent (empty: default_value)
  std::string help;
};

struct run_options {
  bool quick = false;
  bool help = false;
  int device = 0;
  numa_request numa;
  std::chrono::milliseconds gate_timeout{2000};
  // Whether the user chose repetitions: then the family must not inject its own.
  bool user_repetitions = false;
  // Every family flag (including --sizes) with its effective value.
  std::map<std::string, std::string> values;
  // argv for Google Benchmark: program name plus every --benchmark_* argument.
  std::vector<std::string> benchmark_args;

  [[nodiscard]] const std::string& value(const std::string& name) const;
};

// Throws usage_error naming the offending argument.
[[nodiscard]] run_options parse_run_options(const std::vector<std::string>& args,
                                            const std::vector<flag_spec>& family_flags);

// The shared flags' descriptions plus the family's, for --help.
[[nodiscard]] std::string describe_flags(const std::vector<flag_spec>& family_flags);

}  // namespace hdb
