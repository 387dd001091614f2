#include "hdb/harness/family_status.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "hdb/harness/error.hpp"

namespace hdb {
namespace {

constexpr std::array<std::string_view, 4> state_names = {"ok", "crashed", "timed_out", "failed"};

std::string signal_text(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (abbrev != nullptr ? std::string(", SIG") + abbrev : "");
}

std::string after_cases(std::size_t cases) {
  return " after " + std::to_string(cases) + (cases == 1 ? " case" : " cases");
}

// The binary's own last word, e.g. "no CUDA-capable device is detected". Google Benchmark's
// start-up banner warnings ("***WARNING*** Library was built as DEBUG") are not that word.
std::string last_stderr_line(const std::string& tail) {
  constexpr std::size_t max_length = 200;
  std::istringstream lines(tail);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line.rfind("***WARNING***", 0) != 0) last = line;
  }
  if (last.empty()) return {};
  if (last.size() > max_length) last = last.substr(0, max_length) + "...";
  return ": " + last;
}

}  // namespace

std::string_view to_string(family_state state) { return state_names.at(static_cast<std::size_t>(state)); }

family_state parse_family_state(std::string_view text) {
  const auto it = std::find(state_names.begin(), state_names.end(), text);
  if (it == state_names.end()) throw harness_error("unknown family status '" + std::string(text) + "'");
  return static_cast<family_state>(it - state_names.begin());
}

std::string failure_reason(const family_status& s) {
  switch (s.state) {
    case family_state::ok:
      return {};
    case family_state::crashed:
      return "crashed (" + signal_text(s.signal.value_or(0)) + ")" + after_cases(s.cases) + last_stderr_line(s.stderr_tail);
    case family_state::timed_out:
      return "timed out after " + std::to_string(static_cast<long>(s.timeout_s)) + " s, killed" + after_cases(s.cases);
    case family_state::failed:
      if (!s.error.empty()) return s.error;
      return "exited with code " + std::to_string(s.exit_code.value_or(-1)) + after_cases(s.cases) +
             last_stderr_line(s.stderr_tail);
  }
  return {};
}

nlohmann::json to_json(const family_status& s) {
  nlohmann::json j = {{"family", s.family},
                      {"status", to_string(s.state)},
                      {"reason", failure_reason(s)},
                      {"binary", s.binary},
                      {"command_line", s.command_line},
                      {"exit_code", nullptr},
                      {"signal", nullptr},
                      {"elapsed_s", s.elapsed_s},
                      {"timeout_s", s.timeout_s},
                      {"cases", s.cases},
                      {"error", s.error},
                      {"stderr_tail", s.stderr_tail}};
  if (s.exit_code) j["exit_code"] = *s.exit_code;
  if (s.signal) j["signal"] = *s.signal;
  return j;
}

family_status family_status_from_json(const nlohmann::json& j) {
  try {
    family_status s;
    s.family = j.at("family").get<std::string>();
    s.state = parse_family_state(j.at("status").get<std::string>());
    s.binary = j.value("binary", std::string());
    s.command_line = j.value("command_line", std::vector<std::string>());
    if (const auto& code = j.value("exit_code", nlohmann::json()); code.is_number_integer()) s.exit_code = code.get<int>();
    if (const auto& sig = j.value("signal", nlohmann::json()); sig.is_number_integer()) s.signal = sig.get<int>();
    s.elapsed_s = j.value("elapsed_s", 0.0);
    s.timeout_s = j.value("timeout_s", 0.0);
    s.cases = j.value("cases", std::size_t{0});
    s.error = j.value("error", std::string());
    s.stderr_tail = j.value("stderr_tail", std::string());
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw harness_error(std::string("bad family status: ") + e.what());
  }
}

}  // namespace hdb
