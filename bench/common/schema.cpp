#include "hdb/schema.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace hdb {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::array units = {"GB/s", "us", "us/MiB", "B", "%", "ratio", "count"};
constexpr std::array betters = {"higher", "lower", "neutral"};
// The harness's built-in table (harness/src/traffic.cpp) defines these; a family adds its own.
constexpr std::array builtin_classes = {"pcie_per_direction",   "pcie_per_direction_per_gpu", "pcie_both_directions",
                                        "hbm_read_write",       "nvlink_per_direction",       "nvlink_both_directions",
                                        "nvlink_bus"};
constexpr std::array link_kinds = {"pcie", "hbm", "nvlink_pair", "nvlink_gpu"};
constexpr std::array combines = {"sum", "min", "first"};
// results.csv's core columns and the label's own keys: a parameter of that name would shadow them.
constexpr std::array reserved_parameters = {"schema_version", "run_id", "family", "case",   "device",
                                            "gpus",           "gpu_uuid", "metric", "unit",  "better",
                                            "headline",       "traffic",  "statistic", "sample_index", "value",
                                            "status",         "reason"};
constexpr std::array benchmark_keys = {"name",          "run_name",    "run_type",  "repetitions",
                                       "repetition_index", "threads",  "iterations", "real_time",
                                       "cpu_time",      "time_unit",   "family_index", "per_family_instance_index",
                                       "label",         "aggregate_name", "aggregate_unit", "error_occurred",
                                       "error_message", "skipped",     "skip_message", "big_o",
                                       "rms"};

template <std::size_t N>
bool one_of(const std::array<const char*, N>& set, std::string_view value) {
  return std::any_of(set.begin(), set.end(), [value](const char* s) { return value == s; });
}

bool contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

const ordered_json& member(const ordered_json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw schema_error(where + ": missing \"" + key + "\"");
  return *it;
}

std::string text_member(const ordered_json& object, const char* key, const std::string& where) {
  const ordered_json& value = member(object, key, where);
  if (!value.is_string()) throw schema_error(where + ": \"" + key + "\" must be a string");
  return value.get<std::string>();
}

const ordered_json& object_member(const ordered_json& object, const char* key, const std::string& where) {
  const ordered_json& value = member(object, key, where);
  if (!value.is_object()) throw schema_error(where + ": \"" + key + "\" must be an object");
  return value;
}

std::vector<std::string> names_member(const ordered_json& object, const char* key, const std::string& where,
                                      bool required = true) {
  if (!required && !object.contains(key)) return {};
  const ordered_json& value = member(object, key, where);
  if (!value.is_array()) throw schema_error(where + ": \"" + key + "\" must be a list of names");
  std::vector<std::string> names;
  for (const auto& item : value) {
    if (!item.is_string()) throw schema_error(where + ": \"" + key + "\" must be a list of names");
    names.push_back(item.get<std::string>());
  }
  return names;
}

schema_parameter parse_parameter(const std::string& name, const ordered_json& p) {
  const std::string where = "parameter '" + name + "'";
  if (one_of(reserved_parameters, name)) throw schema_error(where + ": the name is a core column of results.csv");
  if (!p.is_object()) throw schema_error(where + ": must be an object");
  const std::string type = text_member(p, "type", where);
  if (type != "int" && type != "text") throw schema_error(where + ": type '" + type + "' (int or text)");
  schema_parameter parameter;
  parameter.is_int = type == "int";
  parameter.values = names_member(p, "values", where, false);
  if (parameter.is_int && !parameter.values.empty()) throw schema_error(where + ": an int parameter takes no values list");
  for (const std::string& v : parameter.values) {
    if (v.empty() || all_digits(v)) throw schema_error(where + ": text value '" + v + "' must be non-empty and not all digits");
  }
  return parameter;
}

schema_metric parse_metric(const std::string& name, const ordered_json& m, const std::vector<std::string>& classes) {
  const std::string where = "metric '" + name + "'";
  if (is_benchmark_json_key(name)) throw schema_error(where + ": the name is one of Google Benchmark's own JSON keys");
  if (!m.is_object()) throw schema_error(where + ": must be an object");
  schema_metric metric;
  metric.unit = text_member(m, "unit", where);
  if (!one_of(units, metric.unit)) throw schema_error(where + ": unit '" + metric.unit + "' is not in the closed set");
  metric.better = text_member(m, "better", where);
  if (!one_of(betters, metric.better)) throw schema_error(where + ": better '" + metric.better + "' (higher, lower or neutral)");
  static_cast<void>(text_member(m, "description", where));
  metric.traffic = names_member(m, "traffic", where, false);
  for (const std::string& c : metric.traffic) {
    if (!one_of(builtin_classes, c) && !contains(classes, c)) throw schema_error(where + ": unknown traffic class '" + c + "'");
  }
  return metric;
}

std::vector<std::string> parse_family_classes(const ordered_json& doc) {
  std::vector<std::string> classes;
  if (!doc.contains("traffic_classes")) return classes;
  for (const auto& [name, c] : object_member(doc, "traffic_classes", "schema").items()) {
    const std::string where = "traffic class '" + name + "'";
    if (one_of(builtin_classes, name)) throw schema_error(where + ": reuses a built-in class name");
    if (!c.is_object()) throw schema_error(where + ": must be an object");
    if (!one_of(link_kinds, text_member(c, "link", where))) throw schema_error(where + ": unknown link kind");
    if (!one_of(combines, text_member(c, "combine", where))) throw schema_error(where + ": combine must be sum, min or first");
    const ordered_json& directions = member(c, "directions", where);
    if (!directions.is_number_integer() || (directions != 1 && directions != 2)) {
      throw schema_error(where + ": directions must be 1 or 2");
    }
    if (!member(c, "traffic_factor", where).is_number() || !(member(c, "traffic_factor", where).get<double>() > 0)) {
      throw schema_error(where + ": traffic_factor must be a number > 0");
    }
    static_cast<void>(text_member(c, "basis", where));
    classes.push_back(name);
  }
  return classes;
}

schema_case parse_case(const std::string& name, const ordered_json& c, const family_schema& schema) {
  const std::string where = "case '" + name + "'";
  if (!c.is_object()) throw schema_error(where + ": must be an object");
  static_cast<void>(text_member(c, "description", where));
  schema_case kind;
  kind.parameters = names_member(c, "parameters", where);
  kind.metrics = names_member(c, "metrics", where);
  kind.headlines = names_member(c, "headlines", where);
  for (const std::string& p : kind.parameters) {
    if (!schema.parameters.contains(p)) throw schema_error(where + ": parameter '" + p + "' is not declared");
  }
  for (const std::string& m : kind.metrics) {
    if (!schema.metrics.contains(m)) throw schema_error(where + ": metric '" + m + "' is not declared");
  }
  for (const std::string& h : kind.headlines) {
    if (!contains(kind.metrics, h)) throw schema_error(where + ": headline '" + h + "' is not one of its metrics");
  }
  return kind;
}

}  // namespace

bool is_benchmark_json_key(std::string_view name) { return one_of(benchmark_keys, name); }

family_schema parse_schema(std::string_view json_text) {
  ordered_json doc;
  try {
    doc = ordered_json::parse(json_text);
  } catch (const ordered_json::parse_error& e) {
    throw schema_error(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) throw schema_error("schema: must be a JSON object");
  family_schema schema;
  schema.family = text_member(doc, "family", "schema");
  schema.summary = text_member(doc, "summary", "schema");
  schema.family_classes = parse_family_classes(doc);
  for (const auto& [name, p] : object_member(doc, "parameters", "schema").items()) {
    schema.parameters.emplace(name, parse_parameter(name, p));
  }
  for (const auto& [name, m] : object_member(doc, "metrics", "schema").items()) {
    schema.metrics.emplace(name, parse_metric(name, m, schema.family_classes));
  }
  for (const auto& [name, c] : object_member(doc, "cases", "schema").items()) {
    schema.cases.emplace(name, parse_case(name, c, schema));
  }
  if (doc.contains("fit_metric")) {
    schema.fit_metric = text_member(doc, "fit_metric", "schema");
    if (!schema.metrics.contains(schema.fit_metric)) {
      throw schema_error("schema: fit_metric '" + schema.fit_metric + "' is not a declared metric");
    }
  }
  schema.text = doc.dump();
  return schema;
}

std::optional<std::string> check_registration(const family_schema& schema, std::string_view kind, const label_list& labels) {
  const auto declared = schema.cases.find(std::string(kind));
  if (declared == schema.cases.end()) return "case kind '" + std::string(kind) + "' is not declared";
  for (const auto& [key, value] : labels) {
    if (!contains(declared->second.parameters, key)) {
      return "parameter '" + key + "' is not declared for case kind '" + std::string(kind) + "'";
    }
    const schema_parameter& p = schema.parameters.at(key);
    if (p.is_int && !all_digits(value)) return "parameter '" + key + "' is int, but its value is '" + value + "'";
    if (!p.is_int && (value.empty() || all_digits(value))) {
      return "parameter '" + key + "' is text, so its value '" + value + "' must be non-empty and not all digits";
    }
    if (!p.values.empty() && !contains(p.values, value)) {
      return "value '" + value + "' of parameter '" + key + "' is not one of its declared values";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_outputs(const family_schema& schema, std::string_view kind,
                                         const std::vector<std::string>& counters, const std::vector<std::string>& headlines,
                                         const std::map<std::string, std::string>& traffic) {
  const auto declared = schema.cases.find(std::string(kind));
  if (declared == schema.cases.end()) return "case kind '" + std::string(kind) + "' is not declared";
  const schema_case& c = declared->second;
  const std::string of_kind = " for case kind '" + std::string(kind) + "'";
  for (const std::string& name : counters) {
    if (is_benchmark_json_key(name)) return "counter '" + name + "' is named like one of Google Benchmark's own JSON keys";
    if (!contains(c.metrics, name)) return "counter '" + name + "' is not a declared metric" + of_kind;
  }
  for (const std::string& h : headlines) {
    if (!contains(c.headlines, h)) return "headline '" + h + "' is not a declared headline" + of_kind;
  }
  for (const auto& [metric, traffic_class] : traffic) {
    if (!contains(c.metrics, metric)) return "traffic pick for '" + metric + "', which is not a declared metric" + of_kind;
    if (!contains(schema.metrics.at(metric).traffic, traffic_class)) {
      return "traffic class '" + traffic_class + "' is not allowed for metric '" + metric + "'";
    }
  }
  return std::nullopt;
}

}  // namespace hdb
