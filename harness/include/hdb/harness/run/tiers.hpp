#pragma once
// The tiered default of an N-GPU node (docs/harness.md, "Tiers"): GPUs fall into classes (same
// model, PCIe link, NVLink count and CPU placement), ordered pairs into link classes (their GPUs'
// classes and the link between them). The lowest-numbered GPU and pair of each class get every
// case; the others their tier points (bench/family_main/include/hdb/sweep.hpp). Read from the node
// fingerprint (meta.json "node"), so the same rule serves a run, its plan and its plots.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hdb {

struct gpu_class {
  std::string key;  // "NVIDIA H200 · PCIe Gen5 x16 · NVLinks 18 · 56 CPUs"
  std::vector<int> gpus;
  int representative = 0;
};

struct pair_class {
  std::string key;  // "NVIDIA H200 -> NVIDIA H200 · NVLink x18 via nvswitch · peer access"
  std::vector<std::pair<int, int>> pairs;
  std::pair<int, int> representative;
};

struct node_tiers {
  std::vector<gpu_class> classes;
  std::vector<pair_class> pair_classes;
  std::vector<int> gpus;  // every GPU of the node, ascending
};

// From meta.json's "node" (gpus[], topology.pairs[]); facts a source did not answer make their
// own class value ("PCIe unknown"), never a guess.
[[nodiscard]] node_tiers tiers_of(const nlohmann::json& node);

// meta.json "tiers": {"mode", "classes": [{key, gpus, representative}], "sweep_devices",
// "pair_classes": [{key, pairs, representative}], "sweep_pairs"}.
[[nodiscard]] nlohmann::json to_json(const node_tiers& tiers, bool full);

// The family flags of a tiered run: none on one GPU (every case is its class's), else
// --sweep-devices and --sweep-pairs naming the representatives.
[[nodiscard]] std::vector<std::string> sweep_flags(const node_tiers& tiers);

// A node of `gpus` copies of `node`'s first GPU, for planning a bigger node: every ordered pair
// joined like `pair_link` (a topology pair's "link" object; null: unknown), and with an NVLink
// pair link each GPU has that many NVLinks active.
[[nodiscard]] nlohmann::json assumed_node(const nlohmann::json& node, int gpus, const nlohmann::json& pair_link);

}  // namespace hdb
