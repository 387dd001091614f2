#include "hdb/host/nvidia_smi.hpp"

#include "hdb/host/lists.hpp"
#include "hdb/host/process.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace hdb {
namespace {

std::string hex(unsigned long long value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", value);
  return text;
}

}  // namespace

std::optional<double> smi_number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<unsigned long long> smi_mask(std::string_view text) {
  if (!text.starts_with("0x") || text.size() == 2) return std::nullopt;
  unsigned long long value = 0;
  const auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

const std::string& smi_row::text(std::string_view field) const {
  static const std::string none;
  const auto it = fields.find(field);
  return it == fields.end() ? none : it->second;
}

std::vector<smi_row> parse_smi_query(std::string_view csv, const std::vector<std::string>& fields) {
  std::vector<smi_row> rows;
  for (std::string_view line : split_nonempty(csv, '\n')) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto values = split_list(line, ',');
    if (values.size() != fields.size()) continue;
    smi_row row;
    for (std::size_t i = 0; i < fields.size(); ++i) row.fields[fields[i]] = values[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

smi_output run_nvidia_smi(const std::vector<std::string>& arguments, std::chrono::seconds timeout) {
  const auto smi = find_in_path("nvidia-smi");
  if (!smi) return {std::nullopt, "nvidia-smi not found in PATH"};
  child_spec spec;
  spec.argv = {smi->string()};
  spec.argv.insert(spec.argv.end(), arguments.begin(), arguments.end());
  spec.timeout = timeout;
  const auto result = run_with_deadline(spec);
  if (result.succeeded()) return {result.output, {}};
  return {std::nullopt, "nvidia-smi " + (arguments.empty() ? std::string() : arguments.front()) + " failed (" +
                            result.describe() + ")"};
}

smi_query query_gpus(const std::vector<std::string>& fields, const std::string& gpu, std::chrono::seconds timeout) {
  std::vector<std::string> asked = fields;
  const bool has_reasons = std::find(fields.begin(), fields.end(), smi_clock_event_reasons) != fields.end();
  smi_query query;
  for (const std::string_view reasons : {smi_clock_event_reasons, std::string_view("clocks_throttle_reasons.active")}) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (fields[i] == smi_clock_event_reasons) asked[i] = reasons;
    }
    std::vector<std::string> arguments = {"--query-gpu=" + join_list(asked), "--format=csv,noheader,nounits"};
    if (!gpu.empty()) arguments.insert(arguments.end(), {"-i", gpu});
    const auto out = run_nvidia_smi(arguments, timeout);
    if (out.text) {
      query.gpus = parse_smi_query(*out.text, fields);
      query.error = query.gpus.empty() ? "nvidia-smi " + arguments.front() + " printed no line of " +
                                             std::to_string(fields.size()) + " fields"
                                       : std::string();
      return query;
    }
    query.error = out.error;
    if (!has_reasons) break;  // nothing to ask for under an old name
  }
  return query;
}

const std::vector<clock_event_reason>& clock_event_reason_table() {
  static const std::vector<clock_event_reason> table = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  return table;
}

std::string describe_clock_event_reasons(unsigned long long mask) {
  std::string text;
  unsigned long long known = 0;
  for (const auto& [bit, name] : clock_event_reason_table()) {
    known |= bit;
    if ((mask & bit) != 0) text += (text.empty() ? "" : ",") + std::string(name);
  }
  if ((mask & ~known) != 0) text += (text.empty() ? "" : ",") + ("unknown " + hex(mask & ~known));
  return text.empty() ? "none" : text;
}

}  // namespace hdb
