#include "hdb/harness/verdict/graded_line.hpp"

#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/common/json_fields.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <utility>

namespace hdb {
namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<grade_basis, std::string_view>, 6> basis_names{{{grade_basis::set, "set"},
                                                                              {grade_basis::peers, "peers"},
                                                                              {grade_basis::peak, "peak"},
                                                                              {grade_basis::none, "none"},
                                                                              {grade_basis::health, "health"},
                                                                              {grade_basis::node, "node"}}};

constexpr std::array<std::pair<confirmation, std::string_view>, 5> confirmation_names{{{confirmation::none, "none"},
                                                                                      {confirmation::unconfirmed, "unconfirmed"},
                                                                                      {confirmation::confirmed, "confirmed"},
                                                                                      {confirmation::transient, "transient"},
                                                                                      {confirmation::unsteady, "unsteady"}}};

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string text_at(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string_view to_string(grade_basis basis) {
  for (const auto& [b, name] : basis_names) {
    if (b == basis) return name;
  }
  return "?";
}

std::optional<grade_basis> grade_basis_from_string(std::string_view text) {
  for (const auto& [b, name] : basis_names) {
    if (name == text) return b;
  }
  return std::nullopt;
}

graded_line health_line(grade result, std::vector<int> gpus, std::string item, std::string reading, std::string reason) {
  graded_line line;
  line.result = result;
  line.gpus = std::move(gpus);
  line.family = "health";
  line.figure = std::move(item);
  line.basis = grade_basis::health;
  line.reading = std::move(reading);
  line.reason = std::move(reason);
  return line;
}

void weigh_tries(graded_line& line) {
  line.confirmed = confirmation::none;
  if (line.attempts.size() < 2) {
    line.attempts.clear();
    if (line.result == grade::fail) {
      line.confirmed = confirmation::unconfirmed;
      line.reason += "; not confirmed: measured once (hdbench run measures a FAIL again before it stands; check cannot)";
    }
    return;
  }
  line.attempts.back().value = line.value;
  line.attempts.back().result = line.result;
  // Each earlier try by what graded the last: the band, or without a set the link's peak.
  const auto grade_of = [&](double value) {
    return line.band ? decide_figure(value, *line.band, line.direction.value_or(better::higher), line.rule).result
                     : grade_by_peak(percent_of_peak(value, *line.peak));
  };
  for (auto it = line.attempts.begin(); it + 1 != line.attempts.end(); ++it) {
    it->result = it->value ? grade_of(*it->value) : grade::fail;
  }
  const auto reading = [&](const attempt_reading& a) { return a.value ? format_figure(*a.value) + " " + line.unit : "failed"; };
  std::string tries;
  for (const auto& a : line.attempts) tries += (tries.empty() ? "" : ", ") + reading(a);
  const auto failed = [](const attempt_reading& a) { return a.result == grade::fail; };
  if (std::all_of(line.attempts.begin(), line.attempts.end(), failed)) {
    line.confirmed = confirmation::confirmed;
    line.reason += "; confirmed: failed on every try (" + tries + ")";
  } else if (line.result == grade::fail) {
    line.confirmed = confirmation::unsteady;
    line.result = grade::warn;
    line.reason = "failed on its last try but not on every one (" + tries + "): the node was not steady; re-run it; " + line.reason;
  } else if (std::any_of(line.attempts.begin(), line.attempts.end(), failed)) {
    line.confirmed = confirmation::transient;
    line.result = grade::warn;
    line.reason = "first try " + reading(line.attempts.front()) + ", confirmed " + reading(line.attempts.back()) +
                  ": a transient, not the node (tries: " + tries + "); " + line.reason;
  }
}

std::string_view to_string(confirmation value) {
  for (const auto& [c, name] : confirmation_names) {
    if (c == value) return name;
  }
  return "?";
}

std::optional<confirmation> confirmation_from_string(std::string_view text) {
  for (const auto& [c, name] : confirmation_names) {
    if (name == text) return c;
  }
  return std::nullopt;
}

json to_json(const graded_line& line) {
  json expected = nullptr;
  if (const auto& band = line.band) {
    expected = {{"low", band->low}, {"high", band->high}, {"centre", band->centre}, {"runs", band->runs},
                {"detectable", optional_number(band->detectable)}};
  } else if (const auto& peak = line.peak) {
    expected = {{"peak", peak->value}, {"basis", peak->basis}, {"traffic_factor", peak->traffic_factor},
                {"percent_of_peak", optional_number(line.percent_of_peak)}};
  }
  json attempts = json::array();
  for (const auto& a : line.attempts) {
    attempts.push_back({{"attempt", a.attempt}, {"value", optional_number(a.value)}, {"grade", to_string(a.result)}});
  }
  json counters = json::array();
  for (const auto& c : line.counters) counters.push_back({{"name", c.name}, {"labels", c.labels}, {"value", c.value}});
  return {{"grade", to_string(line.result)},
          {"basis", to_string(line.basis)},
          {"gpus", line.gpus},
          {"family", line.family},
          {"figure", line.figure},
          {"value", optional_number(line.value)},
          {"unit", line.unit},
          {"reading", line.reading},
          {"expected", std::move(expected)},
          {"better", line.direction ? json(to_string(*line.direction)) : json(nullptr)},
          {"tolerance", optional_number(line.rule.tolerance)},
          {"host_bound", line.rule.host_bound},
          {"key", line.key ? to_json(*line.key) : json(nullptr)},
          {"check", line.check ? json(*line.check) : json(nullptr)},
          {"reason", line.reason},
          {"confirmation", to_string(line.confirmed)},
          {"attempts", std::move(attempts)},
          {"counters", std::move(counters)}};
}

graded_line graded_line_from_json(const json& value) {
  graded_line line;
  if (!value.is_object()) return line;
  line.result = grade_from_string(text_at(value, "grade")).value_or(grade::not_graded);
  if (const auto gpus = value.find("gpus"); gpus != value.end() && gpus->is_array()) {
    for (const auto& g : *gpus) {
      if (g.is_number_integer()) line.gpus.push_back(g.get<int>());
    }
  }
  line.family = text_at(value, "family");
  line.figure = text_at(value, "figure");
  line.value = number_field(value, "value");
  line.unit = text_at(value, "unit");
  line.reading = text_at(value, "reading");
  line.reason = text_at(value, "reason");
  line.rule.tolerance = number_field(value, "tolerance");
  if (const auto host = value.find("host_bound"); host != value.end() && host->is_boolean()) line.rule.host_bound = host->get<bool>();
  if (const auto b = text_at(value, "better"); !b.empty()) {
    try {
      line.direction = parse_better(b);
    } catch (const std::exception&) {
      // a word this hdbench does not know: no direction, as a line that has none
    }
  }
  if (const auto key = value.find("key"); key != value.end()) line.key = metric_key_from_json(*key);
  if (const auto check = text_at(value, "check"); !check.empty()) line.check = check;
  line.confirmed = confirmation_from_string(text_at(value, "confirmation")).value_or(confirmation::none);
  if (const auto attempts = value.find("attempts"); attempts != value.end() && attempts->is_array()) {
    for (const auto& a : *attempts) {
      if (!a.is_object()) continue;
      const auto attempt = number_field(a, "attempt");
      line.attempts.push_back({attempt ? static_cast<int>(*attempt) : 1, number_field(a, "value"),
                               grade_from_string(text_at(a, "grade")).value_or(grade::not_graded)});
    }
  }
  if (const auto counters = value.find("counters"); counters != value.end() && counters->is_array()) {
    for (const auto& c : *counters) {
      const auto number = c.is_object() ? number_field(c, "value") : std::nullopt;
      if (!number || text_at(c, "name").empty()) continue;
      health_counter counter{text_at(c, "name"), {}, *number};
      if (const auto labels = c.find("labels"); labels != c.end() && labels->is_object()) {
        for (const auto& [label, text] : labels->items()) {
          if (text.is_string()) counter.labels[label] = text.get<std::string>();
        }
      }
      line.counters.push_back(std::move(counter));
    }
  }
  if (const auto expected = value.find("expected"); expected != value.end() && expected->is_object()) {
    const auto low = number_field(*expected, "low"), high = number_field(*expected, "high"), centre = number_field(*expected, "centre");
    if (low && high && centre) {
      const auto runs = number_field(*expected, "runs");
      line.band = figure_band{*low, *high, *centre, runs && *runs > 0 ? static_cast<std::size_t>(*runs) : 0,
                              number_field(*expected, "detectable")};
    } else if (const auto peak = number_field(*expected, "peak")) {
      line.peak = peak_ref{*peak, number_field(*expected, "traffic_factor").value_or(1), text_at(*expected, "basis")};
      line.percent_of_peak = number_field(*expected, "percent_of_peak");
    }
  }
  const auto basis = grade_basis_from_string(text_at(value, "basis"));
  line.basis = basis ? *basis
               : line.family == "health" ? grade_basis::health
               : line.band               ? grade_basis::set
               : line.peak               ? grade_basis::peak
                                         : grade_basis::none;
  return line;
}

}  // namespace hdb
