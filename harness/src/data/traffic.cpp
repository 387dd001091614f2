// The built-in traffic classes and the composition of a class's peak from the link rates in
// meta.json (formulas in docs/harness.md). Every rate is read from the node's own record: the
// PCIe link from node.gpus[i].pcie, HBM from node.gpus[i].hbm_peak_GBps, NVLink links from
// node.gpus[i].nvlink and node.topology.pairs, the per-link data rate from the rate nvidia-smi
// reported (nvlink.per_link_GBps) and the GPU's generation. Every peak is a data rate.
#include "hdb/harness/data/traffic.hpp"
#include "hdb/harness/common/json_fields.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/data/peaks.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/nvlink_rates.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

const json& null_json() {
  static const json none;
  return none;
}

std::optional<int> int_param(const result_row& row, const char* key) {
  const auto& text = row.param(key);
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A GPU's record in node.topology.gpus (written by the topology read p2p uses).
const json& topology_gpu(const json& meta, int device_index) {
  const auto& list = field(field(field(meta, "node"), "topology"), "gpus");
  if (!list.is_array()) return null_json();
  for (const auto& gpu : list) {
    if (gpu.is_object() && gpu.value("index", -1) == device_index) return gpu;
  }
  return null_json();
}

std::optional<double> links_active(const json& meta, int device_index) {
  if (const auto n = number_field(field(gpu_record(meta, device_index), "nvlink"), "links_active")) return n;
  return number_field(field(topology_gpu(meta, device_index), "nvlink"), "links_active");
}

// The NVLinks of one pair's link record (node.topology.pairs[k].link); nullopt for a PCIe link.
std::optional<double> nvlinks_of(const json& link) {
  // Compared as a string: GCC 12 -O3 reports a false -Warray-bounds inside json == const char*.
  const auto& type = field(link, "type");
  if (!type.is_string() || type.get_ref<const std::string&>() != "nvlink") return std::nullopt;
  return number_field(link, "links");
}

std::optional<double> pair_links(const json& meta, int src, int dst) {
  const auto& pairs = field(field(field(meta, "node"), "topology"), "pairs");
  if (!pairs.is_array()) return std::nullopt;
  for (const auto& p : pairs) {
    if (p.value("src", -1) == src && p.value("dst", -1) == dst) return nvlinks_of(field(p, "link"));
  }
  return std::nullopt;
}

std::string gpu_list(const std::vector<int>& devices) {
  std::string text = devices.size() == 1 ? "GPU " : "GPUs ";
  for (std::size_t i = 0; i < devices.size(); ++i) text += (i == 0 ? "" : ",") + std::to_string(devices[i]);
  return text;
}

// One GPU's rate over one link kind, with the words that say how it was made.
struct link_rate {
  double value;
  std::string detail;  // "" or "18 x 26.6 GB/s"
};

std::optional<link_rate> gpu_link_rate(link_kind link, const json& meta, int device) {
  switch (link) {
    case link_kind::pcie:
      if (const auto pcie = gpu_pcie_peak_gbps(gpu_record(meta, device))) return link_rate{*pcie, ""};
      return std::nullopt;
    case link_kind::hbm:
      if (const auto hbm = number_field(gpu_record(meta, device), "hbm_peak_GBps")) return link_rate{*hbm, ""};
      return std::nullopt;
    case link_kind::nvlink_gpu: {
      const auto links = links_active(meta, device);
      const auto rate = nvlink_data_per_link_gbps(meta, device);
      if (!links || !rate || *links <= 0) return std::nullopt;
      return link_rate{*links * *rate, format_figure(*links) + " x " + format_figure(*rate) + " GB/s"};
    }
    case link_kind::nvlink_pair:
      break;  // a property of two GPUs, composed in pair_rate
  }
  return std::nullopt;
}

// The NVLinks between the row's source and destination: src/dst parameters, else its first two GPUs.
std::optional<std::pair<link_rate, std::string>> pair_rate(const result_row& row, const std::vector<int>& devices,
                                                           const json& meta) {
  auto src = int_param(row, "src");
  auto dst = int_param(row, "dst");
  if ((!src || !dst) && devices.size() >= 2) {
    src = devices[0];
    dst = devices[1];
  }
  if (!src || !dst || *src == *dst) return std::nullopt;
  const auto links = pair_links(meta, *src, *dst);
  const auto rate_src = nvlink_data_per_link_gbps(meta, *src);
  const auto rate_dst = nvlink_data_per_link_gbps(meta, *dst);
  if (!links || !rate_src || !rate_dst || *links <= 0) return std::nullopt;
  const double rate = std::min(*rate_src, *rate_dst);  // a link runs at its slower end
  return std::pair{link_rate{*links * rate, format_figure(*links) + " x " + format_figure(rate) + " GB/s"},
                   "GPU " + std::to_string(*src) + "->" + std::to_string(*dst)};
}

std::vector<traffic_class> family_classes_from_meta(const json& meta, const std::string& family) {
  const auto& schema = field(field(field(meta, "families"), family.c_str()), "schema");
  if (!schema.is_object()) return {};
  try {
    return parse_declaration(nlohmann::ordered_json(schema)).traffic_classes;
  } catch (const declaration_error&) {
    return {};  // a damaged declaration in meta.json costs the peak, not the report
  }
}

}  // namespace

const json& gpu_record(const json& meta, int device_index) {
  const auto& gpus = field(field(meta, "node"), "gpus");
  if (!gpus.is_array()) return null_json();
  for (const auto& gpu : gpus) {
    if (gpu.is_object() && gpu.value("index", -1) == device_index) return gpu;
  }
  return null_json();
}

std::optional<double> gpu_pcie_peak_gbps(const json& gpu) {
  const auto& pcie = field(gpu, "pcie");
  const auto gen = number_field(pcie, "gen_max") ? number_field(pcie, "gen_max") : number_field(pcie, "gen_current");
  const auto width = number_field(pcie, "width_max") ? number_field(pcie, "width_max") : number_field(pcie, "width_current");
  if (!gen || !width) return std::nullopt;
  return pcie_peak_gbps(static_cast<int>(*gen), static_cast<int>(*width));
}

std::optional<double> nvlink_data_per_link_gbps(const json& meta, int device_index) {
  const auto& gpu = gpu_record(meta, device_index);
  auto reported = number_field(field(gpu, "nvlink"), "per_link_GBps");
  if (!reported) reported = number_field(field(topology_gpu(meta, device_index), "nvlink"), "per_link_GBps");
  const auto& capability = field(gpu, "compute_capability");  // "9.0"
  if (!reported || !capability.is_string()) return std::nullopt;
  int major = 0;
  int minor = 0;
  if (std::sscanf(capability.get_ref<const std::string&>().c_str(), "%d.%d", &major, &minor) != 2) return std::nullopt;
  return nvlink_data_rate(*reported, major, minor);
}

void record_link_rates(json& meta) {
  if (!field(field(meta, "node"), "gpus").is_array()) return;
  // GPU rates go to node.gpus; an older run's reported rates are read from node.topology, beside it.
  auto& gpus = meta["node"]["gpus"];
  for (auto& gpu : gpus) {
    if (!gpu.is_object()) continue;
    if (auto pcie = gpu.find("pcie"); pcie != gpu.end() && pcie->is_object()) {
      const auto peak = gpu_pcie_peak_gbps(gpu);
      (*pcie)["peak_GBps"] = peak ? json(*peak) : json(nullptr);
    }
    const auto index = gpu.find("index");
    const auto& nvlink = field(gpu, "nvlink");
    if (index == gpu.end() || !index->is_number_integer() || !(nvlink.is_null() || nvlink.is_object())) continue;
    const auto& older = field(topology_gpu(meta, index->get<int>()), "nvlink");
    for (const char* key : {"links_active", "per_link_GBps"}) {
      if (!number_field(nvlink, key) && number_field(older, key)) gpu["nvlink"][key] = field(older, key);
    }
    if (gpu.contains("nvlink")) {
      const auto data = nvlink_data_per_link_gbps(meta, index->get<int>());
      gpu["nvlink"]["data_per_link_GBps"] = data ? json(*data) : json(nullptr);
    }
  }
  auto& node = meta["node"];
  const auto topology = node.find("topology");
  if (topology == node.end() || !topology->is_object()) return;
  const auto pairs = topology->find("pairs");
  if (pairs == topology->end() || !pairs->is_array()) return;
  for (auto& pair : *pairs) {
    if (!pair.is_object()) continue;
    const auto link = pair.find("link");
    if (link == pair.end() || !link->is_object()) continue;
    const auto links = nvlinks_of(*link);
    if (!links) continue;  // a PCIe pair has no NVLink peak
    const auto src = nvlink_data_per_link_gbps(meta, pair.value("src", -1));
    const auto dst = nvlink_data_per_link_gbps(meta, pair.value("dst", -1));
    (*link)["peak_GBps"] = src && dst ? json(*links * std::min(*src, *dst)) : json(nullptr);
  }
}

std::vector<int> row_devices(const result_row& row, const json& meta) {
  if (row.gpu_uuid.empty()) {
    if (row.device && row.gpus.value_or(1) == 1) return {*row.device};
    return {};
  }
  std::vector<int> devices;
  const auto& gpus = field(field(meta, "node"), "gpus");
  for (const auto& uuid : split_nonempty(row.gpu_uuid)) {
    const auto it = !gpus.is_array() ? gpus.end() : std::find_if(gpus.begin(), gpus.end(), [&](const json& gpu) {
      return gpu.is_object() && gpu.value("uuid", "") == uuid && gpu.value("index", -1) >= 0;
    });
    if (it == gpus.end()) return {};
    devices.push_back(it->value("index", -1));
  }
  return devices;
}

std::optional<peak_ref> traffic_peak(std::string_view class_name, const result_row& row, const std::vector<int>& devices,
                                     const json& meta, const family_declaration* family) {
  const traffic_class* cls = find_traffic_class(class_name, family);
  if (cls == nullptr || devices.empty()) return std::nullopt;
  std::optional<link_rate> total;
  std::string who = gpu_list(devices);
  if (cls->link == link_kind::nvlink_pair) {
    const auto pair = pair_rate(row, devices, meta);
    if (!pair) return std::nullopt;
    total = pair->first;
    who = pair->second;
  } else {
    const auto chosen = cls->combine == link_combine::first ? std::vector<int>{devices.front()} : devices;
    for (int device : chosen) {
      const auto rate = gpu_link_rate(cls->link, meta, device);
      if (!rate) return std::nullopt;
      if (!total) total = rate;
      else if (cls->combine == link_combine::sum) total = link_rate{total->value + rate->value, ""};
      else if (rate->value < total->value) total = rate;
    }
    if (cls->combine == link_combine::first) who = gpu_list(chosen);
  }
  std::string basis = cls->basis;
  if (!total->detail.empty()) basis += " (" + total->detail + ")";
  return peak_ref{total->value * cls->directions, cls->traffic_factor, basis + ", " + who};
}

std::optional<peak_ref> row_peak(const result_row& row, const json& meta) {
  if (row.traffic.empty()) return std::nullopt;
  const auto devices = row_devices(row, meta);
  if (find_traffic_class(row.traffic, nullptr) != nullptr) return traffic_peak(row.traffic, row, devices, meta, nullptr);
  family_declaration own;
  own.family = row.family;
  own.traffic_classes = family_classes_from_meta(meta, row.family);
  return traffic_peak(row.traffic, row, devices, meta, &own);
}

double percent_of_peak(double value, const peak_ref& peak) { return value * peak.traffic_factor / peak.value * 100; }

}  // namespace hdb
