#pragma once
// The tolerance that judges each figure of a run (docs/harness.md, `check`, "Tolerances"): the
// change that matters for a node. check grades with it, and compare holds a node to it when the
// baselines are its kind's reference set, so both read it from this one place.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "hdb/harness/compare_model.hpp"
#include "hdb/host/declaration.hpp"

namespace hdb {

// The family's declaration as collect stored it in meta.json; nullopt for a meta.json written
// before declarations were recorded, or one that no longer parses (then it has no checks).
[[nodiscard]] std::optional<family_declaration> declaration_in(const nlohmann::json& meta, const std::string& family);

// The check of `family` selects this figure's case (and, with metric_too, its metric): cases of
// its kind whose parameters have the check's values (parameters it does not name are free).
[[nodiscard]] bool check_selects(const check_decl& check, const metric_key& figure, bool metric_too);

struct figure_rule {
  const check_decl* check = nullptr;  // the run's own check that selects the figure (its label), if any
  std::optional<double> tolerance;    // the check's, else its metric's
  bool host_bound = false;
};

// The declarations of a run's families and the judging hdbench's own (schema/<family>.json in
// `schema_dir`): which check a figure falls under is the run's, the tolerance the judging one's,
// so a run made before tolerances were declared is judged by today's rule.
class node_tolerances {
 public:
  node_tolerances(const nlohmann::json& meta, std::filesystem::path schema_dir);

  [[nodiscard]] figure_rule rule_for(const metric_key& figure) const;
  [[nodiscard]] std::optional<double> tolerance_of(const metric_key& figure) const { return rule_for(figure).tolerance; }
  // The run's own declaration of a family (its checks, in file order); nullptr when none.
  [[nodiscard]] const family_declaration* declared(const std::string& family) const;

 private:
  const family_declaration* judging(const std::string& family) const;

  const nlohmann::json* meta_;  // the caller's, which outlives this
  std::filesystem::path schema_dir_;
  mutable std::map<std::string, std::optional<family_declaration>> declared_, judging_;
};

}  // namespace hdb
