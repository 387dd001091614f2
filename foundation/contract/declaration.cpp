#include "hdb/contract/declaration.hpp"

#include "hdb/util/lists.hpp"  // all_digits

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>

namespace hdb {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 21> benchmark_fields = {
    "name",          "run_name",       "run_type",      "repetitions",  "repetition_index",
    "threads",       "iterations",     "real_time",     "cpu_time",     "time_unit",
    "family_index",  "per_family_instance_index",       "label",        "aggregate_name",
    "aggregate_unit", "error_occurred", "error_message", "skipped",     "skip_message",
    "big_o",         "rms"};

bool contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
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
    throw declaration_error(family_ + ": " + where + ": " + what);
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
      if (contains(items, item.get<std::string>())) fail(where + "." + key, "lists '" + item.get<std::string>() + "' twice");
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
    if (p.type == param_type::text && value.empty()) r.fail(where, "text value '' is empty");
    if (p.type == param_type::text && all_digits(value)) r.fail(where, "text value '" + value + "' is all digits");
    if (p.type == param_type::integer && !all_digits(value)) r.fail(where, "int value '" + value + "' is not digits");
  }
  p.description = r.text(j, "description", where, false);
  return p;
}

// "tolerance": a fraction in (0, 1); absent is nullopt.
std::optional<double> read_tolerance(const reader& r, const ordered_json& j, const std::string& where) {
  const auto it = j.find("tolerance");
  if (it == j.end()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() > 0) || !(it->get<double>() < 1)) {
    r.fail(where + ".tolerance", "must be a fraction between 0 and 1 (0.03 for 3 %)");
  }
  return it->get<double>();
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
  static const std::map<std::string, better> directions = {
      {"higher", better::higher}, {"lower", better::lower}, {"neutral", better::neutral}};
  const auto direction = r.text(j, "better", where, true);
  if (!directions.contains(direction)) r.fail(where, "better '" + direction + "' (higher, lower or neutral)");
  m.direction = directions.at(direction);
  m.description = r.text(j, "description", where, false);
  m.traffic = r.list(j, "traffic", where);
  m.tolerance = read_tolerance(r, j, where);
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
  // A misspelt field ("metric" for "metrics") would otherwise be dropped without a word.
  for (const auto& [key, value] : j.items()) {
    static const std::array<std::string_view, 4> known = {"description", "parameters", "metrics", "headlines"};
    if (std::find(known.begin(), known.end(), key) == known.end()) r.fail(where, "unknown field \"" + key + "\"");
  }
  case_decl c;
  c.name = name;
  c.description = r.text(j, "description", where, false);
  c.parameters = r.list(j, "parameters", where);
  c.metrics = r.list(j, "metrics", where);
  // A declaration stored before the gates named the headlines (a committed run's meta.json) lists
  // them; a case without the list gets the metrics its gates name (parse_declaration).
  c.headlines = r.list(j, "headlines", where);
  for (const auto& p : c.parameters) {
    if (d.parameter(p) == nullptr) r.fail(where, "parameter '" + p + "' is not declared");
  }
  for (const auto& m : c.metrics) {
    if (d.metric(m) == nullptr) r.fail(where, "metric '" + m + "' is not declared");
  }
  for (const auto& h : c.headlines) {
    if (!contains(c.metrics, h)) r.fail(where, "headline '" + h + "' is not one of its metrics");
  }
  return c;
}

// A selection's "parameters" (a check's or a gate's): name -> text or a whole number, as labelled.
label_list read_selection(const reader& r, const ordered_json& j, const std::string& where) {
  label_list parameters;
  for (const auto& [name, value] : r.object(j, "parameters", where, false).items()) {
    if (value.is_string()) parameters.emplace_back(name, value.get<std::string>());
    else if (value.is_number_unsigned()) parameters.emplace_back(name, std::to_string(value.get<unsigned long long>()));
    else r.fail(where + ".parameters." + name, "is neither text nor a whole number");
  }
  return parameters;
}

check_decl read_check(const reader& r, const family_declaration& d, std::size_t index, const ordered_json& j) {
  std::string where = "check " + std::to_string(index);
  if (!j.is_object()) r.fail(where, "is not an object");
  for (const auto& [key, value] : j.items()) {
    static const std::array<std::string_view, 8> known = {"label",     "case",       "parameters", "metric", "graded_by_peak",
                                                          "tolerance", "host_bound", "description"};
    if (std::find(known.begin(), known.end(), key) == known.end()) r.fail(where, "unknown field \"" + key + "\"");
  }
  check_decl c;
  c.label = r.text(j, "label", where, true);
  if (c.label.empty()) r.fail(where, "label is empty");
  where = "check '" + c.label + "'";
  c.case_kind = r.text(j, "case", where, true);
  const case_decl* kind = d.case_kind(c.case_kind);
  if (kind == nullptr) r.fail(where, "case kind '" + c.case_kind + "' is not declared");
  c.metric = r.text(j, "metric", where, true);
  if (!contains(kind->metrics, c.metric)) {
    r.fail(where, "metric '" + c.metric + "' is not a metric of case kind '" + c.case_kind + "'");
  }
  c.parameters = read_selection(r, j, where);
  // The values a case of this kind could be registered with, so a check can never select nothing
  // by a typo in a parameter or value.
  if (const auto problem = check_registration(d, c.case_kind, c.parameters)) r.fail(where, *problem);
  if (const auto it = j.find("graded_by_peak"); it != j.end()) {
    if (!it->is_boolean()) r.fail(where + ".graded_by_peak", "is not true or false");
    c.graded_by_peak = it->get<bool>();
  }
  c.tolerance = read_tolerance(r, j, where);
  if (const auto it = j.find("host_bound"); it != j.end()) {
    if (!it->is_boolean()) r.fail(where + ".host_bound", "is not true or false");
    c.host_bound = it->get<bool>();
  }
  c.description = r.text(j, "description", where, false);
  return c;
}

bool is_relative(std::string_view value) { return value == gate_largest || value == gate_smallest; }

gate_decl read_gate(const reader& r, const family_declaration& d, std::size_t index, const ordered_json& j) {
  std::string where = "gate " + std::to_string(index);
  if (!j.is_object()) r.fail(where, "is not an object");
  for (const auto& [key, value] : j.items()) {
    static const std::array<std::string_view, 4> known = {"case", "parameters", "metric", "description"};
    if (std::find(known.begin(), known.end(), key) == known.end()) r.fail(where, "unknown field \"" + key + "\"");
  }
  gate_decl g;
  g.case_kind = r.text(j, "case", where, true);
  const case_decl* kind = d.case_kind(g.case_kind);
  if (kind == nullptr) r.fail(where, "case kind '" + g.case_kind + "' is not declared");
  g.metric = r.text(j, "metric", where, true);
  where += " (" + g.case_kind + " " + g.metric + ")";
  if (!contains(kind->metrics, g.metric)) {
    r.fail(where, "metric '" + g.metric + "' is not a metric of case kind '" + g.case_kind + "'");
  }
  if (d.metric(g.metric)->direction == better::neutral) r.fail(where, "metric '" + g.metric + "' is neutral, so it never gates");
  g.parameters = read_selection(r, j, where);
  // As a check's: values a case of this kind could be registered with, so a gate never selects
  // nothing by a typo. A relative value stands for an int parameter's registered values.
  label_list fixed;
  std::size_t relative = 0;
  for (const auto& [name, value] : g.parameters) {
    if (!is_relative(value)) {
      fixed.emplace_back(name, value);
      continue;
    }
    ++relative;
    const parameter_decl* p = d.parameter(name);
    if (!contains(kind->parameters, name) || p == nullptr) {
      r.fail(where, "parameter '" + name + "' is not declared for case kind '" + g.case_kind + "'");
    }
    if (p->type != param_type::integer) r.fail(where, "parameter '" + name + "' is text, so it cannot be '" + value + "'");
  }
  if (relative > 1) r.fail(where, "names more than one parameter \"largest\" or \"smallest\"");
  if (const auto problem = check_registration(d, g.case_kind, fixed)) r.fail(where, *problem);
  g.description = r.text(j, "description", where, false);
  return g;
}

std::string describe_gate(const gate_decl& g, std::size_t index) {
  return "gate " + std::to_string(index) + " (" + g.case_kind + " " + g.metric + ")";
}

// all_digits checked; a value too large for 64 bits (no size is) reads as the largest one.
unsigned long long whole_number(const std::string& digits) {
  unsigned long long value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  static_cast<void>(end);
  return ec == std::errc() ? value : ~0ULL;
}

// Which candidates one gate selects.
std::vector<bool> gate_selects(const gate_decl& gate, const std::vector<gate_candidate>& candidates) {
  std::vector<bool> selected(candidates.size(), false);
  const std::pair<std::string, std::string>* relative = nullptr;
  for (const auto& wanted : gate.parameters) {
    if (is_relative(wanted.second)) relative = &wanted;
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const gate_candidate& c = candidates[i];
    if (c.skipped) continue;
    selected[i] = selection_matches(gate.case_kind, gate.parameters, c.kind,
                                    [&](std::string_view name) { return label_value(*c.labels, name); });
  }
  if (relative == nullptr) return selected;
  // The extreme value of the relative parameter per set of GPUs, then only the cases holding it.
  const bool largest = relative->second == gate_largest;
  std::map<std::vector<int>, unsigned long long> extreme;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!selected[i]) continue;
    const unsigned long long value = whole_number(*label_value(*candidates[i].labels, relative->first));
    const auto [it, fresh] = extreme.emplace(*candidates[i].devices, value);
    if (!fresh) it->second = largest ? std::max(it->second, value) : std::min(it->second, value);
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (selected[i]) {
      selected[i] = whole_number(*label_value(*candidates[i].labels, relative->first)) == extreme.at(*candidates[i].devices);
    }
  }
  return selected;
}

}  // namespace

const std::string* label_value(const label_list& labels, std::string_view key) {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool selection_matches(std::string_view case_kind, const label_list& wanted, std::string_view kind,
                       const std::function<const std::string*(std::string_view)>& value_of) {
  if (kind != case_kind) return false;
  return std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) {
    const std::string* have = value_of(w.first);
    if (have == nullptr) return false;
    return is_relative(w.second) ? all_digits(*have) : *have == w.second;
  });
}

const std::vector<std::string>& leading_columns() {
  static const std::vector<std::string> names = {"schema_version", "run_id", "family", "case", "device", "gpus", "gpu_uuid"};
  return names;
}

const std::vector<std::string>& trailing_columns() {
  static const std::vector<std::string> names = {"metric",       "unit",  "better", "headline",    "traffic",   "statistic",
                                                 "sample_index", "value", "status", "reason", "repetitions", "stopped_by", "attempt"};
  return names;
}

bool is_core_column(std::string_view name) { return contains(leading_columns(), name) || contains(trailing_columns(), name); }

bool is_benchmark_field(std::string_view key) {
  return std::find(benchmark_fields.begin(), benchmark_fields.end(), key) != benchmark_fields.end();
}

const std::vector<traffic_class>& builtin_traffic_classes() {
  static const std::vector<traffic_class> classes = {
      {"pcie_per_direction", link_kind::pcie, link_combine::sum, 1, 1, "PCIe per direction"},
      {"pcie_per_direction_per_gpu", link_kind::pcie, link_combine::min, 1, 1, "PCIe per direction, slowest GPU"},
      {"pcie_both_directions", link_kind::pcie, link_combine::sum, 2, 1, "PCIe both directions"},
      // Each counted byte is read once and written once.
      {"hbm_read_write", link_kind::hbm, link_combine::first, 1, 2, "HBM read + write"},
      {"nvlink_per_direction", link_kind::nvlink_pair, link_combine::first, 1, 1, "NVLink per direction"},
      {"nvlink_both_directions", link_kind::nvlink_pair, link_combine::first, 2, 1, "NVLink both directions"},
      // nccl-tests' busbw compares with one GPU's per-direction link rate whatever n is.
      {"nvlink_bus", link_kind::nvlink_gpu, link_combine::min, 1, 1, "NVLink per direction, slowest GPU"},
  };
  return classes;
}

const traffic_class* find_traffic_class(std::string_view name, const family_declaration* family) {
  if (const auto* builtin = find_named(builtin_traffic_classes(), name)) return builtin;
  return family ? find_named(family->traffic_classes, name) : nullptr;
}

const parameter_decl* family_declaration::parameter(std::string_view name) const { return find_named(parameters, name); }
const metric_decl* family_declaration::metric(std::string_view name) const { return find_named(metrics, name); }

std::optional<double> family_declaration::tolerance(const check_decl* check, std::string_view metric_name) const {
  if (check != nullptr && check->tolerance) return check->tolerance;
  const auto* m = metric(metric_name);
  return m != nullptr ? m->tolerance : std::nullopt;
}
const case_decl* family_declaration::case_kind(std::string_view name) const { return find_named(cases, name); }

namespace {

std::optional<fit_decl> read_fit(const reader& r, const family_declaration& d, const ordered_json& document) {
  // A declaration written before "fit" (a committed reference run's meta.json) named only the
  // fitted metric; its rows carry the names the harness then gave them.
  const auto legacy = r.text(document, "fit_metric", "declaration", false);
  const auto entry = document.find("fit");
  if (!legacy.empty() && entry != document.end()) r.fail("fit_metric", "and \"fit\" both declare the fit: keep \"fit\"");
  if (!legacy.empty()) {
    if (d.metric(legacy) == nullptr) r.fail("fit_metric", "'" + legacy + "' is not a declared metric");
    return fit_decl{legacy, {"fit_bandwidth", "fit_latency", "fit_n_half"}};
  }
  if (entry == document.end()) return std::nullopt;
  const std::string where = "fit";
  if (!entry->is_object()) r.fail(where, "is not an object");
  for (const auto& [key, value] : entry->items()) {
    const bool known = key == "of" || key == "description" ||
                       std::any_of(std::begin(fit_roles), std::end(fit_roles), [&](const fit_role_info& f) { return f.key == key; });
    if (!known) r.fail(where, "unknown field \"" + key + "\"");
  }
  fit_decl fit;
  fit.of = r.text(*entry, "of", where, true);
  if (d.metric(fit.of) == nullptr) r.fail(where + ".of", "'" + fit.of + "' is not a declared metric");
  for (const auto& role : fit_roles) {
    const std::string key(role.key);
    auto& name = fit.metrics[static_cast<std::size_t>(role.role)];
    name = r.text(*entry, key.c_str(), where, true);
    const auto* m = d.metric(name);
    if (m == nullptr) r.fail(where + "." + key, "'" + name + "' is not a declared metric");
    if (m->unit != role.unit || m->direction != role.direction) {
      r.fail(where + "." + key, "'" + name + "' must be in " + std::string(role.unit) + ", better " +
                                    (role.direction == better::higher ? "higher" : "lower") + ", as the fit computes it");
    }
  }
  return fit;
}

}  // namespace

family_declaration parse_declaration(const ordered_json& document) {
  if (!document.is_object()) throw declaration_error("a declaration must be a JSON object");
  const auto family = document.find("family");
  if (family == document.end() || !family->is_string() || family->get<std::string>().empty()) {
    throw declaration_error("a declaration needs a non-empty \"family\"");
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
  if (const auto checks = document.find("checks"); checks != document.end()) {
    if (!checks->is_array()) r.fail("declaration.checks", "is not a list");
    for (std::size_t i = 0; i < checks->size(); ++i) {
      auto check = read_check(r, d, i, (*checks)[i]);
      const bool repeated = std::any_of(d.checks.begin(), d.checks.end(), [&](const check_decl& c) { return c.label == check.label; });
      if (repeated) r.fail("check '" + check.label + "'", "label is used twice");
      d.checks.push_back(std::move(check));
    }
  }
  if (const auto gates = document.find("gates"); gates != document.end()) {
    if (!gates->is_array()) r.fail("declaration.gates", "is not a list");
    for (std::size_t i = 0; i < gates->size(); ++i) d.gates.push_back(read_gate(r, d, i, (*gates)[i]));
  }
  // A case's headlines are the metrics its gates name, in the order of its metrics.
  for (case_decl& c : d.cases) {
    if (document.at("cases").at(c.name).contains("headlines")) continue;
    for (const std::string& metric : c.metrics) {
      const bool gated = std::any_of(d.gates.begin(), d.gates.end(),
                                     [&](const gate_decl& g) { return g.case_kind == c.name && g.metric == metric; });
      if (gated) c.headlines.push_back(metric);
    }
  }
  d.fit = read_fit(r, d, document);
  return d;
}

family_declaration parse_declaration(std::string_view text) {
  const auto document = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) throw declaration_error("a declaration is not valid JSON");
  return parse_declaration(document);
}

void require_documented(const family_declaration& d) {
  const reader r(d.family);
  if (d.summary.empty()) r.fail("declaration", "needs a \"summary\"");
  for (const auto& m : d.metrics) {
    if (m.description.empty()) r.fail("metric '" + m.name + "'", "needs a \"description\"");
  }
  for (const auto& c : d.cases) {
    if (c.description.empty()) r.fail("case '" + c.name + "'", "needs a \"description\"");
    if (d.source.at("cases").at(c.name).contains("headlines")) {
      r.fail("case '" + c.name + "'", "declares \"headlines\": a case's headlines are the metrics its gates name; delete the key");
    }
    for (const auto& h : c.headlines) {
      const auto* m = d.metric(h);
      if (m->direction != better::neutral && !m->tolerance) {
        r.fail("metric '" + h + "'", "is a headline of case kind '" + c.name + "', so it needs a \"tolerance\" for check");
      }
    }
  }
  for (const auto& c : d.checks) {
    if (!d.tolerance(&c, c.metric)) r.fail("check '" + c.label + "'", "needs a \"tolerance\", its own or its metric's");
  }
  for (std::size_t i = 0; i < d.gates.size(); ++i) {
    const gate_decl& g = d.gates[i];
    // Its metric's tolerance is asked above: a gate's metric is a non-neutral headline of its kind.
    if (g.description.empty()) r.fail(describe_gate(g, i), "needs a \"description\" (why this row gates)");
  }
}

std::vector<std::string> gated_metrics(const family_declaration& d, const std::vector<gate_candidate>& candidates) {
  std::vector<std::string> metrics(candidates.size());
  for (const gate_decl& gate : d.gates) {
    const std::vector<bool> selected = gate_selects(gate, candidates);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (selected[i] && metrics[i].empty()) metrics[i] = gate.metric;
    }
  }
  return metrics;
}

std::vector<bool> verdict_cases(const family_declaration& d, const std::vector<gate_candidate>& candidates) {
  std::vector<gate_candidate> runnable = candidates;
  for (gate_candidate& c : runnable) c.skipped = false;
  std::vector<bool> keep(candidates.size(), false);
  for (const gate_decl& gate : d.gates) {
    const std::vector<bool> gated = gate_selects(gate, candidates);
    const std::vector<bool> would_gate = gate_selects(gate, runnable);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (gated[i] || (candidates[i].skipped && would_gate[i])) keep[i] = true;
    }
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const gate_candidate& c = candidates[i];
    keep[i] = keep[i] || std::any_of(d.checks.begin(), d.checks.end(), [&](const check_decl& check) {
                return selection_matches(check.case_kind, check.parameters, c.kind,
                                         [&](std::string_view name) { return label_value(*c.labels, name); });
              });
  }
  return keep;
}

std::optional<std::string> check_registration(const family_declaration& d, std::string_view kind, const label_list& labels) {
  const case_decl* declared = d.case_kind(kind);
  if (declared == nullptr) return "case kind '" + std::string(kind) + "' is not declared";
  for (const auto& [key, value] : labels) {
    if (!contains(declared->parameters, key)) {
      return "parameter '" + key + "' is not declared for case kind '" + std::string(kind) + "'";
    }
    const parameter_decl& p = *d.parameter(key);
    if (p.type == param_type::integer && !all_digits(value)) return "parameter '" + key + "' is int, but its value is '" + value + "'";
    if (p.type == param_type::text && (value.empty() || all_digits(value))) {
      return "parameter '" + key + "' is text, so its value '" + value + "' must be non-empty and not all digits";
    }
    if (!p.values.empty() && !contains(p.values, value)) {
      return "value '" + value + "' of parameter '" + key + "' is not one of its declared values";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_outputs(const family_declaration& d, std::string_view kind,
                                         const std::vector<std::string>& counters, const std::vector<std::string>& headlines,
                                         const std::map<std::string, std::string>& traffic) {
  const case_decl* c = d.case_kind(kind);
  if (c == nullptr) return "case kind '" + std::string(kind) + "' is not declared";
  const std::string of_kind = " for case kind '" + std::string(kind) + "'";
  for (const std::string& name : counters) {
    if (is_benchmark_field(name)) return "counter '" + name + "' is named like one of Google Benchmark's own JSON keys";
    if (!contains(c->metrics, name)) return "counter '" + name + "' is not a declared metric" + of_kind;
  }
  for (const std::string& h : headlines) {
    if (!contains(c->headlines, h)) return "headline '" + h + "' is not a declared headline" + of_kind;
  }
  for (const auto& [metric, traffic_class] : traffic) {
    if (!contains(c->metrics, metric)) return "traffic pick for '" + metric + "', which is not a declared metric" + of_kind;
    if (!contains(d.metric(metric)->traffic, traffic_class)) {
      return "traffic class '" + traffic_class + "' is not allowed for metric '" + metric + "'";
    }
  }
  return std::nullopt;
}

}  // namespace hdb
