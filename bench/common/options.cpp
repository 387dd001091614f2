#include "hdb/options.hpp"

#include "hdb/sizes.hpp"

#include <algorithm>
#include <charconv>
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

const std::vector<flag_spec>& shared_flags() {
  static const std::vector<flag_spec> flags = {
      {"quick", "", "", "short profile: fewer sizes and repetitions (CI smoke runs)"},
      {"device", "0", "", "CUDA device index to measure"},
      {"numa", "auto", "",
       "host placement: auto (the GPU's NUMA node: thread bound to its CPUs, memory preferred there), "
       "none, or a node number"},
      {"gate-timeout-ms", "2000", "", "how long the spin gate holds a stream before the batch fails"},
  };
  return flags;
}

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
    if (arg == "--quick") {
      options.quick = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + arg + "' (see --help)");
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name == "quick") throw usage_error("flag --quick takes no value");
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
    if (f.name != "quick") options.values[f.name] = pick(f);
  }
  options.device = parse_non_negative("device", options.values["device"]);
  options.numa = parse_numa_request(options.values["numa"]);
  const int timeout = parse_non_negative("gate-timeout-ms", options.values["gate-timeout-ms"]);
  if (timeout == 0) throw usage_error("bad value for --gate-timeout-ms: must be > 0");
  options.gate_timeout = std::chrono::milliseconds(timeout);
  return options;
}

std::string describe_flags(const std::vector<flag_spec>& family_flags) {
  std::string text;
  const auto describe = [&](const flag_spec& f) {
    std::string usage = "--" + f.name;
    if (f.name != "quick") usage += "=" + (f.default_value.empty() ? std::string("VALUE") : f.default_value);
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
