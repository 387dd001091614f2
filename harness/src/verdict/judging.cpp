#include "hdb/harness/verdict/judging.hpp"

#include <algorithm>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/data/installed_declarations.hpp"

namespace hdb {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<family_declaration> declaration_in(const json& meta, const std::string& family) {
  const auto families = meta.find("families");
  if (families == meta.end() || !families->is_object()) return std::nullopt;
  const auto entry = families->find(family);
  if (entry == families->end() || !entry->is_object()) return std::nullopt;
  const auto schema = entry->find("schema");
  if (schema == entry->end() || !schema->is_object()) return std::nullopt;
  try {
    return parse_declaration(nlohmann::ordered_json(*schema));
  } catch (const declaration_error&) {
    return std::nullopt;
  }
}

bool check_selects(const check_decl& check, const metric_key& figure, bool metric_too) {
  if (metric_too && figure.metric != check.metric) return false;
  return selection_matches(check.case_kind, check.parameters, figure.case_name, [&](std::string_view name) -> const std::string* {
    const auto it = figure.params.find(std::string(name));
    return it == figure.params.end() ? nullptr : &it->second;
  });
}

judging_declarations::judging_declarations(fs::path schema_dir) : schema_dir_(std::move(schema_dir)) {}

const family_declaration* judging_declarations::installed(const std::string& family) const {
  auto it = installed_.find(family);
  if (it == installed_.end()) {
    std::optional<family_declaration> found;
    const auto file = schema_dir_.empty() ? fs::path() : schema_dir_ / (family + ".json");
    if (!file.empty() && fs::exists(file)) {
      try {
        found = read_declaration(file);
      } catch (const harness_error&) {
        // unreadable beside hdbench: judged as if none were installed
      }
    }
    it = installed_.emplace(family, std::move(found)).first;
  }
  return it->second ? &*it->second : nullptr;
}

judged_rule judging_rule(const judging_declarations& judging, const std::string& family, const std::optional<std::string>& check,
                         const std::string& metric, const figure_rule& fallback) {
  const auto* declaration = judging.installed(family);
  if (declaration == nullptr) return {fallback, false};
  const check_decl* same_check = nullptr;
  if (check) {
    const auto it = std::find_if(declaration->checks.begin(), declaration->checks.end(),
                                 [&](const check_decl& c) { return c.label == *check; });
    if (it != declaration->checks.end()) same_check = &*it;
  }
  return {{declaration->tolerance(same_check, metric), same_check != nullptr ? same_check->host_bound : fallback.host_bound}, true};
}

std::string not_installed_note(const std::string& family, std::string_view whose) {
  return "no schema/" + family + ".json beside this hdbench: judged by the tolerance " + std::string(whose);
}

run_judging::run_judging(const json& meta, const judging_declarations& judging) : meta_(&meta), judging_(&judging) {}

const family_declaration* run_judging::declared(const std::string& family) const {
  auto it = declared_.find(family);
  if (it == declared_.end()) it = declared_.emplace(family, declaration_in(*meta_, family)).first;
  return it->second ? &*it->second : nullptr;
}

run_judging::figure run_judging::rule_for(const metric_key& key) const {
  figure result;
  const auto* own = declared(key.family);
  if (own == nullptr && judging_->installed(key.family) == nullptr) return result;
  // The last check that selects it, as the checks read in file order.
  if (own != nullptr) {
    for (const auto& c : own->checks) {
      if (check_selects(c, key, true)) result.check = &c;
    }
  }
  const figure_rule fallback =
      own == nullptr ? figure_rule{} : figure_rule{own->tolerance(result.check, key.metric), result.check != nullptr && result.check->host_bound};
  const auto check_label = result.check != nullptr ? std::optional<std::string>(result.check->label) : std::nullopt;
  result.judged = judging_rule(*judging_, key.family, check_label, key.metric, fallback);
  return result;
}

}  // namespace hdb
