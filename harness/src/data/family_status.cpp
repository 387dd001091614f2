#include "hdb/harness/data/family_status.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <sstream>

#include "hdb/harness/common/error.hpp"

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

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "numa.placement: GPU reports no NUMA node...": a Google Benchmark context line, whose key is
// lower case, dotted and has no spaces.
bool context_line(std::string_view line) {
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos || colon == 0) return false;
  const auto key = line.substr(0, colon);
  const bool key_chars = std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
  return key_chars && key.find('.') != std::string_view::npos && key.front() != '.';
}

// Google Benchmark's start-up banner on stderr: date, "Running ...", "Run on (...)", the CPU
// caches, load average and its ***WARNING*** lines.
bool banner_line(std::string_view line) {
  for (const std::string_view prefix : {"***WARNING***", "Running ", "Run on (", "CPU Caches:", "Load Average:"}) {
    if (line.starts_with(prefix)) return true;
  }
  const bool date = line.size() >= 11 && std::isdigit(static_cast<unsigned char>(line[0])) && line[4] == '-' &&
                    line[7] == '-' && line[10] == 'T';
  const auto trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
  const bool cache = trimmed.size() > 3 && trimmed[0] == 'L' && std::isdigit(static_cast<unsigned char>(trimmed[1])) &&
                     trimmed[2] == ' ' && line.front() == ' ';
  return date || cache;
}

bool error_looking(const std::string& lowered) {
  for (const std::string_view word : {"error", "fatal", "failed", "failure", "terminate", "what():", "assertion", "abort",
                                      "exception", "out of memory", "segmentation fault", "core dumped"}) {
    if (lowered.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string with_reason(const std::string& line) { return line.empty() ? std::string() : ": " + line; }

}  // namespace

std::string error_line(const std::string& stderr_tail, bool any_last_line) {
  constexpr std::size_t max_length = 200;
  std::istringstream lines(stderr_tail);
  std::string error;
  std::string warning;
  std::string last;
  for (std::string line; std::getline(lines, line);) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || context_line(line) || banner_line(line)) continue;
    last = line;
    const auto lowered = lower(line);
    if (!error_looking(lowered)) continue;
    (lowered.find("warning") != std::string::npos ? warning : error) = line;
  }
  std::string chosen = !error.empty() ? error : !warning.empty() ? warning : any_last_line ? last : std::string();
  const auto first = chosen.find_first_not_of(' ');
  chosen.erase(0, first == std::string::npos ? chosen.size() : first);
  if (chosen.size() > max_length) chosen = chosen.substr(0, max_length) + "...";
  return chosen;
}

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
      return "crashed (" + signal_text(s.signal.value_or(0)) + ")" + after_cases(s.cases) +
             with_reason(error_line(s.stderr_tail, false));
    case family_state::timed_out:
      return "timed out after " + std::to_string(static_cast<long>(s.timeout_s)) + " s, killed" + after_cases(s.cases);
    case family_state::failed:
      if (!s.error.empty()) return s.error;
      return "exited with code " + std::to_string(s.exit_code.value_or(-1)) + after_cases(s.cases) +
             with_reason(error_line(s.stderr_tail, true));
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
  if (s.activity) j["activity"] = to_json(*s.activity);
  if (!s.case_costs.empty()) j["case_costs"] = s.case_costs;
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
    if (const auto it = j.find("activity"); it != j.end() && it->is_object()) s.activity = family_activity_from_json(*it);
    if (const auto it = j.find("case_costs"); it != j.end() && it->is_object()) {
      for (const auto& [name, seconds] : it->items()) {
        if (seconds.is_number()) s.case_costs[name] = seconds.get<double>();
      }
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw harness_error(std::string("bad family status: ") + e.what());
  }
}

}  // namespace hdb
