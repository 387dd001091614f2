#include "hdb/harness/run/plan.hpp"

#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>

#include "hdb/util/stats.hpp"

namespace hdb {

std::string case_cost_key(const std::string& case_name) {
  // What Google Benchmark appends to the name it lists and reports (family_main's fixed iteration
  // count, its repetitions, manual time); a --case-costs line carries the case's own name.
  static const std::regex benchmark_suffix("/iterations:[0-9]+(/repeats:[0-9]+)?/manual_time$");
  static const std::regex gpu_suffix("/gpu:[0-9,]+$");
  static const std::regex endpoint("/(src|dst):[0-9]+");
  const std::string name = std::regex_replace(case_name, benchmark_suffix, "");
  return std::regex_replace(std::regex_replace(name, gpu_suffix, ""), endpoint, "/$1:*");
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

namespace {

const family_costs* family_in(const cost_source& source, const std::string& family) {
  const auto it = source.model.find(family);
  return it == source.model.end() ? nullptr : &it->second;
}

std::optional<double> same_case(const family_costs* f, const std::string& key) {
  if (!f) return std::nullopt;
  const auto found = f->by_case.find(key);
  if (found == f->by_case.end()) return std::nullopt;
  return median(std::vector<double>(found->second));
}

}  // namespace

family_plan plan_family(const std::string& family, const std::vector<std::string>& case_names, const cost_source& costs,
                        const cost_source& wider, const plan_defaults& defaults) {
  family_plan plan{family, case_names.size(), 0, 0, 0, "", {}};
  const family_costs* own = family_in(costs, family);
  if (!own || (own->by_case.empty() && own->mean_case_s.empty())) {
    plan.seconds = defaults.overhead_s + defaults.case_s * static_cast<double>(case_names.size());
    plan.basis = "documented default (" + std::to_string(defaults.case_s).substr(0, 4) + " s a case)";
    return plan;
  }
  if (own->by_case.empty()) {
    plan.seconds = median(std::vector<double>(own->mean_case_s)) * static_cast<double>(case_names.size());
    plan.basis = costs.name + ": its runs' time per case (no case costs recorded)";
    return plan;
  }
  // A case the set never ran: the wider reference's mean case holds the pair and multi-rank work
  // a one-GPU set cannot have; without one, the set's own mean case (the same family's kind of work).
  const family_costs* other = family_in(wider, family);
  std::optional<double> wider_mean;
  if (other && !other->mean_case_s.empty()) wider_mean = median(std::vector<double>(other->mean_case_s));
  double all_cases = 0;
  for (const auto& [key, values] : own->by_case) all_cases += median(std::vector<double>(values));
  const double own_mean = all_cases / static_cast<double>(own->by_case.size());
  for (const auto& name : case_names) {
    const std::string key = case_cost_key(name);
    auto seconds = same_case(own, key);
    if (!seconds) seconds = same_case(other, key);
    if (seconds) {
      ++plan.cases_costed;
    } else if (wider_mean) {
      seconds = wider_mean;
      ++plan.cases_wider;
    } else {
      seconds = own_mean;
    }
    plan.seconds += *seconds;
    plan.prices[name] = *seconds;
  }
  plan.seconds += own->overhead_s.empty() ? defaults.overhead_s : median(std::vector<double>(own->overhead_s));
  plan.basis = costs.name + ": " + std::to_string(plan.cases_costed) + " of " + std::to_string(plan.cases) +
               " cases priced by the same case";
  if (plan.cases_wider > 0) {
    plan.basis += ", " + std::to_string(plan.cases_wider) + " at " + wider.name + "'s mean case";
  }
  return plan;
}

std::optional<double> remaining_seconds(const family_plan& plan, const std::set<std::string>& finished, double elapsed_s) {
  if (finished.empty()) return std::nullopt;
  if (plan.prices.empty()) {
    if (finished.size() > plan.cases) return std::nullopt;
    return elapsed_s / static_cast<double>(finished.size()) * static_cast<double>(plan.cases - finished.size());
  }
  double left = 0;
  for (const auto& [name, seconds] : plan.prices) {
    if (!finished.contains(name)) left += seconds;
  }
  return left;
}

}  // namespace hdb
