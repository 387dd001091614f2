#pragma once
// Command-line flags of a family binary: the shared ones every family understands, the
// family's own, and everything Google Benchmark owns (--benchmark_*), which passes through.
#include "hdb/devices.hpp"
#include "hdb/sweep.hpp"
#include "hdb/host_placement.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hdb {

struct flag_spec {
  std::string name;           // without the leading "--"
  std::string default_value;  // used when the flag is absent
  std::string quick_value;    // used with --quick when the flag is absent (empty: default_value)
  std::string help;
  // Checks a value (given, default or quick) before any CUDA call; throws usage_error naming the
  // flag. Empty: any text is accepted here and the family checks it itself.
  std::function<void(const std::string& flag, const std::string& value)> check = {};
};

// Ready-made checks for flag_spec::check.
namespace flag_checks {
// A size list (hdb/sizes.hpp) whose every size is > 0.
void size_list(const std::string& flag, const std::string& value);
// Comma-separated whole numbers >= 1, e.g. "1,2,4,8".
void positive_int_list(const std::string& flag, const std::string& value);
}  // namespace flag_checks

// "1,2,4" -> {1,2,4}; throws usage_error naming --flag for anything else or a value < 1.
[[nodiscard]] std::vector<int> parse_positive_int_list(const std::string& flag, const std::string& value);

// How a case's repetitions end (--stopping; docs/methodology.md, "How many repetitions"):
// precision: a case a decision reads repeats until its median is sure enough for that decision;
// fixed: every case repeats a fixed count. auto is precision on a verdict run, fixed otherwise.
enum class stopping_mode { precision, fixed };

struct run_options {
  bool quick = false;
  bool verdict = false;  // --verdict: only the cases the declaration's checks and gates select
  bool help = false;
  bool version = false;
  device_selection devices;  // --devices (or its synonym --device)
  sweep_selection sweep;     // --sweep-devices, --sweep-pairs
  std::string case_costs;    // --case-costs: "" = not recorded
  int assume_gpus = 0;       // --assume-gpus (listing only)
  numa_request numa;
  std::chrono::milliseconds gate_timeout{2000};
  std::chrono::seconds lock_timeout{600};
  // Whether the user chose repetitions: then the family must not inject its own.
  bool user_repetitions = false;
  stopping_mode stopping = stopping_mode::fixed;
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
