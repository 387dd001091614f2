#pragma once
// The noise model of one machine kind (noise.json, learned from a reference set's runs/): how
// much a healthy node of that kind varies between fresh machines, per metric and pooled per kind
// of metric, so that one baseline run plus the model is a real test (docs/harness.md, "Reference
// sets and the noise model", gives the method and its false-alarm reasoning).
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/run_index.hpp"
#include "hdb/harness/verdict/run_statistics.hpp"

namespace hdb {

inline constexpr int noise_model_version = 1;

// What makes two nodes the same kind for noise purposes, from meta.json node.gpus[i]: the first
// GPU's name, the GPU count, each GPU's PCIe gen_max/width_max and active NVLinks. A missing
// field is nullopt and only matches a missing field.
struct node_kind {
  struct pcie_link {
    std::optional<int> gen_max, width_max;
    auto operator<=>(const pcie_link&) const = default;
  };
  std::string gpu_name;
  int gpus = 0;
  std::vector<pcie_link> pcie;                // one per GPU, in index order
  std::vector<std::optional<int>> nvlinks;    // links_active per GPU

  auto operator<=>(const node_kind&) const = default;
};

// Throws harness_error when the meta has no node.gpus (a run without a probe has no kind).
[[nodiscard]] node_kind kind_of(const nlohmann::json& run_meta);
// "NVIDIA H200 x1, PCIe Gen5 x16, NVLinks 0": for messages.
[[nodiscard]] std::string describe(const node_kind& kind);
[[nodiscard]] nlohmann::json to_json(const node_kind& kind);
[[nodiscard]] node_kind node_kind_from_json(const nlohmann::json& value);  // throws harness_error

// One metric seen ok in >= 2 runs of the set.
struct metric_noise {
  std::string unit;
  better direction = better::higher;
  bool headline = false;
  std::size_t runs = 0;
  double centre = 0;            // geometric mean of the runs' medians
  double between_variance = 0;  // sample variance of ln(run median) between runs
  double df = 0;                // runs - 1
  // Mean over the runs of what each run's repetitions imply for the variance of its ln(median)
  // ((pi/2) s^2 / n); absent where the runs kept no samples (non-headline metrics).
  std::optional<double> within_variance;
};

// Metrics of one kind pool their spread (compare's grouping): same family, case, metric and
// headline flag; they differ in parameters (direction, size, device).
struct spread_group {
  std::string family, case_name, metric;
  bool headline = false;
  auto operator<=>(const spread_group&) const = default;
};

[[nodiscard]] spread_group spread_group_of(const metric_key& key, bool headline);

struct noise_model {
  int version = noise_model_version;
  node_kind kind;
  std::vector<std::string> members;  // run ids the model was learned from
  std::map<metric_key, metric_noise> metrics;
  // pool_run_spread over each group's metrics: the between-run variance and the inflation
  // lambda = between / within, each with its degrees of freedom.
  std::map<spread_group, run_spread> spreads;

  [[nodiscard]] const metric_noise* find(const metric_key& key) const;  // nullptr when not in the model
  // The group's pooled spread; nullptr when the model has none for it.
  [[nodiscard]] const run_spread* spread_for(const metric_key& key, bool headline) const;
};

// Learns from the runs of one kind (>= 1; metrics need >= 2 runs to enter the model, so a set of
// one run has a kind and members but no metrics). Throws harness_error for no runs.
[[nodiscard]] noise_model learn_noise_model(const std::vector<indexed_run>& runs, const node_kind& kind);

[[nodiscard]] nlohmann::json to_json(const noise_model& model);
// Throws harness_error naming what is wrong (other version, missing field).
[[nodiscard]] noise_model noise_model_from_json(const nlohmann::json& value);
[[nodiscard]] noise_model read_noise_model(const std::filesystem::path& file);  // throws harness_error naming the file
void write_noise_model(const std::filesystem::path& file, const noise_model& model);

}  // namespace hdb
