#include "hdb/util/nvidia_smi.hpp"

#include "hdb/util/lists.hpp"
#include "hdb/util/process.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdio>

namespace hdb {
namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

std::optional<unsigned long long> whole_number(std::string_view text) {
  text = trimmed(text);
  unsigned long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "Replay Errors" -> "replay_errors"
std::string snake_case(std::string_view name) {
  std::string out;
  for (const char c : trimmed(name)) {
    if (c == ' ' || c == '-') {
      if (!out.empty() && out.back() != '_') out += '_';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// "0-2, 4-5" -> {0, 1, 2, 4, 5}; empty when any item is not a link index or a range of them.
std::vector<int> link_list(std::string_view text) {
  std::vector<int> links;
  for (const auto& item : split_nonempty(text)) {
    const auto dash = item.find('-');
    const auto first = whole_number(std::string_view(item).substr(0, dash));
    const auto last = dash == std::string::npos ? first : whole_number(std::string_view(item).substr(dash + 1));
    if (!first || !last || *last < *first || *last > 1024) return {};
    for (auto link = *first; link <= *last; ++link) links.push_back(static_cast<int>(link));
  }
  return links;
}

// The lines of `text` as printed, indentation kept (split_nonempty trims it, and nvidia-smi -q
// tells a new GPU section from its fields only by indentation).
std::vector<std::string_view> raw_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto end = text.find('\n');
    auto line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

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

std::optional<bool> smi_yes_no(std::string_view text) {
  if (text == "Yes") return true;
  if (text == "No") return false;
  return std::nullopt;
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
  if (!smi) return {std::nullopt, "nvidia-smi not found in PATH", {}};
  child_spec spec;
  spec.argv = {smi->string()};
  spec.argv.insert(spec.argv.end(), arguments.begin(), arguments.end());
  spec.timeout = timeout;
  spec.stderr_to = child_stream::capture;  // a refusal's words, wherever the driver prints them
  const auto result = run_with_deadline(spec);
  if (result.succeeded()) return {result.output, {}, {}};
  return {std::nullopt,
          "nvidia-smi " + (arguments.empty() ? std::string() : arguments.front()) + " failed (" + result.describe() + ")",
          result.output + result.error_output};
}

namespace {

smi_output ask_fields(const std::vector<std::string>& fields, std::chrono::seconds timeout) {
  return run_nvidia_smi({"--query-gpu=" + join_list(fields), "--format=csv,noheader,nounits"}, timeout);
}

// A driver's refusal of a field it does not know: 'Field "fabric.state" is not a valid field to query.'
bool refused_a_field(const smi_output& out) { return out.refusal.find("is not a valid field") != std::string::npos; }

// The field of `asked` the refusal names, if it names one.
std::optional<std::string> refused_field(const smi_output& out, const std::vector<std::string>& asked) {
  for (const auto& field : asked) {
    if (out.refusal.find('"' + field + '"') != std::string::npos) return field;
  }
  return std::nullopt;
}

}  // namespace

smi_field_query query_gpu_fields(const std::vector<std::string>& fields, std::chrono::seconds timeout) {
  smi_field_query query;
  std::vector<std::string> asked = fields;
  while (!asked.empty()) {
    const auto out = ask_fields(asked, timeout);
    ++query.calls;
    if (out.text) {
      query.gpus = parse_smi_query(*out.text, asked);
      if (query.gpus.empty()) {
        query.error = "nvidia-smi --query-gpu printed no line of " + std::to_string(asked.size()) + " fields";
      }
      return query;
    }
    if (!refused_a_field(out)) {
      query.error = out.error;
      return query;
    }
    const auto field = refused_field(out, asked);
    if (!field || *field == asked.front()) break;  // a refusal that names none of them: each field alone
    query.refused.push_back(*field);
    std::erase(asked, *field);
  }
  if (asked.empty()) return query;
  // The key alone lists the GPUs; then each field with the key, joined by it.
  const std::vector<std::string> key = {asked.front()};
  const auto listed = ask_fields(key, timeout);
  ++query.calls;
  if (!listed.text) {
    query.error = listed.error;
    return query;
  }
  query.gpus = parse_smi_query(*listed.text, key);
  for (std::size_t i = 1; i < asked.size(); ++i) {
    const std::vector<std::string> pair = {asked.front(), asked[i]};
    const auto out = ask_fields(pair, timeout);
    ++query.calls;
    if (!out.text) {
      if (refused_a_field(out)) {
        query.refused.push_back(asked[i]);
        continue;
      }
      query.gpus.clear();
      query.error = out.error;
      return query;
    }
    for (const auto& row : parse_smi_query(*out.text, pair)) {
      const auto gpu = std::find_if(query.gpus.begin(), query.gpus.end(),
                                    [&](const smi_row& known) { return known.text(key.front()) == row.text(key.front()); });
      if (gpu != query.gpus.end()) gpu->fields[asked[i]] = row.text(asked[i]);
    }
  }
  if (query.gpus.empty()) query.error = "nvidia-smi --query-gpu=" + key.front() + " printed no GPU";
  return query;
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

std::vector<smi_pcie_replays> parse_pcie_replays(std::string_view query_text) {
  std::vector<smi_pcie_replays> gpus;
  bool in_gpu = false;
  for (const std::string_view line : raw_lines(query_text)) {
    if (line.starts_with("GPU ")) {  // unindented: a new GPU section
      gpus.emplace_back();
      in_gpu = true;
      continue;
    }
    const auto colon = line.find(':');
    if (!in_gpu || colon == std::string_view::npos) continue;
    const auto key = trimmed(line.substr(0, colon));
    const auto value = trimmed(line.substr(colon + 1));
    auto& gpu = gpus.back();
    if (key == "GPU UUID") gpu.uuid = value;
    else if (key == "Replays Since Reset") gpu.replays = whole_number(value);
    else if (key == "Replay Number Rollovers") gpu.rollovers = whole_number(value);
  }
  std::erase_if(gpus, [](const smi_pcie_replays& gpu) { return gpu.uuid.empty(); });
  return gpus;
}

std::vector<smi_remap_histogram> parse_remap_histograms(std::string_view query_text) {
  std::vector<smi_remap_histogram> gpus;
  // The histogram's header indentation while its lines ("Max : 2560 bank(s)") follow, deeper;
  // npos outside it.
  constexpr auto outside = std::string_view::npos;
  std::size_t histogram_indent = outside;
  for (const std::string_view line : raw_lines(query_text)) {
    if (line.starts_with("GPU ")) {  // unindented: a new GPU section
      gpus.emplace_back();
      histogram_indent = outside;
      continue;
    }
    const auto indent = line.find_first_not_of(" \t");
    if (gpus.empty() || indent == std::string_view::npos) continue;
    if (histogram_indent != outside && indent <= histogram_indent) histogram_indent = outside;
    const auto colon = line.find(':');
    const auto key = trimmed(line.substr(0, colon));
    const auto value = colon == std::string_view::npos ? std::string_view() : trimmed(line.substr(colon + 1));
    if (key == "Bank Remap Availability Histogram" && value.empty()) {
      histogram_indent = indent;
    } else if (key == "GPU UUID") {
      gpus.back().uuid = value;
    } else if (histogram_indent != outside && colon != std::string_view::npos) {
      std::string level;
      for (const char c : key) level += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const auto banks = whole_number(value.substr(0, value.find(' ')));  // "2560 bank(s)"
      if (banks && (level == "max" || level == "high" || level == "partial" || level == "low" || level == "none")) {
        gpus.back().banks[level] = *banks;
      }
    }
  }
  std::erase_if(gpus, [](const smi_remap_histogram& gpu) { return gpu.uuid.empty(); });
  return gpus;
}

std::vector<smi_nvlink_errors> parse_nvlink_error_counters(std::string_view text) {
  std::vector<smi_nvlink_errors> gpus;
  for (std::string_view line : raw_lines(text)) {
    line = trimmed(line);
    if (line.starts_with("GPU ")) {
      smi_nvlink_errors gpu;
      const auto colon = line.find(':');
      if (colon != std::string_view::npos) {
        if (const auto index = whole_number(line.substr(4, colon - 4))) gpu.index = static_cast<int>(*index);
      }
      const auto uuid = line.find("(UUID:");
      const auto close = line.rfind(')');
      if (uuid != std::string_view::npos && close != std::string_view::npos && close > uuid) {
        gpu.uuid = trimmed(line.substr(uuid + 6, close - uuid - 6));
      }
      gpus.push_back(std::move(gpu));
      continue;
    }
    const bool folded = line.starts_with("Links ");
    if (gpus.empty() || (!folded && !line.starts_with("Link "))) continue;
    // "Link 3: Replay Errors: 2353" or "Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0"
    const auto first_colon = line.find(':');
    const auto last_colon = line.rfind(':');
    if (first_colon == std::string_view::npos || last_colon == first_colon) continue;
    const auto links = link_list(line.substr(folded ? 6 : 5, first_colon - (folded ? 6 : 5)));
    const auto value = whole_number(line.substr(last_colon + 1));
    if (links.empty() || !value) continue;
    auto name = trimmed(line.substr(first_colon + 1, last_colon - first_colon - 1));
    // "Replay/Recovery/CRC Errors" names three counters that share the last word.
    std::string suffix;
    if (const auto space = name.rfind(' '); name.find('/') != std::string_view::npos && space != std::string_view::npos) {
      suffix = name.substr(space);
      name = name.substr(0, space);
    }
    for (const auto link : links) {
      for (const auto& part : split_nonempty(name, '/')) {
        gpus.back().counters.push_back({link, snake_case(part + suffix), *value});
      }
    }
  }
  return gpus;
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
