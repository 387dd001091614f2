// The report rules of every family the harness knows. A family's rules live in its own file
// beside this one; adding a family adds one line to the table below and nothing elsewhere.
#include <algorithm>
#include <charconv>
#include <vector>

#include "hdb/harness/family_rules.hpp"
#include "hdb/harness/peaks.hpp"

namespace hdb {

family_rules allreduce_report_rules();
family_rules copy_report_rules();
family_rules overlap_report_rules();
family_rules p2p_report_rules();
family_rules sync_report_rules();

namespace {

std::vector<family_rules>& registered() {
  static std::vector<family_rules> rules = [] {
    std::vector<family_rules> known;
    for (auto make : {allreduce_report_rules, copy_report_rules, overlap_report_rules, p2p_report_rules, sync_report_rules}) known.push_back(make());
    return known;
  }();
  return rules;
}

const nlohmann::json& null_json() {
  static const nlohmann::json none;
  return none;
}

std::optional<double> number(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
}

}  // namespace

const family_rules* rules_for(const std::string& family) {
  const auto& rules = registered();
  const auto it = std::find_if(rules.begin(), rules.end(), [&](const family_rules& r) { return r.family == family; });
  return it == rules.end() ? nullptr : &*it;
}

void register_family_rules(family_rules rules) {
  auto& all = registered();
  std::erase_if(all, [&](const family_rules& r) { return r.family == rules.family; });
  all.push_back(std::move(rules));
}

const nlohmann::json& gpu_record(const nlohmann::json& meta, int device_index) {
  if (!meta.is_object() || !meta.contains("node") || !meta["node"].is_object()) return null_json();
  const auto gpus = meta["node"].find("gpus");
  if (gpus == meta["node"].end() || !gpus->is_array()) return null_json();
  for (const auto& gpu : *gpus) {
    if (gpu.is_object() && gpu.value("index", -1) == device_index) return gpu;
  }
  return null_json();
}

std::optional<double> gpu_pcie_peak_gbps(const nlohmann::json& gpu) {
  if (!gpu.is_object() || !gpu.contains("pcie")) return std::nullopt;
  const auto& pcie = gpu["pcie"];
  const auto gen = number(pcie, "gen_max") ? number(pcie, "gen_max") : number(pcie, "gen_current");
  const auto width = number(pcie, "width_max") ? number(pcie, "width_max") : number(pcie, "width_current");
  if (!gen || !width) return std::nullopt;
  return pcie_peak_gbps(static_cast<int>(*gen), static_cast<int>(*width));
}

std::vector<int> row_devices(const result_row& row) {
  std::vector<int> devices;
  std::string_view rest = row.params.get("device");
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    int index = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (ec != std::errc() || end != item.data() + item.size()) return {};
    devices.push_back(index);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return devices;
}

std::optional<int> row_device(const result_row& row) {
  const auto devices = row_devices(row);
  return devices.empty() ? std::nullopt : std::optional<int>(devices.front());
}

std::string gpu_prefix(const std::string& device) { return device.empty() ? "" : "GPU " + device + ": "; }

std::string extra_param(const case_params& params, std::string_view key) {
  const std::string& extra = params.extra;
  std::size_t start = 0;
  while (start < extra.size()) {
    const std::size_t end = std::min(extra.find(';', start), extra.size());
    const std::string_view item = std::string_view(extra).substr(start, end - start);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return std::string(item.substr(key.size() + 1));
    }
    start = end + 1;
  }
  return "";
}

bool is_ok_median(const result_row& row) { return row.stat == statistic::median && row.value && row.status == row_status::ok; }

median_index ok_medians(const std::vector<result_row>& rows) {
  median_index out;
  for (const auto& row : rows) {
    if (is_ok_median(row)) out.emplace(std::pair{row.case_name, row.metric}, median_entry{&row, *row.value});
  }
  return out;
}

}  // namespace hdb
