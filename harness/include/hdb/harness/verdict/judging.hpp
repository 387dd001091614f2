#pragma once
// Which declaration judges a figure (docs/harness.md, `check`, "Tolerances"), the one rule for
// check, compare and fleet: the judging hdbench's installed declaration (schema/<family>.json
// beside it), so a run made before a tolerance changed is judged by today's rule; where none is
// installed for the family, the declaration the figure came with (its run's meta.json for check
// and compare, its check.json line for fleet), and the line says so. Which check selects a figure
// (its label) is the run's own declaration's.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/data/metric_key.hpp"
#include "hdb/contract/declaration.hpp"

namespace hdb {

// The family's declaration as collect stored it in meta.json; nullopt for a meta.json written
// before declarations were recorded, or one that no longer parses (then it has no checks).
[[nodiscard]] std::optional<family_declaration> declaration_in(const nlohmann::json& meta, const std::string& family);

// The check selects this figure's case (and, with metric_too, its metric): the declaration's one
// selection rule (selection_matches) on the figure's parameters.
[[nodiscard]] bool check_selects(const check_decl& check, const metric_key& figure, bool metric_too);

// The declarations installed beside the judging hdbench, read once per family.
class judging_declarations {
 public:
  explicit judging_declarations(std::filesystem::path schema_dir);
  // nullptr when the family has none installed there (or it does not read).
  [[nodiscard]] const family_declaration* installed(const std::string& family) const;

 private:
  std::filesystem::path schema_dir_;
  mutable std::map<std::string, std::optional<family_declaration>> installed_;
};

struct judged_rule {
  figure_rule rule;
  bool installed = false;  // false: `fallback` judged (no declaration of the family installed)
};

// The rule of a figure of `family` and `metric`, selected by the check labelled `check` (nullopt:
// a gating headline under no check): the installed declaration's tolerance (the check's, else the
// metric's) and host flag (the check's, else the fallback's), else `fallback` whole.
[[nodiscard]] judged_rule judging_rule(const judging_declarations& judging, const std::string& family,
                                       const std::optional<std::string>& check, const std::string& metric,
                                       const figure_rule& fallback);

// The note a line carries when its family's declaration is not installed beside hdbench.
[[nodiscard]] std::string not_installed_note(const std::string& family, std::string_view whose);

// A run's figures under the rule: the check of the run's own declaration that selects each, and
// the rule that judges it (judging_rule, the run's own declaration the fallback).
class run_judging {
 public:
  run_judging(const nlohmann::json& meta, const judging_declarations& judging);

  struct figure {
    const check_decl* check = nullptr;  // the run's own check that selects the figure, if any
    judged_rule judged;
  };
  [[nodiscard]] figure rule_for(const metric_key& key) const;
  // The run's own declaration of a family (its checks, in file order); nullptr when none.
  [[nodiscard]] const family_declaration* declared(const std::string& family) const;

 private:
  const nlohmann::json* meta_;                  // the caller's, which outlives this
  const judging_declarations* judging_;         // likewise
  mutable std::map<std::string, std::optional<family_declaration>> declared_;
};

}  // namespace hdb
