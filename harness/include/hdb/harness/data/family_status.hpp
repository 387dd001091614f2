#pragma once
// How one family binary's run ended, as stored in raw/<family>.status.json so that
// `collect` can rebuild results.csv and meta.json without a live run.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/gpu_activity.hpp"

namespace hdb {

enum class family_state { ok, crashed, timed_out, failed };

[[nodiscard]] std::string_view to_string(family_state state);
[[nodiscard]] family_state parse_family_state(std::string_view text);

struct family_status {
  std::string family;
  family_state state = family_state::ok;
  std::string binary;
  std::vector<std::string> command_line;
  std::optional<int> exit_code;  // when it exited
  std::optional<int> signal;     // when a signal ended it
  double elapsed_s = 0;
  double timeout_s = 0;
  std::size_t cases = 0;         // distinct cases in its JSON output
  std::string error;             // harness-side reason: "binary not found: ...", "no valid JSON output: ..."
  std::string stderr_tail;
  std::optional<family_activity> activity;  // nvidia-smi around the run; absent in older status files
  // Each case's wall time (set-up and every repetition, seconds) from the binary's --case-costs
  // file: what `hdbench run --plan` estimates a run from. Empty in older status files.
  std::map<std::string, double> case_costs;
};

// One line saying why a family is not ok, e.g. "crashed (signal 6, SIGABRT) after 2 cases:
// terminate called after throwing ...". The cause is the last line of the stderr tail that
// looks like an error (see error_line); failing that, for a non-zero exit, the binary's last
// line that is not Google Benchmark's informational output; else the signal or exit code alone.
[[nodiscard]] std::string failure_reason(const family_status& status);

// The line of a stderr tail that names why a family ended, or "" when none does. Google
// Benchmark's context ("numa.placement: ...", "gpu.clocks.source: ...") and banner lines are
// informational and never chosen, even when they contain "failed". Among the rest the last line
// with an error word (error, fatal, failed, failure, terminate, what(), Assertion, abort,
// exception, out of memory, segmentation fault) wins, a warning only when nothing else matches;
// with `any_last_line` (the binary chose to exit and printed its reason last) the last remaining
// line is the fallback.
[[nodiscard]] std::string error_line(const std::string& stderr_tail, bool any_last_line);

[[nodiscard]] nlohmann::json to_json(const family_status& status);
// Throws harness_error on a missing or mistyped field.
[[nodiscard]] family_status family_status_from_json(const nlohmann::json& object);

}  // namespace hdb
