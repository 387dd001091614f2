// The helpers every family's report rules share (family_rules.hpp): the lookup of one case's
// metric among the ok medians, and the rules of a family that reads only those medians.
#include <ranges>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "hdb/harness/report/family_rules.hpp"
#include "report_rows.hpp"

namespace {

using hdb_test::median_row;

// Rows of one case's metric and the rows around it that the lookup must pass over.
std::vector<hdb::result_row> mixed_rows() {
  std::vector<hdb::result_row> rows;
  rows.push_back(median_row("standin", "triad", {{"lanes", "1"}}, "rate", "GB/s", 10));
  rows.push_back(median_row("standin", "triad", {{"lanes", "1"}}, "time", "us", 99));  // another metric
  rows.push_back(median_row("standin", "copy", {{"lanes", "1"}}, "rate", "GB/s", 98));  // another case
  auto failed = median_row("standin", "triad", {{"lanes", "3"}}, "rate", "GB/s", 97);
  failed.status = hdb::row_status::failed;
  rows.push_back(failed);
  auto sample = median_row("standin", "triad", {{"lanes", "4"}}, "rate", "GB/s", 96);
  sample.stat = hdb::statistic::sample;
  sample.sample_index = 0;
  rows.push_back(sample);
  auto no_value = median_row("standin", "triad", {{"lanes", "5"}}, "rate", "GB/s", 0);
  no_value.value.reset();
  rows.push_back(no_value);
  rows.push_back(median_row("standin", "triad", {{"lanes", "2"}}, "rate", "GB/s", 20));
  return rows;
}

}  // namespace

TEST_CASE("medians_of: the ok medians of one case's metric, in the order of the rows", "[family_rules]") {
  const auto rows = mixed_rows();
  const hdb::median_index index = hdb::ok_medians(rows);
  std::vector<const hdb::result_row*> found;
  std::vector<double> values;
  for (const auto& [row, value] : hdb::medians_of(index, "triad", "rate")) {
    found.push_back(row);
    values.push_back(value);
  }
  CHECK(found == std::vector<const hdb::result_row*>{&rows[0], &rows[6]});
  CHECK(values == std::vector<double>{10, 20});
  CHECK(hdb::medians_of(index, "triad", "absent").empty());
  CHECK(hdb::medians_of(index, "absent", "rate").empty());
}

TEST_CASE("rules_from_medians: every check in order on the ok medians, the section on them too", "[family_rules]") {
  const auto rows = mixed_rows();
  const auto count = [](const hdb::median_index& medians) {
    return std::to_string(std::ranges::distance(hdb::medians_of(medians, "triad", "rate")));
  };
  const hdb::family_rules rules = hdb::rules_from_medians(
      "standin",
      {[&](const hdb::median_index& medians, std::vector<std::string>& out) { out.push_back("first " + count(medians)); },
       [&](const hdb::median_index& medians, std::vector<std::string>& out) { out.push_back("second " + count(medians)); }},
      [&](const hdb::median_index& medians) { return "section " + count(medians); }, "the footnote");
  CHECK(rules.family == "standin");
  CHECK(rules.footnote == "the footnote");
  std::vector<std::string> out;
  rules.anomalies(rows, nlohmann::json::object(), out);
  CHECK(out == std::vector<std::string>{"first 2", "second 2"});
  CHECK(rules.section(rows, nlohmann::json::object()) == "section 2");
}
