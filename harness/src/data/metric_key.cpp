#include "hdb/harness/data/metric_key.hpp"

namespace hdb {

using json = nlohmann::json;

metric_key key_of(const result_row& row) {
  return {row.family, row.case_name, row.device, row.gpus, row.params, row.metric};
}

metric_key case_key_of(const result_row& row) { return {row.family, row.case_name, row.device, row.gpus, row.params, {}}; }

std::string describe_parameters(const metric_key& key) {
  result_row row;
  row.device = key.device;
  row.gpus = key.gpus;
  row.params = key.params;
  return describe_case(row);
}

std::string describe(const metric_key& key) {
  const auto parameters = describe_parameters(key);
  return key.family + " " + key.case_name + (parameters.empty() ? "" : " [" + parameters + "]") + " " + key.metric;
}

json to_json(const metric_key& key) {
  const auto optional_int = [](const std::optional<int>& v) { return v ? json(*v) : json(nullptr); };
  return {{"family", key.family}, {"case", key.case_name}, {"device", optional_int(key.device)},
          {"gpus", optional_int(key.gpus)}, {"params", key.params}, {"metric", key.metric}};
}

std::optional<metric_key> metric_key_from_json(const json& value) {
  if (!value.is_object()) return std::nullopt;
  const auto text = [&](const char* name) -> const json* {
    const auto it = value.find(name);
    return it != value.end() && it->is_string() ? &*it : nullptr;
  };
  const auto optional_int = [&](const char* name, std::optional<int>& out) {
    const auto it = value.find(name);
    if (it == value.end() || it->is_null()) return true;
    if (!it->is_number_integer()) return false;
    out = it->get<int>();
    return true;
  };
  const auto* family = text("family");
  const auto* case_name = text("case");
  const auto* metric = text("metric");
  const auto params = value.find("params");
  if (family == nullptr || case_name == nullptr || metric == nullptr || params == value.end() || !params->is_object()) {
    return std::nullopt;
  }
  metric_key key;
  key.family = family->get<std::string>();
  key.case_name = case_name->get<std::string>();
  key.metric = metric->get<std::string>();
  if (!optional_int("device", key.device) || !optional_int("gpus", key.gpus)) return std::nullopt;
  for (const auto& [name, v] : params->items()) {
    if (!v.is_string()) return std::nullopt;
    key.params[name] = v.get<std::string>();
  }
  return key;
}

}  // namespace hdb
