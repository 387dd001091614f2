#include "hdb/harness/run/tiers.hpp"

#include "hdb/harness/common/json_fields.hpp"

#include <algorithm>
#include <map>

namespace hdb {
namespace {

using nlohmann::json;


std::string number_text(const json& value) {
  if (value.is_number()) return std::to_string(static_cast<long>(value.get<double>()));
  return "?";
}

// "0-55,112-167" -> 112; 0 when unknown.
int cpu_count(const std::string& affinity) {
  int count = 0;
  std::size_t begin = 0;
  while (begin < affinity.size()) {
    std::size_t end = affinity.find(',', begin);
    if (end == std::string::npos) end = affinity.size();
    const std::string item = affinity.substr(begin, end - begin);
    const auto dash = item.find('-');
    try {
      count += dash == std::string::npos ? 1 : std::stoi(item.substr(dash + 1)) - std::stoi(item.substr(0, dash)) + 1;
    } catch (const std::exception&) {
      return 0;
    }
    begin = end + 1;
  }
  return count;
}

std::string gpu_key(const json& gpu, const json& topo_gpu) {
  const json& pcie = field(gpu, "pcie").is_object() ? field(gpu, "pcie") : field(topo_gpu, "pcie");
  std::string key = field(gpu, "name").is_string() ? field(gpu, "name").get<std::string>() : "unknown GPU";
  key += field(pcie, "gen_max").is_number()
             ? " · PCIe Gen" + number_text(field(pcie, "gen_max")) + " x" + number_text(field(pcie, "width_max"))
             : " · PCIe unknown";
  const json& nvlink = field(gpu, "nvlink").is_object() ? field(gpu, "nvlink") : field(topo_gpu, "nvlink");
  key += " · NVLinks " + (field(nvlink, "links_active").is_number() ? number_text(field(nvlink, "links_active")) : "?");
  const json& affinity = field(gpu, "cpu_affinity").is_string() ? field(gpu, "cpu_affinity") : field(topo_gpu, "cpu_affinity");
  const int cpus = affinity.is_string() ? cpu_count(affinity.get<std::string>()) : 0;
  key += cpus > 0 ? " · " + std::to_string(cpus) + " local CPUs" : " · placement unknown";
  return key;
}

std::string link_text(const json& pair) {
  const json& link = field(pair, "link");
  const std::string type = field(link, "type").is_string() ? field(link, "type").get<std::string>() : "unknown";
  std::string text;
  if (type == "nvlink") {
    text = "NVLink x" + number_text(field(link, "links"));
    if (field(link, "via").is_string()) text += " via " + field(link, "via").get<std::string>();
  } else if (type == "pcie") {
    text = "PCIe " + (field(link, "pcie_path").is_string() ? field(link, "pcie_path").get<std::string>() : "?");
  } else {
    text = "link unknown";
  }
  const json& peer = field(pair, "can_access_peer");
  text += peer.is_boolean() ? (peer.get<bool>() ? " · peer access" : " · no peer access") : " · peer access unknown";
  return text;
}

}  // namespace

node_tiers tiers_of(const json& node) {
  node_tiers tiers;
  const json& gpus = field(node, "gpus");
  const json& topo_gpus = field(field(node, "topology"), "gpus");
  std::map<int, std::string> key_of;
  if (gpus.is_array()) {
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const int index = field(gpus[i], "index").is_number_integer() ? field(gpus[i], "index").get<int>() : static_cast<int>(i);
      const json& topo = topo_gpus.is_array() && i < topo_gpus.size() ? topo_gpus[i] : json();
      key_of[index] = gpu_key(gpus[i], topo);
      tiers.gpus.push_back(index);
    }
  }
  std::sort(tiers.gpus.begin(), tiers.gpus.end());
  for (int g : tiers.gpus) {
    auto it = std::find_if(tiers.classes.begin(), tiers.classes.end(), [&](const gpu_class& c) { return c.key == key_of[g]; });
    if (it == tiers.classes.end()) tiers.classes.push_back({key_of[g], {g}, g});
    else it->gpus.push_back(g);
  }
  const json& pairs = field(field(node, "topology"), "pairs");
  std::vector<std::pair<std::pair<int, int>, std::string>> keyed;
  if (pairs.is_array()) {
    for (const json& p : pairs) {
      if (!field(p, "src").is_number_integer() || !field(p, "dst").is_number_integer()) continue;
      const int src = p["src"].get<int>(), dst = p["dst"].get<int>();
      if (src == dst || !key_of.contains(src) || !key_of.contains(dst)) continue;
      const std::string ends = key_of[src] == key_of[dst] ? key_of[src] : key_of[src] + " -> " + key_of[dst];
      keyed.push_back({{src, dst}, ends + " · " + link_text(p)});
    }
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& [pair, key] : keyed) {
    auto it = std::find_if(tiers.pair_classes.begin(), tiers.pair_classes.end(), [&](const pair_class& c) { return c.key == key; });
    if (it == tiers.pair_classes.end()) tiers.pair_classes.push_back({key, {pair}, pair});
    else it->pairs.push_back(pair);
  }
  return tiers;
}

json to_json(const node_tiers& tiers, bool full) {
  json out{{"mode", full ? "full" : "tiered"}, {"classes", json::array()}, {"pair_classes", json::array()},
           {"sweep_devices", json::array()}, {"sweep_pairs", json::array()}};
  for (const auto& c : tiers.classes) {
    out["classes"].push_back({{"key", c.key}, {"gpus", c.gpus}, {"representative", c.representative}});
  }
  for (const auto& c : tiers.pair_classes) {
    json pairs = json::array();
    for (const auto& [s, d] : c.pairs) pairs.push_back({s, d});
    out["pair_classes"].push_back(
        {{"key", c.key}, {"pairs", pairs}, {"representative", {c.representative.first, c.representative.second}}});
  }
  if (full) {
    out["sweep_devices"] = tiers.gpus;
    for (const auto& c : tiers.pair_classes) {
      for (const auto& [s, d] : c.pairs) out["sweep_pairs"].push_back({s, d});
    }
  } else {
    for (const auto& c : tiers.classes) out["sweep_devices"].push_back(c.representative);
    for (const auto& c : tiers.pair_classes) out["sweep_pairs"].push_back({c.representative.first, c.representative.second});
  }
  return out;
}

std::vector<std::string> sweep_flags(const node_tiers& tiers) {
  if (tiers.gpus.size() < 2) return {};
  std::string devices, pairs;
  for (const auto& c : tiers.classes) devices += (devices.empty() ? "" : ",") + std::to_string(c.representative);
  for (const auto& c : tiers.pair_classes) {
    pairs += (pairs.empty() ? "" : ",") + std::to_string(c.representative.first) + ">" + std::to_string(c.representative.second);
  }
  return {"--sweep-devices=" + devices, "--sweep-pairs=" + (pairs.empty() ? std::string("none") : pairs)};
}

json assumed_node(const json& node, int gpus, const json& pair_link) {
  const json& first = field(node, "gpus").is_array() && !node["gpus"].empty() ? node["gpus"][0] : json::object();
  const json& topo = field(field(node, "topology"), "gpus");
  const json& first_topo = topo.is_array() && !topo.empty() ? topo[0] : json::object();
  json out = node;
  out["gpus"] = json::array();
  out["gpu_count"] = gpus;
  json topology{{"gpus", json::array()}, {"pairs", json::array()}};
  // A GPU joined to its peers by NVLink has those links active, whatever the template GPU had.
  const bool nvlinked = gpus > 1 && field(pair_link, "type") == "nvlink" && field(pair_link, "links").is_number();
  for (int g = 0; g < gpus; ++g) {
    json gpu = first;
    gpu["index"] = g;
    if (nvlinked) gpu["nvlink"] = {{"links_active", pair_link["links"]}};
    out["gpus"].push_back(gpu);
    json t = first_topo;
    t["index"] = g;
    if (nvlinked && t.is_object()) t["nvlink"] = {{"links_active", pair_link["links"]}};
    topology["gpus"].push_back(t);
  }
  for (int s = 0; s < gpus; ++s) {
    for (int d = 0; d < gpus; ++d) {
      if (s == d) continue;
      json pair{{"src", s}, {"dst", d}, {"link", pair_link.is_null() ? json{{"type", "unknown"}} : pair_link}};
      if (!pair_link.is_null()) pair["can_access_peer"] = field(pair_link, "type") == "nvlink";
      topology["pairs"].push_back(pair);
    }
  }
  out["topology"] = topology;
  return out;
}

}  // namespace hdb
