#include "hdb/harness/data/raw_json.hpp"

#include <set>

#include "hdb/harness/common/error.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

constexpr std::string_view skip_prefix = "skipped: ";

// Google Benchmark prints non-finite doubles as bare NaN / Infinity, which JSON forbids.
// Outside strings they become null, so the value reads as missing instead of failing the file.
std::string nonfinite_to_null(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const std::string_view word : {"-Infinity", "Infinity", "-NaN", "NaN"}) {
      if (text.substr(i, word.size()) == word) {
        out += "null";
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

std::optional<std::string> string_field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

raw_run to_raw_run(const json& entry) {
  raw_run run;
  run.run_name = string_field(entry, "run_name").value_or(string_field(entry, "name").value_or(""));
  run.aggregate = string_field(entry, "run_type") == "aggregate";
  run.aggregate_name = string_field(entry, "aggregate_name").value_or("");
  if (const auto it = entry.find("repetition_index"); it != entry.end() && it->is_number_integer()) {
    run.repetition_index = it->get<int>();
  }
  run.label = string_field(entry, "label").value_or("");
  if (entry.value("error_occurred", false)) {
    const auto message = string_field(entry, "error_message").value_or("");
    const bool skipped = message.starts_with(skip_prefix);
    run.outcome = skipped ? run_outcome::skipped : run_outcome::failed;
    run.message = skipped ? message.substr(skip_prefix.size()) : message;
  } else if (entry.value("skipped", false)) {
    auto message = string_field(entry, "skip_message").value_or("");
    if (message.starts_with(skip_prefix)) message.erase(0, skip_prefix.size());
    run.outcome = run_outcome::skipped;
    run.message = std::move(message);
  }
  for (const auto& [key, value] : entry.items()) {
    if (value.is_number()) run.numbers[key] = value.get<double>();
  }
  return run;
}

std::optional<family_declaration> published_declaration(const json& context) {
  const auto text = string_field(context, "hdbench.schema");
  if (!text) return std::nullopt;
  try {
    return parse_declaration(std::string_view(*text));
  } catch (const declaration_error& e) {
    throw harness_error(std::string("context hdbench.schema: ") + e.what());
  }
}

}  // namespace

raw_family_output read_raw_json(std::string_view text) {
  // The parser callback sees every value as it completes, so the complete parts of a cut
  // document are captured before the parse error at the cut. Depth 1 = members of the
  // top-level object; depth 2 = entries of the "benchmarks" array.
  std::optional<json> context;
  std::vector<json> entries;
  std::string top_key;
  const json::parser_callback_t keep_complete = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) top_key = parsed.get<std::string>();
    if (event == json::parse_event_t::object_end && depth == 1 && top_key == "context") context = parsed;
    if (event == json::parse_event_t::object_end && depth == 2 && top_key == "benchmarks") {
      entries.push_back(std::move(parsed));
      parsed = json();  // no need to keep a second copy in the DOM being built
    }
    return true;
  };
  raw_family_output output;
  try {
    const auto whole = json::parse(nonfinite_to_null(text), keep_complete);
    output.complete = whole.is_object();
  } catch (const json::parse_error&) {
    // Truncated or garbage: whatever completed before the error is kept.
  }
  if (!context) throw harness_error("no benchmark context in the JSON (empty, garbage or cut before the context)");
  output.context = *std::move(context);
  output.declaration = published_declaration(output.context);
  for (const auto& entry : entries) {
    if (entry.is_object()) output.runs.push_back(to_raw_run(entry));
  }
  return output;
}

std::size_t count_cases(const raw_family_output& output) {
  std::set<std::string> names;
  for (const auto& run : output.runs) names.insert(run.run_name);
  return names.size();
}

}  // namespace hdb
