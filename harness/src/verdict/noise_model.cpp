// noise.json: learning the noise model of a kind from its reference runs, and its JSON form.
#include "hdb/harness/verdict/noise_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/results.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// meta.json stores PCIe figures as numbers that may be written 5.0; the kind compares integers.
std::optional<int> whole_number(const json& object, const char* field) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(field);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return static_cast<int>(std::lround(it->get<double>()));
}

json optional_json(const std::optional<int>& value) { return value ? json(*value) : json(); }

std::optional<int> optional_int(const json& value) {
  if (value.is_null()) return std::nullopt;
  if (!value.is_number_integer()) throw harness_error("noise model: kind field is not a whole number");
  return value.get<int>();
}

json key_json(const metric_key& key) {
  return {{"family", key.family},
          {"case", key.case_name},
          {"device", optional_json(key.device)},
          {"gpus", optional_json(key.gpus)},
          {"params", key.params},
          {"metric", key.metric}};
}

metric_key key_from_json(const json& value) {
  metric_key key;
  key.family = value.at("family").get<std::string>();
  key.case_name = value.at("case").get<std::string>();
  key.device = optional_int(value.at("device"));
  key.gpus = optional_int(value.at("gpus"));
  key.params = value.at("params").get<std::map<std::string, std::string>>();
  key.metric = value.at("metric").get<std::string>();
  return key;
}

}  // namespace

node_kind kind_of(const json& run_meta) {
  const auto node = run_meta.is_object() ? run_meta.value("node", json::object()) : json::object();
  const auto gpus = node.is_object() ? node.value("gpus", json::array()) : json::array();
  if (!gpus.is_array() || gpus.empty()) throw harness_error("meta.json has no node.gpus: the run's machine kind is unknown");
  node_kind kind;
  kind.gpus = static_cast<int>(gpus.size());
  const auto& first = gpus.front();
  kind.gpu_name = first.is_object() && first.value("name", json()).is_string() ? first["name"].get<std::string>() : "";
  for (const auto& gpu : gpus) {
    const auto pcie = gpu.is_object() ? gpu.value("pcie", json::object()) : json::object();
    kind.pcie.push_back({whole_number(pcie, "gen_max"), whole_number(pcie, "width_max")});
    kind.nvlinks.push_back(whole_number(gpu.is_object() ? gpu.value("nvlink", json::object()) : json::object(), "links_active"));
  }
  return kind;
}

std::string describe(const node_kind& kind) {
  const auto figure = [](const std::optional<int>& v) { return v ? std::to_string(*v) : std::string("?"); };
  std::string pcie, links;
  for (std::size_t i = 0; i < kind.pcie.size(); ++i) {
    const auto link = "Gen" + figure(kind.pcie[i].gen_max) + " x" + figure(kind.pcie[i].width_max);
    if (pcie.find(link) == std::string::npos) pcie += (pcie.empty() ? "" : "/") + link;
  }
  for (const auto& n : kind.nvlinks) links += (links.empty() ? "" : ",") + figure(n);
  return (kind.gpu_name.empty() ? std::string("?") : kind.gpu_name) + " x" + std::to_string(kind.gpus) + ", PCIe " + pcie +
         ", NVLinks " + links;
}

json to_json(const node_kind& kind) {
  json pcie = json::array(), nvlinks = json::array();
  for (const auto& link : kind.pcie) pcie.push_back({{"gen_max", optional_json(link.gen_max)}, {"width_max", optional_json(link.width_max)}});
  for (const auto& n : kind.nvlinks) nvlinks.push_back(optional_json(n));
  return {{"gpu_name", kind.gpu_name}, {"gpus", kind.gpus}, {"pcie", pcie}, {"nvlinks", nvlinks}};
}

node_kind node_kind_from_json(const json& value) {
  try {
    node_kind kind;
    kind.gpu_name = value.at("gpu_name").get<std::string>();
    kind.gpus = value.at("gpus").get<int>();
    for (const auto& link : value.at("pcie")) kind.pcie.push_back({optional_int(link.at("gen_max")), optional_int(link.at("width_max"))});
    for (const auto& n : value.at("nvlinks")) kind.nvlinks.push_back(optional_int(n));
    return kind;
  } catch (const json::exception& e) {
    throw harness_error(std::string("noise model: bad kind: ") + e.what());
  }
}

spread_group spread_group_of(const metric_key& key, bool headline) {
  return {key.family, key.case_name, key.metric, headline};
}

const metric_noise* noise_model::find(const metric_key& key) const {
  const auto it = metrics.find(key);
  return it == metrics.end() ? nullptr : &it->second;
}

const run_spread* noise_model::spread_for(const metric_key& key, bool headline) const {
  const auto it = spreads.find(spread_group_of(key, headline));
  return it == spreads.end() ? nullptr : &it->second;
}

noise_model learn_noise_model(const std::vector<indexed_run>& runs, const node_kind& kind) {
  if (runs.empty()) throw harness_error("noise model: no runs to learn from");
  noise_model model;
  model.kind = kind;
  std::map<metric_key, std::vector<const metric_data*>> measured;
  for (const auto& run : runs) {
    model.members.push_back(run.run.name);
    for (const auto& [key, data] : run.index.metrics) {
      if (data.central) measured[key].push_back(&data);
    }
  }
  // Grouped as compare groups them, so the model's pooled spread is what compare would compute
  // from the same runs given as baselines.
  std::map<spread_group, std::vector<std::vector<run_metric>>> groups;
  for (const auto& [key, data] : measured) {
    if (data.size() < 2) continue;
    std::vector<run_metric> per_run;
    for (const auto* d : data) per_run.push_back({d->samples, *d->central});
    if (!std::all_of(per_run.begin(), per_run.end(), [](const run_metric& r) { return r.median > 0; })) continue;
    std::vector<double> logs;
    for (const auto& r : per_run) logs.push_back(std::log(r.median));
    const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / static_cast<double>(logs.size());
    double squares = 0;
    for (const double l : logs) squares += (l - mean) * (l - mean);
    metric_noise noise;
    noise.unit = data.front()->unit;
    noise.direction = data.front()->direction;
    noise.headline = data.front()->headline;
    noise.runs = data.size();
    noise.centre = std::exp(mean);
    noise.df = static_cast<double>(data.size() - 1);
    noise.between_variance = squares / noise.df;
    if (const double within = repetition_variance(per_run); within > 0) noise.within_variance = within;
    model.metrics[key] = noise;
    groups[spread_group_of(key, noise.headline)].push_back(std::move(per_run));
  }
  for (const auto& [group, metrics] : groups) model.spreads[group] = pool_run_spread(metrics);
  return model;
}

json to_json(const noise_model& model) {
  json metrics = json::array(), spreads = json::array();
  for (const auto& [key, noise] : model.metrics) {
    auto entry = key_json(key);
    entry["unit"] = noise.unit;
    entry["better"] = std::string(to_string(noise.direction));
    entry["headline"] = noise.headline;
    entry["runs"] = noise.runs;
    entry["centre"] = noise.centre;
    entry["between_variance_log"] = noise.between_variance;
    entry["df"] = noise.df;
    entry["within_variance_log"] = noise.within_variance ? json(*noise.within_variance) : json();
    metrics.push_back(std::move(entry));
  }
  for (const auto& [group, spread] : model.spreads) {
    spreads.push_back({{"family", group.family},
                       {"case", group.case_name},
                       {"metric", group.metric},
                       {"headline", group.headline},
                       {"variance_log", spread.variance},
                       {"df", spread.df},
                       {"inflation", spread.inflation},
                       {"inflation_df", spread.inflation_df}});
  }
  return {{"noise_model_version", model.version},
          {"method", "docs/harness.md, Reference sets and the noise model"},
          {"kind", to_json(model.kind)},
          {"members", model.members},
          {"metrics", metrics},
          {"spreads", spreads}};
}

noise_model noise_model_from_json(const json& value) {
  if (!value.is_object() || !value.contains("noise_model_version")) throw harness_error("not a noise model (no noise_model_version)");
  const auto version = value["noise_model_version"];
  if (!version.is_number_integer() || version.get<int>() != noise_model_version) {
    throw harness_error("noise_model_version " + version.dump() + " (this hdbench reads version " +
                        std::to_string(noise_model_version) + "); re-learn it with `hdbench reference learn SET_DIR`");
  }
  noise_model model;
  model.kind = node_kind_from_json(value.value("kind", json()));
  try {
    model.members = value.at("members").get<std::vector<std::string>>();
    for (const auto& entry : value.at("metrics")) {
      metric_noise noise;
      noise.unit = entry.at("unit").get<std::string>();
      noise.direction = parse_better(entry.at("better").get<std::string>());
      noise.headline = entry.at("headline").get<bool>();
      noise.runs = entry.at("runs").get<std::size_t>();
      noise.centre = entry.at("centre").get<double>();
      noise.between_variance = entry.at("between_variance_log").get<double>();
      noise.df = entry.at("df").get<double>();
      if (!entry.at("within_variance_log").is_null()) noise.within_variance = entry["within_variance_log"].get<double>();
      model.metrics[key_from_json(entry)] = noise;
    }
    for (const auto& entry : value.at("spreads")) {
      const spread_group group{entry.at("family").get<std::string>(), entry.at("case").get<std::string>(),
                               entry.at("metric").get<std::string>(), entry.at("headline").get<bool>()};
      model.spreads[group] = {entry.at("variance_log").get<double>(), entry.at("df").get<double>(),
                              entry.at("inflation").get<double>(), entry.at("inflation_df").get<double>()};
    }
  } catch (const json::exception& e) {
    throw harness_error(std::string("noise model: ") + e.what());
  }
  return model;
}

noise_model read_noise_model(const std::filesystem::path& file) {
  const auto text = read_text_file(file);  // names the file itself
  try {
    return noise_model_from_json(json::parse(text));
  } catch (const json::parse_error& e) {
    throw harness_error(file.string() + ": not JSON: " + e.what());
  } catch (const harness_error& e) {
    throw harness_error(file.string() + ": " + e.what());
  }
}

void write_noise_model(const std::filesystem::path& file, const noise_model& model) { write_json_file(file, to_json(model)); }

}  // namespace hdb
