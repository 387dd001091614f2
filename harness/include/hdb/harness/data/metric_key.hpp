#pragma once
// A figure's identity: which rows of two runs (or of a run and a check.json) are the same
// measurement. compare matches runs by it, check records it with every graded figure, fleet
// groups a figure's values across nodes by it.
#include <compare>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/results.hpp"

namespace hdb {

// The same measurement in two runs: family, case, the first GPU's index and the GPU count, the
// declared parameters and the metric. gpu_uuid is identity, not part of the match, so two nodes
// (or two GPUs swapped in one node) can be compared. A case's key has an empty metric; a failed
// family's an empty case too.
struct metric_key {
  std::string family;
  std::string case_name;
  std::optional<int> device;
  std::optional<int> gpus;
  std::map<std::string, std::string> params;
  std::string metric;

  auto operator<=>(const metric_key&) const = default;
};

// "device=0 direction=h2d host_kind=pinned" (describe_case's words) and the whole key,
// "copy bandwidth [device=0 direction=h2d host_kind=pinned] bandwidth".
[[nodiscard]] std::string describe_parameters(const metric_key& key);
[[nodiscard]] std::string describe(const metric_key& key);

// The key of a row's metric, and of its case (metric empty).
[[nodiscard]] metric_key key_of(const result_row& row);
[[nodiscard]] metric_key case_key_of(const result_row& row);

// {"family", "case", "device", "gpus", "params", "metric"}: check.json's "key" of a figure.
[[nodiscard]] nlohmann::json to_json(const metric_key& key);
// nullopt for anything that is not that form.
[[nodiscard]] std::optional<metric_key> metric_key_from_json(const nlohmann::json& value);

}  // namespace hdb
