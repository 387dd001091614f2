#include "hdb/harness/plan.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "hdb/host/stats.hpp"

namespace hdb {

std::string case_cost_key(const std::string& case_name) {
  static const std::regex gpu_suffix("/gpu:[0-9,]+$");
  static const std::regex endpoint("/(src|dst):[0-9]+");
  return std::regex_replace(std::regex_replace(case_name, gpu_suffix, ""), endpoint, "/$1:*");
}

std::map<std::string, double> read_case_costs(const std::string& text) {
  std::map<std::string, double> costs;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("case") || !j["case"].is_string() || !j.contains("wall_s") || !j["wall_s"].is_number()) {
      continue;
    }
    costs[j["case"].get<std::string>()] += j["wall_s"].get<double>();
  }
  return costs;
}

cost_model learn_costs(const std::vector<nlohmann::json>& member_metas) {
  cost_model model;
  for (const auto& meta : member_metas) {
    if (!meta.contains("families") || !meta["families"].is_object()) continue;
    for (const auto& [family, entry] : meta["families"].items()) {
      if (entry.value("status", "") != "ok") continue;
      family_costs& costs = model[family];
      const double elapsed = entry.value("elapsed_s", 0.0);
      const auto cases = entry.value("cases", std::size_t{0});
      if (cases > 0 && elapsed > 0) costs.mean_case_s.push_back(elapsed / static_cast<double>(cases));
      if (!entry.contains("case_costs") || !entry["case_costs"].is_object()) continue;
      double in_cases = 0;
      std::map<std::string, double> by_key;  // one GPU's and another's case are one key: sum, then per GPU
      std::map<std::string, int> count;
      for (const auto& [name, seconds] : entry["case_costs"].items()) {
        if (!seconds.is_number()) continue;
        in_cases += seconds.get<double>();
        by_key[case_cost_key(name)] += seconds.get<double>();
        ++count[case_cost_key(name)];
      }
      for (const auto& [key, seconds] : by_key) costs.by_case[key].push_back(seconds / count[key]);
      if (elapsed > in_cases) costs.overhead_s.push_back(elapsed - in_cases);
    }
  }
  return model;
}

double harness_overhead(const std::vector<nlohmann::json>& member_metas, const plan_defaults& defaults) {
  std::vector<double> seconds;
  for (const auto& meta : member_metas) {
    if (meta.contains("harness_s") && meta["harness_s"].is_number()) seconds.push_back(meta["harness_s"].get<double>());
  }
  return seconds.empty() ? defaults.harness_s : median(std::move(seconds));
}

family_plan plan_family(const std::string& family, const std::vector<std::string>& case_names, const cost_model& costs,
                        const std::string& set_name, const plan_defaults& defaults) {
  family_plan plan{family, case_names.size(), 0, 0, ""};
  const auto it = costs.find(family);
  if (it == costs.end() || (it->second.by_case.empty() && it->second.mean_case_s.empty())) {
    plan.seconds = defaults.overhead_s + defaults.case_s * static_cast<double>(case_names.size());
    plan.basis = "documented default (" + std::to_string(defaults.case_s).substr(0, 4) + " s a case)";
    return plan;
  }
  const family_costs& f = it->second;
  if (f.by_case.empty()) {
    plan.seconds = median(std::vector<double>(f.mean_case_s)) * static_cast<double>(case_names.size());
    plan.basis = set_name + ": its runs' time per case (no case costs recorded)";
    return plan;
  }
  // A case the set never ran costs the mean of those it did: the same family's kind of work.
  double all_cases = 0;
  for (const auto& [key, values] : f.by_case) all_cases += median(std::vector<double>(values));
  const double fallback = all_cases / static_cast<double>(f.by_case.size());
  for (const auto& name : case_names) {
    const auto found = f.by_case.find(case_cost_key(name));
    if (found != f.by_case.end()) {
      plan.seconds += median(std::vector<double>(found->second));
      ++plan.cases_costed;
    } else {
      plan.seconds += fallback;
    }
  }
  plan.seconds += f.overhead_s.empty() ? defaults.overhead_s : median(std::vector<double>(f.overhead_s));
  plan.basis = set_name + ": " + std::to_string(plan.cases_costed) + " of " + std::to_string(plan.cases) +
               " cases priced by the same case";
  return plan;
}

}  // namespace hdb
