#include "hdb/options.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/util/stopping.hpp"
#include "hdb/util/units.hpp"
#include "hdb/sizes.hpp"
#include "hdb/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace hdb {
namespace {

int parse_non_negative(const std::string& flag, const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw usage_error("bad value for --" + flag + ": '" + text + "' (expected a whole number >= 0)");
  }
  return value;
}

// The stopping rule's figures from hdb/util/stopping.hpp, so the help cannot drift from the rule.
// "a quarter" is stopping_policy::tolerance_fraction in words (options_test holds the two together).
std::string stopping_help() {
  const stopping_policy precision;
  const repetition_policy fixed = repetitions_for(false);
  return "how a case's repetitions end: precision (a case that check or compare reads repeats until its median's " +
         std::to_string(std::lround(100 * precision.confidence)) + " % interval is within a quarter of its tolerance: " +
         std::to_string(precision.floor) + " to " + std::to_string(precision.ceiling) + " repetitions, " +
         format_seconds(precision.max_seconds) + "), fixed (" + std::to_string(fixed.regular) + ", or " +
         std::to_string(fixed.headline) + " for a gated case), or auto (precision with --verdict, else fixed)";
}

const std::vector<flag_spec>& shared_flags() {
  static const std::vector<flag_spec> flags = {
      {"quick", "", "", "short profile: fewer sizes and repetitions (CI smoke runs)"},
      {"verdict", "", "",
       "only the cases that hdbench check grades and compare gates: those the declaration's checks and gates "
       "select (hdbench run --verdict)"},
      {"devices", "all", "", "CUDA devices to measure: all, or indices such as 0 / 0,1 / 0-3 (alias: --device)"},
      {"numa", "auto", "",
       "host placement: auto (the GPU's NUMA node: thread bound to its CPUs, memory preferred there), "
       "none, or a node number"},
      {"gate-timeout-ms", "2000", "", "how long the spin gate holds a stream before the batch fails"},
      {"lock-timeout-s", "600", "",
       "wait at most this long for another hdbench process measuring the same GPU to finish; 0 = refuse at once"},
      {"sweep-devices", "all", "",
       "GPUs that get every case; the others get their tier points (headline and checked cases, and those at "
       "sizes that are powers of 64): all, or indices such as 0,4 (hdbench run picks one GPU per class)"},
      {"sweep-pairs", "all", "", "ordered GPU pairs that get every pair case: all, none, or pairs such as 0>1,0>4"},
      {"stopping", "auto", "", stopping_help()},
      {"case-costs", "", "", "append each case's wall time (set-up and repetitions, seconds) to this file as JSON lines"},
      {"assume-gpus", "0", "",
       "with --benchmark_list_tests: list the cases for this many GPUs without touching any (planning on a login "
       "node); 0 = this node's"},
  };
  return flags;
}

// The shared flags that take no value: given or not.
bool is_switch(const std::string& name) { return name == "quick" || name == "verdict"; }

bool declares(const std::vector<flag_spec>& flags, const std::string& name) {
  return std::any_of(flags.begin(), flags.end(), [&name](const flag_spec& f) { return f.name == name; });
}

}  // namespace

const std::string& run_options::value(const std::string& name) const {
  const auto it = values.find(name);
  if (it == values.end()) throw std::logic_error("hdbench: no flag --" + name + " was declared");
  return it->second;
}

run_options parse_run_options(const std::vector<std::string>& args, const std::vector<flag_spec>& family_flags) {
  run_options options;
  std::map<std::string, std::string> given;
  std::string devices_spelling = "--devices";  // errors name the flag as the user wrote it
  if (!args.empty()) options.benchmark_args.push_back(args[0]);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--benchmark_", 0) == 0) {
      options.benchmark_args.push_back(arg);
      if (arg.rfind("--benchmark_repetitions=", 0) == 0) options.user_repetitions = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--version") {
      options.version = true;
      continue;
    }
    if (arg == "--quick") {
      options.quick = true;
      continue;
    }
    if (arg == "--verdict") {
      options.verdict = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + arg + "' (see --help)");
    const std::size_t eq = arg.find('=');
    std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name == "device") {  // the single-GPU spelling of earlier versions
      name = "devices";
      devices_spelling = "--device";
    }
    if (is_switch(name)) throw usage_error("flag --" + name + " takes no value");
    if (!declares(shared_flags(), name) && !declares(family_flags, name)) {
      throw usage_error("unknown flag --" + name + " (see --help)");
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    } else {
      throw usage_error("flag --" + name + " needs a value");
    }
    given[name] = value;
  }

  const auto pick = [&](const flag_spec& f) {
    if (const auto it = given.find(f.name); it != given.end()) return it->second;
    return options.quick && !f.quick_value.empty() ? f.quick_value : f.default_value;
  };
  for (const auto& f : family_flags) options.values[f.name] = pick(f);
  for (const auto& f : shared_flags()) {
    if (!is_switch(f.name)) options.values[f.name] = pick(f);
  }
  try {
    options.devices = parse_device_selection(options.values["devices"]);
  } catch (const usage_error& e) {
    std::string why = e.what();
    if (const auto at = why.find("--devices"); at != std::string::npos) why.replace(at, 9, devices_spelling);
    throw usage_error(why);
  }
  options.numa = parse_numa_request(options.values["numa"]);
  const int timeout = parse_non_negative("gate-timeout-ms", options.values["gate-timeout-ms"]);
  if (timeout == 0) throw usage_error("bad value for --gate-timeout-ms: must be > 0");
  options.gate_timeout = std::chrono::milliseconds(timeout);
  options.lock_timeout = std::chrono::seconds(parse_non_negative("lock-timeout-s", options.values["lock-timeout-s"]));
  options.sweep = parse_sweep_selection(options.values["sweep-devices"], options.values["sweep-pairs"]);
  options.case_costs = options.values["case-costs"];
  const std::string& stopping = options.values["stopping"];
  if (stopping == "precision") options.stopping = stopping_mode::precision;
  else if (stopping == "fixed") options.stopping = stopping_mode::fixed;
  else if (stopping == "auto") options.stopping = options.verdict ? stopping_mode::precision : stopping_mode::fixed;
  else throw usage_error("bad value for --stopping: '" + stopping + "' (expected precision, fixed or auto)");
  options.assume_gpus = parse_non_negative("assume-gpus", options.values["assume-gpus"]);
  // Every family flag is checked here, before the GPU is touched: a typo gets its own error on a
  // login node too, and never costs a CUDA context.
  for (const auto& f : family_flags) {
    if (f.check) f.check(f.name, options.values[f.name]);
  }
  return options;
}

namespace flag_checks {
void size_list(const std::string& flag, const std::string& value) {
  std::vector<std::size_t> sizes;
  try {
    sizes = parse_size_list(value);
  } catch (const usage_error& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
  if (sizes.empty()) throw usage_error("bad value for --" + flag + ": '" + value + "' names no size");
  if (sizes.front() == 0) throw usage_error("bad value for --" + flag + ": '" + value + "' includes a size of 0 bytes");
}

void positive_int_list(const std::string& flag, const std::string& value) {
  static_cast<void>(parse_positive_int_list(flag, value));
}
}  // namespace flag_checks

std::vector<int> parse_positive_int_list(const std::string& flag, const std::string& value) {
  std::vector<int> numbers;
  for (const std::string& item : split_list(value)) {
    const int n = parse_non_negative(flag, item);
    if (n < 1) throw usage_error("bad value for --" + flag + ": '" + value + "' (every number must be >= 1)");
    numbers.push_back(n);
  }
  return numbers;
}

std::string describe_flags(const std::vector<flag_spec>& family_flags) {
  std::string text;
  const auto describe = [&](const flag_spec& f) {
    std::string usage = "--" + f.name;
    if (!is_switch(f.name)) usage += "=" + (f.default_value.empty() ? std::string("VALUE") : f.default_value);
    const std::string quick_note = f.quick_value.empty() ? "" : " (--quick: " + f.quick_value + ")";
    char line[1024];
    std::snprintf(line, sizeof(line), "  %-26s %s%s\n", usage.c_str(), f.help.c_str(), quick_note.c_str());
    text += line;
  };
  text += "Family flags:\n";
  for (const auto& f : family_flags) describe(f);
  text += "Shared flags (every hdbench family):\n";
  for (const auto& f : shared_flags()) describe(f);
  text += "  --help                     this text, then Google Benchmark's own flags\n";
  return text;
}

}  // namespace hdb
