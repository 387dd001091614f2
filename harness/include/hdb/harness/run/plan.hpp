#pragma once
// `hdbench run --plan` (docs/harness.md, "The plan"): each family's cases on this node (or an
// assumed one) and the time they will take, before anything is measured. A case costs what the
// same case (GPU and pair indices aside) cost in the runs of the matching reference set. A case
// none of them ran (a pair or multi-rank case, when that set is of one GPU) costs what the same
// case cost in a wider reference of the same GPU (one with pairs), else that reference's mean
// case of the family, else the matching set's mean case. A family with no recorded case costs
// costs its recorded elapsed time spread evenly over its cases; with no set at all, the
// documented per-case default (plan_defaults). Each family adds its process overhead (start-up,
// fingerprint, warm-up: its elapsed time less its cases' in the set, else the default), and the
// run the harness's own work after the families.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hdb {

// "copy/bandwidth/pinned/size:1024/gpu:3" -> "copy/bandwidth/pinned/size:1024"; "src:2"/"dst:5"
// -> "src:*"/"dst:*": one GPU's or pair's case is another's. The name as a binary lists it on a
// node, "…/gpu:3/iterations:1/repeats:10/manual_time", has the same key.
[[nodiscard]] std::string case_cost_key(const std::string& case_name);

// A --case-costs file (JSON lines {"case", "wall_s"}, one per repetition): seconds per case.
// Unreadable lines are skipped: a killed binary may leave half a line.
[[nodiscard]] std::map<std::string, double> read_case_costs(const std::string& text);

// What the reference set's members (their meta.json "families") say cases cost.
struct family_costs {
  std::map<std::string, std::vector<double>> by_case;  // case_cost_key -> one per member
  std::vector<double> overhead_s;                      // elapsed less the cases', per member with costs
  std::vector<double> mean_case_s;                     // elapsed / cases, per member
};
using cost_model = std::map<std::string, family_costs>;  // family -> costs
[[nodiscard]] cost_model learn_costs(const std::vector<nlohmann::json>& member_metas);

// Where a plan's prices come from: a reference's name as printed ("h200 (8 runs)") and its model.
struct cost_source {
  std::string name;
  cost_model model;
};

// Documented in docs/harness.md ("The plan"): an H200 run's families cost 0.02-0.5 s a case
// (p2p and all-reduce loopback cases the least, copy and overlap the most), a family process
// 1-3 s to start, and collecting, checking, plotting and the report about 20 s.
struct plan_defaults {
  double case_s = 0.25;
  double overhead_s = 3.0;
  double harness_s = 20.0;
};

// What follows the families (meta.json "harness_s": collect, check, plots, report): the median
// over the members that recorded it, else the default.
[[nodiscard]] double harness_overhead(const std::vector<nlohmann::json>& member_metas, const plan_defaults& defaults);

struct family_plan {
  std::string family;
  std::size_t cases = 0;
  double seconds = 0;
  std::size_t cases_costed = 0;  // cases priced from the same case (in either source)
  std::size_t cases_wider = 0;   // cases priced at the wider reference's mean case
  std::string basis;             // "h200 (8 runs): 281 of 281 cases priced by the same case" | "documented default"
  // Each listed case's price by its name, where the reference recorded case costs for the family;
  // empty where it did not (a per-case mean or the documented default prices no case by itself).
  std::map<std::string, double> prices;
};

// `wider`: the reference with pairs that prices what `costs` never ran (empty name: none).
[[nodiscard]] family_plan plan_family(const std::string& family, const std::vector<std::string>& case_names,
                                      const cost_source& costs, const cost_source& wider, const plan_defaults& defaults);

// What the progress line says is left of a family after `finished` (the names of its cases done,
// as listed) in `elapsed_s`: the plan's prices of the cases not finished; where the plan has no
// prices, the run's own pace, elapsed / finished x the cases left, as one mean case (a family's
// cases differ a hundredfold: the first copy cases, the largest sizes, cost the most). nullopt
// before the first case finished.
[[nodiscard]] std::optional<double> remaining_seconds(const family_plan& plan, const std::set<std::string>& finished,
                                                      double elapsed_s);

}  // namespace hdb
