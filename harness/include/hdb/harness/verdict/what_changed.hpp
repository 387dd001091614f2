#pragma once
// What changed, beside what moved: when compare calls a figure SLOWER or FASTER, or check FAILs
// a line, the fingerprint fields of meta.json in which the current run differs from its baselines
// or from its reference set's runs (driver, CUDA, NCCL, kernel, VBIOS, PCIe link, ...). One table
// of fields (fingerprint_fields), one rule (what_changed) and one text for compare and check alike;
// docs/machine-output.md lists the fields.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hdb {

// One field of the fingerprint as the diff reads it.
struct fingerprint_field {
  std::string_view name;   // its name in the JSON: "driver", "pcie_link_max"
  std::string_view label;  // what the text prints: "driver", "PCIe link max"
  // Read from each of meta.json's node.gpus[] and compared GPU by GPU, by CUDA index (as compare
  // matches figures); otherwise read once from meta.json for the node.
  bool per_gpu = false;
  // The value as text, nullopt where meta.json does not record it. Texts are what is compared, so
  // what the user reads is what differed.
  std::optional<std::string> (*read)(const nlohmann::json& record) = nullptr;
};

// The fields, in the order they print.
[[nodiscard]] const std::vector<fingerprint_field>& fingerprint_fields();

// One value of a field among the baselines, and how many of them recorded it.
struct field_value {
  std::optional<std::string> value;  // nullopt: not recorded
  std::size_t runs = 0;
  bool operator==(const field_value&) const = default;
};

// A field (on one or more GPUs) whose current value is none of the baselines' values.
struct fingerprint_change {
  const fingerprint_field* field = nullptr;
  std::vector<int> gpus;               // the GPUs that changed alike; empty for a node field
  std::optional<std::string> current;  // nullopt: not recorded
  std::vector<field_value> baselines;  // every distinct value among the baselines, most runs first

  [[nodiscard]] bool uniform() const { return baselines.size() == 1; }
};

// The one rule. A field changed when the current run's value is none of the baselines' values
// ("not recorded" is a value like any other, so a field one side lacks is said, not skipped). Where
// the baselines differ among themselves and the current run matches one of them, the field is not
// what changed. A per-GPU field holds GPU i of the current run against GPU i of each baseline that
// has one; GPUs that changed alike are one entry. A run without meta.json (nullptr) takes no part:
// without the current run's, or without any baseline's, nothing is said.
[[nodiscard]] std::vector<fingerprint_change> what_changed(const std::vector<const nlohmann::json*>& baselines,
                                                          const nlohmann::json* current);

// One change as text, `runs` naming what the current run was held against ("baselines", "runs of
// the set"): "driver 580.95.05 -> 580.159.04 (the 3 baselines agree)", "GPU 1 PCIe link max Gen5
// x16 -> Gen4 x16", "kernel 6.8.0-49 -> 6.8.0-52 (baselines differ: 6.8.0-49 in 2, 6.8.0-51 in 1)".
[[nodiscard]] std::string describe_change(const fingerprint_change& change, std::string_view runs);

// "what changed: <change>; <change>", or "" without a change: the line compare and check print.
[[nodiscard]] std::string what_changed_line(const std::vector<fingerprint_change>& changes, std::string_view runs);

// The "what_changed" array of compare's JSON and check.json: per change {field, label, gpus,
// current, baselines: [{value, runs}], uniform}, a value not recorded as null.
[[nodiscard]] nlohmann::json to_json(const std::vector<fingerprint_change>& changes);

}  // namespace hdb
