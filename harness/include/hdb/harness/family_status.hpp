#pragma once
// How one family binary's run ended, as stored in raw/<family>.status.json so that
// `collect` can rebuild results.csv and meta.json without a live run.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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
};

// One line saying why a family is not ok, e.g. "crashed (signal 6, SIGABRT) after 2 cases".
[[nodiscard]] std::string failure_reason(const family_status& status);

[[nodiscard]] nlohmann::json to_json(const family_status& status);
// Throws harness_error on a missing or mistyped field.
[[nodiscard]] family_status family_status_from_json(const nlohmann::json& object);

}  // namespace hdb
