#include "hdb/harness/verdict/what_changed.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <iterator>
#include <utility>

#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/common/json_fields.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// A recorded text; an empty string records nothing.
std::optional<std::string> text_of(const json& value) {
  if (!value.is_string() || value.get<std::string>().empty()) return std::nullopt;
  return value.get<std::string>();
}

// A clock or a power limit to the unit: "1980", never "1.98e+03".
std::optional<std::string> whole_of(const json& object, const char* key, std::string_view unit) {
  const auto value = number_field(object, key);
  if (!value) return std::nullopt;
  return std::to_string(std::llround(*value)) + " " + std::string(unit);
}

// "NVIDIA H200 x2" (the kind's words), or each GPU's name where they differ.
std::optional<std::string> gpu_models(const json& meta) {
  const auto& gpus = field(field(meta, "node"), "gpus");
  if (!gpus.is_array() || gpus.empty()) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& gpu : gpus) names.push_back(text_of(field(gpu, "name")).value_or("?"));
  if (std::all_of(names.begin(), names.end(), [&](const std::string& name) { return name == names.front(); })) {
    return names.front() + " x" + std::to_string(names.size());
  }
  std::string all;
  for (const auto& name : names) all += (all.empty() ? "" : ", ") + name;
  return all;
}

// MemTotal to the GiB: the kernel's own reservations move it by a few MiB between boots and
// versions, which is not a change of the host's memory.
std::optional<std::string> host_memory(const json& meta) {
  const auto bytes = number_field(field(meta, "host"), "memory_bytes");
  if (!bytes) return std::nullopt;
  return std::to_string(std::llround(*bytes / double(1ull << 30))) + " GiB";
}

// The link's maximum, "Gen5 x16": what the slot and card allow (the current link is the health
// line's, and an idle one trains down).
std::optional<std::string> pcie_link_max(const json& gpu) {
  const auto& pcie = field(gpu, "pcie");
  const auto gen = number_field(pcie, "gen_max"), width = number_field(pcie, "width_max");
  if (!gen && !width) return std::nullopt;
  const auto part = [](const std::optional<double>& v) { return v ? std::to_string(std::llround(*v)) : std::string("?"); };
  return "Gen" + part(gen) + " x" + part(width);
}

std::optional<std::string> nvlinks(const json& gpu) {
  const auto links = number_field(field(gpu, "nvlink"), "links_active");
  if (!links) return std::nullopt;
  return std::to_string(std::llround(*links)) + " active";
}

std::optional<std::string> application_clocks(const json& gpu) {
  const auto& clocks = field(gpu, "clocks");
  const auto sm = whole_of(clocks, "applications_sm_mhz", "MHz"), memory = whole_of(clocks, "applications_mem_mhz", "MHz");
  if (!sm && !memory) return std::nullopt;
  return "SM " + sm.value_or("?") + ", memory " + memory.value_or("?");
}

// nvidia-smi's ECC mode; the CUDA runtime's flag where nvidia-smi did not answer.
std::optional<std::string> ecc(const json& gpu) {
  if (auto mode = text_of(field(gpu, "ecc_mode"))) return mode;
  const auto& enabled = field(gpu, "ecc_enabled");
  if (!enabled.is_boolean()) return std::nullopt;
  return enabled.get<bool>() ? "Enabled" : "Disabled";
}

// The record of the GPU with CUDA index `index` in meta.json (its position where it has no index).
const json* gpu_with_index(const json& meta, int index) {
  const auto& gpus = field(field(meta, "node"), "gpus");
  if (!gpus.is_array()) return nullptr;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (std::llround(number_field(gpus[i], "index").value_or(double(i))) == index) return &gpus[i];
  }
  return nullptr;
}

std::vector<int> gpu_indices(const json& meta) {
  std::vector<int> indices;
  const auto& gpus = field(field(meta, "node"), "gpus");
  if (!gpus.is_array()) return indices;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    indices.push_back(static_cast<int>(std::llround(number_field(gpus[i], "index").value_or(double(i)))));
  }
  return indices;
}

// Each distinct value and its count, most runs first (then by text, not recorded last).
std::vector<field_value> distinct_values(const std::vector<std::optional<std::string>>& values) {
  std::map<std::optional<std::string>, std::size_t> counts;
  for (const auto& value : values) ++counts[value];
  std::vector<field_value> distinct;
  for (const auto& [value, runs] : counts) distinct.push_back({value, runs});
  std::stable_sort(distinct.begin(), distinct.end(), [](const field_value& a, const field_value& b) {
    if (a.runs != b.runs) return a.runs > b.runs;
    return a.value.has_value() > b.value.has_value();
  });
  return distinct;
}

// The rule on one field (of one GPU): a change when the current value is none of the baselines'.
// A field no baseline recorded (runs of an hdbench before it) is nothing to compare: "not recorded
// -> Disabled" would send a user to put back a setting nobody knows was different.
// A GPU that changed as an earlier GPU of the same field did joins that entry.
void add_if_changed(const fingerprint_field& f, std::optional<int> gpu, const std::optional<std::string>& current,
                    const std::vector<std::optional<std::string>>& theirs, std::vector<fingerprint_change>& changes) {
  if (std::none_of(theirs.begin(), theirs.end(), [](const auto& value) { return value.has_value(); })) return;
  if (std::find(theirs.begin(), theirs.end(), current) != theirs.end()) return;
  auto baselines = distinct_values(theirs);
  if (gpu) {
    const auto alike = std::find_if(changes.begin(), changes.end(), [&](const fingerprint_change& c) {
      return c.field == &f && c.current == current && c.baselines == baselines;
    });
    if (alike != changes.end()) {
      alike->gpus.push_back(*gpu);
      return;
    }
  }
  changes.push_back({&f, gpu ? std::vector<int>{*gpu} : std::vector<int>{}, current, std::move(baselines)});
}

std::string value_text(const std::optional<std::string>& value) { return value.value_or("not recorded"); }

}  // namespace

const std::vector<fingerprint_field>& fingerprint_fields() {
  static const std::vector<fingerprint_field> fields = {
      {"gpus", "GPUs", false, gpu_models},
      {"driver", "driver", false, [](const json& m) { return text_of(field(field(m, "node"), "driver_release")); }},
      {"driver_cuda", "driver's CUDA", false, [](const json& m) { return text_of(field(field(m, "node"), "driver_version")); }},
      {"cuda_runtime", "CUDA runtime", false, [](const json& m) { return text_of(field(field(m, "node"), "cuda_runtime")); }},
      {"nccl", "NCCL", false, [](const json& m) { return text_of(field(field(m, "node"), "nccl_version")); }},
      {"kernel", "kernel", false, [](const json& m) { return text_of(field(field(m, "host"), "kernel")); }},
      {"os", "OS", false, [](const json& m) { return text_of(field(field(m, "host"), "os")); }},
      {"cpu", "CPU", false, [](const json& m) { return text_of(field(field(field(m, "host"), "cpu"), "model")); }},
      {"host_memory", "host memory", false, host_memory},
      {"vbios", "VBIOS", true, [](const json& g) { return text_of(field(g, "vbios_version")); }},
      {"pcie_link_max", "PCIe link max", true, pcie_link_max},
      {"nvlinks", "NVLinks", true, nvlinks},
      {"application_clocks", "application clocks", true, application_clocks},
      {"power_limit", "power limit", true, [](const json& g) { return whole_of(field(g, "clocks"), "power_limit_w", "W"); }},
      {"persistence", "persistence", true, [](const json& g) { return text_of(field(g, "persistence_mode")); }},
      {"ecc", "ECC", true, ecc},
      {"mig", "MIG", true, [](const json& g) { return text_of(field(g, "mig_mode")); }},
  };
  return fields;
}

std::vector<fingerprint_change> what_changed(const std::vector<const json*>& baselines, const json* current) {
  std::vector<const json*> recorded;
  std::copy_if(baselines.begin(), baselines.end(), std::back_inserter(recorded), [](const json* meta) { return meta != nullptr; });
  std::vector<fingerprint_change> changes;
  if (current == nullptr || recorded.empty()) return changes;
  for (const auto& f : fingerprint_fields()) {
    if (!f.per_gpu) {
      std::vector<std::optional<std::string>> theirs;
      for (const auto* meta : recorded) theirs.push_back(f.read(*meta));
      add_if_changed(f, std::nullopt, f.read(*current), theirs, changes);
      continue;
    }
    for (const int index : gpu_indices(*current)) {
      std::vector<std::optional<std::string>> theirs;
      for (const auto* meta : recorded) {
        if (const auto* gpu = gpu_with_index(*meta, index)) theirs.push_back(f.read(*gpu));
      }
      add_if_changed(f, index, f.read(*gpu_with_index(*current, index)), theirs, changes);
    }
  }
  return changes;
}

std::string describe_change(const fingerprint_change& change, std::string_view runs) {
  std::string text = change.gpus.empty() ? "" : gpu_text(change.gpus) + " ";
  text += std::string(change.field->label) + " " + value_text(change.baselines.front().value) + " -> " + value_text(change.current);
  if (!change.uniform()) {
    std::string values;
    for (const auto& seen : change.baselines) {
      values += (values.empty() ? "" : ", ") + value_text(seen.value) + " in " + std::to_string(seen.runs);
    }
    return text + " (" + std::string(runs) + " differ: " + values + ")";
  }
  const auto count = change.baselines.front().runs;
  return count > 1 ? text + " (the " + std::to_string(count) + " " + std::string(runs) + " agree)" : text;
}

std::string what_changed_line(const std::vector<fingerprint_change>& changes, std::string_view runs) {
  if (changes.empty()) return {};
  std::string line = "what changed:";
  for (std::size_t i = 0; i < changes.size(); ++i) line += (i ? "; " : " ") + describe_change(changes[i], runs);
  return line;
}

json to_json(const std::vector<fingerprint_change>& changes) {
  const auto value = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (const auto& change : changes) {
    json baselines = json::array();
    for (const auto& seen : change.baselines) baselines.push_back({{"value", value(seen.value)}, {"runs", seen.runs}});
    out.push_back({{"field", change.field->name},
                   {"label", change.field->label},
                   {"gpus", change.gpus},
                   {"current", value(change.current)},
                   {"baselines", std::move(baselines)},
                   {"uniform", change.uniform()}});
  }
  return out;
}

}  // namespace hdb
