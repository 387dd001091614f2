#include "hdb/harness/declaration.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "hdb/harness/error.hpp"
#include "hdb/harness/files.hpp"
#include "hdb/harness/manifest.hpp"
#include "hdb/harness/traffic.hpp"

namespace hdb {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 21> benchmark_fields = {
    "name",          "run_name",       "run_type",      "repetitions",  "repetition_index",
    "threads",       "iterations",     "real_time",     "cpu_time",     "time_unit",
    "family_index",  "per_family_instance_index",       "label",        "aggregate_name",
    "aggregate_unit", "error_occurred", "error_message", "skipped",     "skip_message",
    "big_o",         "rms"};

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

template <typename Item>
const Item* find_named(const std::vector<Item>& items, std::string_view name) {
  const auto it = std::find_if(items.begin(), items.end(), [&](const Item& item) { return item.name == name; });
  return it == items.end() ? nullptr : &*it;
}

// Every read names where it is, so one message says what to fix in which schema.json.
class reader {
 public:
  explicit reader(std::string family) : family_(std::move(family)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw harness_error(family_ + ": " + where + ": " + what);
  }
  const ordered_json& object(const ordered_json& parent, const char* key, const std::string& where, bool required) const {
    static const ordered_json empty = ordered_json::object();
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (required) fail(where, std::string("needs \"") + key + "\"");
      return empty;
    }
    if (!it->is_object()) fail(where + "." + key, "is not an object");
    return *it;
  }
  std::string text(const ordered_json& parent, const char* key, const std::string& where, bool required) const {
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (required) fail(where, std::string("needs \"") + key + "\"");
      return "";
    }
    if (!it->is_string()) fail(where + "." + key, "is not a string");
    return it->get<std::string>();
  }
  std::vector<std::string> list(const ordered_json& parent, const char* key, const std::string& where) const {
    std::vector<std::string> items;
    const auto it = parent.find(key);
    if (it == parent.end()) return items;
    if (!it->is_array()) fail(where + "." + key, "is not a list");
    for (const auto& item : *it) {
      if (!item.is_string()) fail(where + "." + key, "holds a non-string");
      if (std::find(items.begin(), items.end(), item.get<std::string>()) != items.end()) {
        fail(where + "." + key, "lists '" + item.get<std::string>() + "' twice");
      }
      items.push_back(item.get<std::string>());
    }
    return items;
  }

 private:
  std::string family_;
};

parameter_decl read_parameter(const reader& r, const std::string& name, const ordered_json& j) {
  const std::string where = "parameter '" + name + "'";
  if (!j.is_object()) r.fail(where, "is not an object");
  if (is_core_column(name)) r.fail(where, "is a core column of results.csv, never a parameter");
  parameter_decl p;
  p.name = name;
  const auto type = r.text(j, "type", where, true);
  if (type == "int") p.type = param_type::integer;
  else if (type == "text") p.type = param_type::text;
  else r.fail(where, "type '" + type + "' (int or text)");
  p.values = r.list(j, "values", where);
  for (const auto& value : p.values) {
    if (p.type == param_type::text && all_digits(value)) r.fail(where, "text value '" + value + "' is all digits");
    if (p.type == param_type::integer && !all_digits(value)) r.fail(where, "int value '" + value + "' is not digits");
  }
  p.description = r.text(j, "description", where, false);
  return p;
}

metric_decl read_metric(const reader& r, const std::string& name, const ordered_json& j) {
  const std::string where = "metric '" + name + "'";
  if (!j.is_object()) r.fail(where, "is not an object");
  if (is_benchmark_field(name)) r.fail(where, "is a key Google Benchmark writes itself");
  if (is_core_column(name)) r.fail(where, "is a core column of results.csv");
  metric_decl m;
  m.name = name;
  m.unit = r.text(j, "unit", where, true);
  if (std::find(std::begin(metric_units), std::end(metric_units), m.unit) == std::end(metric_units)) {
    r.fail(where, "unit '" + m.unit + "' is not one of GB/s, us, us/MiB, B, %, ratio, count");
  }
  const auto direction = r.text(j, "better", where, true);
  try {
    m.direction = parse_better(direction);
  } catch (const harness_error&) {
    r.fail(where, "better '" + direction + "' (higher, lower or neutral)");
  }
  m.description = r.text(j, "description", where, false);
  m.traffic = r.list(j, "traffic", where);
  return m;
}

traffic_class read_traffic_class(const reader& r, const std::string& name, const ordered_json& j) {
  const std::string where = "traffic class '" + name + "'";
  if (!j.is_object()) r.fail(where, "is not an object");
  if (find_traffic_class(name, nullptr) != nullptr) r.fail(where, "reuses a built-in class name");
  traffic_class c;
  c.name = name;
  static const std::map<std::string, link_kind> links = {
      {"pcie", link_kind::pcie}, {"hbm", link_kind::hbm}, {"nvlink_pair", link_kind::nvlink_pair}, {"nvlink_gpu", link_kind::nvlink_gpu}};
  static const std::map<std::string, link_combine> combines = {
      {"sum", link_combine::sum}, {"min", link_combine::min}, {"first", link_combine::first}};
  const auto link = r.text(j, "link", where, true);
  if (!links.contains(link)) r.fail(where, "link '" + link + "' (pcie, hbm, nvlink_pair or nvlink_gpu)");
  c.link = links.at(link);
  const auto combine = r.text(j, "combine", where, false);
  if (!combine.empty() && !combines.contains(combine)) r.fail(where, "combine '" + combine + "' (sum, min or first)");
  if (!combine.empty()) c.combine = combines.at(combine);
  const auto directions = j.value("directions", ordered_json(1));
  if (!directions.is_number_integer() || (directions.get<int>() != 1 && directions.get<int>() != 2)) {
    r.fail(where, "directions must be 1 or 2");
  }
  c.directions = directions.get<int>();
  const auto factor = j.value("traffic_factor", ordered_json(1));
  if (!factor.is_number() || !(factor.get<double>() > 0)) r.fail(where, "traffic_factor must be a number > 0");
  c.traffic_factor = factor.get<double>();
  c.basis = r.text(j, "basis", where, true);
  return c;
}

case_decl read_case(const reader& r, const family_declaration& d, const std::string& name, const ordered_json& j) {
  const std::string where = "case '" + name + "'";
  if (!j.is_object()) r.fail(where, "is not an object");
  case_decl c;
  c.name = name;
  c.description = r.text(j, "description", where, false);
  c.parameters = r.list(j, "parameters", where);
  c.metrics = r.list(j, "metrics", where);
  c.headlines = r.list(j, "headlines", where);
  for (const auto& p : c.parameters) {
    if (d.parameter(p) == nullptr) r.fail(where, "parameter '" + p + "' is not declared");
  }
  for (const auto& m : c.metrics) {
    if (d.metric(m) == nullptr) r.fail(where, "metric '" + m + "' is not declared");
  }
  for (const auto& h : c.headlines) {
    if (std::find(c.metrics.begin(), c.metrics.end(), h) == c.metrics.end()) {
      r.fail(where, "headline '" + h + "' is not one of its metrics");
    }
  }
  return c;
}

}  // namespace

bool is_core_column(std::string_view name) {
  const auto& lead = leading_columns();
  const auto& trail = trailing_columns();
  return std::find(lead.begin(), lead.end(), name) != lead.end() || std::find(trail.begin(), trail.end(), name) != trail.end();
}

bool is_benchmark_field(std::string_view key) {
  return std::find(benchmark_fields.begin(), benchmark_fields.end(), key) != benchmark_fields.end();
}

const parameter_decl* family_declaration::parameter(std::string_view name) const { return find_named(parameters, name); }
const metric_decl* family_declaration::metric(std::string_view name) const { return find_named(metrics, name); }
const case_decl* family_declaration::case_kind(std::string_view name) const { return find_named(cases, name); }

family_declaration parse_declaration(const ordered_json& document) {
  if (!document.is_object()) throw harness_error("a declaration must be a JSON object");
  const auto family = document.find("family");
  if (family == document.end() || !family->is_string() || family->get<std::string>().empty()) {
    throw harness_error("a declaration needs a non-empty \"family\"");
  }
  family_declaration d;
  d.family = family->get<std::string>();
  d.source = document;
  const reader r(d.family);
  d.summary = r.text(document, "summary", "declaration", false);
  for (const auto& [name, j] : r.object(document, "parameters", "declaration", false).items()) {
    d.parameters.push_back(read_parameter(r, name, j));
  }
  for (const auto& [name, j] : r.object(document, "traffic_classes", "declaration", false).items()) {
    d.traffic_classes.push_back(read_traffic_class(r, name, j));
  }
  for (const auto& [name, j] : r.object(document, "metrics", "declaration", true).items()) {
    auto metric = read_metric(r, name, j);
    for (const auto& cls : metric.traffic) {
      if (find_traffic_class(cls, &d) == nullptr) r.fail("metric '" + name + "'", "traffic class '" + cls + "' is not known");
    }
    d.metrics.push_back(std::move(metric));
  }
  for (const auto& [name, j] : r.object(document, "cases", "declaration", true).items()) {
    d.cases.push_back(read_case(r, d, name, j));
  }
  d.fit_metric = r.text(document, "fit_metric", "declaration", false);
  if (!d.fit_metric.empty() && d.metric(d.fit_metric) == nullptr) {
    r.fail("fit_metric", "'" + d.fit_metric + "' is not a declared metric");
  }
  return d;
}

family_declaration parse_declaration(std::string_view text) {
  const auto document = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) throw harness_error("a declaration is not valid JSON");
  return parse_declaration(document);
}

family_declaration read_declaration(const std::filesystem::path& path) {
  try {
    return parse_declaration(std::string_view(read_text_file(path)));
  } catch (const harness_error& e) {
    throw harness_error(path.string() + ": " + e.what());
  }
}

std::vector<family_declaration> installed_declarations(const std::filesystem::path& manifest,
                                                       const std::filesystem::path& schema_dir) {
  std::vector<family_declaration> declarations;
  for (const auto& family : load_manifest(manifest).families) {
    declarations.push_back(read_declaration(schema_dir / (family.name + ".json")));
    if (declarations.back().family != family.name) {
      throw harness_error((schema_dir / (family.name + ".json")).string() + ": declares family '" +
                          declarations.back().family + "', the manifest names '" + family.name + "'");
    }
  }
  return declarations;
}

std::vector<std::string> parameter_columns(const std::vector<const family_declaration*>& families) {
  std::vector<std::string> columns;
  std::map<std::string, std::pair<param_type, std::string>> first;  // parameter -> (type, family)
  for (const auto* family : families) {
    for (const auto& p : family->parameters) {
      const auto [it, inserted] = first.try_emplace(p.name, p.type, family->family);
      if (inserted) {
        columns.push_back(p.name);
      } else if (it->second.first != p.type) {
        const auto type_name = [](param_type t) { return t == param_type::integer ? "int" : "text"; };
        throw harness_error("parameter '" + p.name + "' is " + type_name(it->second.first) + " in family " +
                            it->second.second + " but " + type_name(p.type) + " in family " + family->family);
      }
    }
  }
  return columns;
}

}  // namespace hdb
