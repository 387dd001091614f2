// Which check a figure falls under and the tolerance that judges it (tolerances.hpp).
#include "hdb/harness/tolerances.hpp"

#include <algorithm>

#include "hdb/harness/installed_declarations.hpp"
#include "hdb/harness/error.hpp"

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
  if (figure.case_name != check.case_kind) return false;
  if (metric_too && figure.metric != check.metric) return false;
  return std::all_of(check.parameters.begin(), check.parameters.end(), [&](const auto& p) {
    const auto it = figure.params.find(p.first);
    return it != figure.params.end() && it->second == p.second;
  });
}

node_tolerances::node_tolerances(const json& meta, fs::path schema_dir) : meta_(&meta), schema_dir_(std::move(schema_dir)) {}

const family_declaration* node_tolerances::declared(const std::string& family) const {
  auto it = declared_.find(family);
  if (it == declared_.end()) it = declared_.emplace(family, declaration_in(*meta_, family)).first;
  return it->second ? &*it->second : nullptr;
}

const family_declaration* node_tolerances::judging(const std::string& family) const {
  auto it = judging_.find(family);
  if (it == judging_.end()) {
    std::optional<family_declaration> found;
    const auto installed = schema_dir_.empty() ? fs::path() : schema_dir_ / (family + ".json");
    if (!installed.empty() && fs::exists(installed)) {
      try {
        found = read_declaration(installed);
      } catch (const harness_error&) {
        // an unreadable installed declaration: the run's own judges
      }
    }
    if (!found) {
      if (const auto* own = declared(family)) found = *own;
    }
    it = judging_.emplace(family, std::move(found)).first;
  }
  return it->second ? &*it->second : nullptr;
}

figure_rule node_tolerances::rule_for(const metric_key& figure) const {
  figure_rule rule;
  const auto* own = declared(figure.family);
  const auto* judge = judging(figure.family);
  if (own == nullptr || judge == nullptr) return rule;
  // The last check that selects it, as the checks read in file order.
  for (const auto& c : own->checks) {
    if (check_selects(c, figure, true)) rule.check = &c;
  }
  const check_decl* same_check = nullptr;
  if (rule.check != nullptr) {
    const auto it = std::find_if(judge->checks.begin(), judge->checks.end(),
                                 [&](const check_decl& c) { return c.label == rule.check->label; });
    if (it != judge->checks.end()) same_check = &*it;
  }
  rule.tolerance = judge->tolerance(same_check, figure.metric);
  rule.host_bound = same_check != nullptr ? same_check->host_bound : rule.check != nullptr && rule.check->host_bound;
  return rule;
}

}  // namespace hdb
