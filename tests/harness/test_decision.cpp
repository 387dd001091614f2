// The one decision (decision.hpp), the graded line's JSON (graded_line.hpp) and the judging rule
// (judging.hpp), as pure functions: each boundary probed where it lies, on both sides.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "hdb/harness/common/output_format.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/verdict/graded_line.hpp"
#include "hdb/harness/verdict/judging.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using hdb::better;
using hdb::grade;
using hdb::verdict;

TEST_CASE("decision: where a value lies against the band, by its direction", "[decision]") {
  CHECK(hdb::position_in_band(94.9, 95, 105, better::higher) == verdict::slower);
  CHECK(hdb::position_in_band(95, 95, 105, better::higher) == verdict::same);  // the edges are inside
  CHECK(hdb::position_in_band(105, 95, 105, better::higher) == verdict::same);
  CHECK(hdb::position_in_band(105.1, 95, 105, better::higher) == verdict::faster);
  CHECK(hdb::position_in_band(105.1, 95, 105, better::lower) == verdict::slower);
  CHECK(hdb::position_in_band(94.9, 95, 105, better::lower) == verdict::faster);
  CHECK(hdb::position_in_band(10, 95, 105, better::neutral) == verdict::same);  // a description, never a verdict
}

TEST_CASE("decision: a figure's grade from its value, band, centre, direction, tolerance and host flag", "[decision]") {
  const hdb::figure_band band{98, 102, 100, 12, 0.02};
  const hdb::figure_rule pinned{0.03, false}, host{0.5, true}, none{std::nullopt, false};
  // 3 % tolerance: 3.1 % worse FAILs, 2.9 % WARNs (outside the band both), exactly 3 % WARNs.
  CHECK(hdb::decide_figure(96.9, band, better::higher, pinned).result == grade::fail);
  CHECK(hdb::decide_figure(97.1, band, better::higher, pinned).result == grade::warn);
  CHECK(hdb::grade_of(verdict::slower, 0.03, pinned) == grade::warn);  // FAIL is beyond it, not at it
  CHECK(hdb::decide_figure(100.5, band, better::higher, pinned).result == grade::pass);
  CHECK(hdb::decide_figure(103, band, better::higher, pinned).result == grade::warn);  // better than the band
  CHECK(hdb::decide_figure(103, band, better::higher, host).result == grade::pass);    // a faster host
  CHECK(hdb::decide_figure(49.9, band, better::higher, host).result == grade::fail);  // below half the centre
  CHECK(hdb::decide_figure(50.1, band, better::higher, host).result == grade::warn);
  CHECK(hdb::decide_figure(97.9, band, better::higher, none).result == grade::fail);  // no tolerance: the band decides
  // Lower is better (a latency, 15 %): 15.1 % more FAILs, 14.9 % WARNs, less is better.
  const hdb::figure_rule latency{0.15, false};
  CHECK(hdb::decide_figure(115.1, band, better::lower, latency).result == grade::fail);
  CHECK(hdb::decide_figure(114.9, band, better::lower, latency).result == grade::warn);
  CHECK(hdb::decide_figure(90, band, better::lower, latency).result == grade::warn);
  const auto d = hdb::decide_figure(96.9, band, better::higher, pinned);
  CHECK(d.position == verdict::slower);
  CHECK(d.worse == hdb_test::Approx(0.031));
  CHECK(hdb::worse_by(115, 100, better::lower) == hdb_test::Approx(0.15));
  CHECK(hdb::worse_by(85, 100, better::higher) == hdb_test::Approx(0.15));
}

TEST_CASE("decision: what compare prints for the node's decision", "[decision]") {
  const hdb::figure_band band{98, 102, 100, 12, 0.02};
  const hdb::figure_rule pinned{0.03, false};
  CHECK(hdb::compare_verdict(hdb::decide_figure(96.9, band, better::higher, pinned)) == verdict::slower);
  CHECK(hdb::compare_verdict(hdb::decide_figure(97.1, band, better::higher, pinned)) == verdict::same);
  CHECK(hdb::compare_verdict(hdb::decide_figure(103, band, better::higher, pinned)) == verdict::faster);
  CHECK(hdb::compare_verdict(hdb::decide_figure(100, band, better::higher, pinned)) == verdict::same);
}

TEST_CASE("decision: the reason says what was decided, against a set or peers", "[decision]") {
  const hdb::figure_band band{98, 102, 100, 11, std::nullopt};
  const auto reason = [&](double value, hdb::band_source source, const hdb::figure_rule& rule = {0.03, false}) {
    return hdb::decision_reason(hdb::decide_figure(value, band, better::higher, rule), value, band, rule, source, "GB/s");
  };
  CHECK(reason(96, hdb::band_source::set) ==
        "slower than the set's centre 100 by 4.0 %: outside the band of healthy nodes of this kind and beyond the 3 % that "
        "matters for a node");
  CHECK(reason(97.5, hdb::band_source::set) ==
        "slower than the set's machines by 2.5 % (centre 100), outside their band but within the 3 % that matters for a node");
  CHECK(reason(100.2, hdb::band_source::set) == "within the band (+0.2 % from the set's centre 100)");
  CHECK(reason(96, hdb::band_source::peers) ==
        "slower than its peers' centre 100 by 4.0 %: outside its peers' band (11 peers) and beyond the 3 % that matters for a node");
  CHECK(reason(100.2, hdb::band_source::peers) == "within its peers' band (+0.2 % from their centre 100, 11 peers)");
  CHECK(reason(60, hdb::band_source::set, {0.5, true}).starts_with("host line: slower than the set's machines by 40.0 %"));
  CHECK(reason(97, hdb::band_source::set, {std::nullopt, false}).ends_with("no tolerance is declared for it, so the band alone decides"));
  CHECK(reason(103, hdb::band_source::set).ends_with("better than the set's band: a faster node than the set's runs, or a set to renew"));
}

TEST_CASE("decision: a ratio above the set's band asks for a re-run before it calls the node faster", "[decision]") {
  // A pipeline's efficiency over its one-stream pass read 113 % while a co-tenant slowed that pass.
  const hdb::figure_band band{97.8, 99.9, 98.9, 12, std::nullopt};
  const hdb::figure_rule rule{0.05, false};
  for (const std::string unit : {"%", "ratio"}) {
    INFO(unit);
    const auto text = hdb::decision_reason(hdb::decide_figure(113, band, better::higher, rule), 113, band, rule, hdb::band_source::set, unit);
    CHECK(text.ends_with("better than the set's band: a ratio, so perhaps its baseline pass ran slow (another tenant?): re-run it; "
                         "if it holds, a faster node than the set's runs, or a set to renew"));
  }
}

TEST_CASE("decision: the peaks-only cut-offs, at 65 % and 50 %", "[decision]") {
  CHECK(hdb::grade_by_peak(65.1) == grade::pass);
  CHECK(hdb::grade_by_peak(65) == grade::pass);
  CHECK(hdb::grade_by_peak(64.9) == grade::warn);
  CHECK(hdb::grade_by_peak(50.1) == grade::warn);
  CHECK(hdb::grade_by_peak(49.9) == grade::fail);
}

TEST_CASE("grades, formats and percents: each written once, each read back", "[decision]") {
  for (const auto g : {grade::fail, grade::warn, grade::pass, grade::not_graded}) {
    CHECK(hdb::grade_from_string(hdb::to_string(g)) == g);
  }
  CHECK_FALSE(hdb::grade_from_string("PASSED"));
  CHECK(grade::fail < grade::warn);  // the enum's order is the severity order fleet sorts by
  CHECK(grade::warn < grade::pass);
  CHECK(grade::pass < grade::not_graded);
  CHECK(hdb::parse_output_format("json", {hdb::output_format::text, hdb::output_format::json}) == hdb::output_format::json);
  CHECK_THROWS_WITH(hdb::parse_output_format("xml", {hdb::output_format::text, hdb::output_format::junit, hdb::output_format::json}),
                    "unknown --format 'xml' (text, junit or json)");
  CHECK(hdb::percent_text(0.03) == "3 %");
  CHECK(hdb::percent_text(0.0025) == "0.25 %");
  CHECK(hdb::percent_text(0.0506, hdb::percent_style::change) == "5.1 %");
  CHECK(hdb::percent_text(-0.519, hdb::percent_style::signed_change) == "-51.9 %");
  CHECK(hdb::percent_text(0.002, hdb::percent_style::signed_change) == "+0.2 %");
  CHECK(hdb::percent_text(INFINITY, hdb::percent_style::signed_change) == "+inf %");
}

TEST_CASE("graded line: every field survives its JSON, and an older check.json's line still reads", "[decision]") {
  hdb::graded_line line;
  line.result = grade::warn;
  line.basis = hdb::grade_basis::set;
  line.gpus = {1};
  line.family = "copy";
  line.figure = "pinned h2d 1 GiB";
  line.value = 53.9;
  line.unit = "GB/s";
  line.band = hdb::figure_band{55.1, 55.7, 55.4, 12, 0.006};
  line.direction = better::higher;
  line.rule = {0.03, true};
  line.key = hdb::metric_key{"copy", "bandwidth", 1, 1, {{"direction", "h2d"}, {"size_bytes", "1073741824"}}, "bandwidth"};
  line.check = "pinned h2d 1 GiB";
  line.reason = "slower";
  const auto back = hdb::graded_line_from_json(json::parse(hdb::to_json(line).dump()));
  CHECK(back.result == line.result);
  CHECK(back.basis == line.basis);
  CHECK(back.gpus == line.gpus);
  CHECK(back.family == line.family);
  CHECK(back.figure == line.figure);
  CHECK(back.value == line.value);
  CHECK(back.unit == line.unit);
  REQUIRE(back.band);
  CHECK(back.band->low == 55.1);
  CHECK(back.band->high == 55.7);
  CHECK(back.band->centre == 55.4);
  CHECK(back.band->runs == 12);
  CHECK(back.band->detectable == 0.006);
  CHECK(back.direction == better::higher);
  CHECK(back.rule.tolerance == 0.03);
  CHECK(back.rule.host_bound);
  CHECK(back.key == line.key);
  CHECK(back.check == line.check);
  CHECK(back.reason == line.reason);
  // A peaks-only line keeps its peak.
  hdb::graded_line peak;
  peak.basis = hdb::grade_basis::peak;
  peak.family = "copy";
  peak.peak = hdb::peak_ref{63.0, 1, "PCIe per direction"};
  peak.percent_of_peak = 88;
  const auto peak_back = hdb::graded_line_from_json(hdb::to_json(peak));
  REQUIRE(peak_back.peak);
  CHECK(peak_back.peak->value == 63.0);
  CHECK(peak_back.percent_of_peak == 88);
  CHECK(peak_back.basis == hdb::grade_basis::peak);
  // A version-1 line: no basis, key or check; its basis read from what it holds.
  const auto old = hdb::graded_line_from_json(json{{"grade", "PASS"},
                                                   {"gpus", {0}},
                                                   {"family", "copy"},
                                                   {"figure", "pinned h2d 1 GiB"},
                                                   {"value", 55.3},
                                                   {"expected", {{"low", 55}, {"high", 56}, {"centre", 55.4}, {"runs", 12}}},
                                                   {"tolerance", 0.03}});
  CHECK(old.basis == hdb::grade_basis::set);
  CHECK_FALSE(old.key);
  CHECK_FALSE(old.direction);
  CHECK(hdb::graded_line_from_json(json{{"family", "health"}}).basis == hdb::grade_basis::health);
}

TEST_CASE("judging: the installed declaration's tolerance and host flag, else the fallback's", "[decision]") {
  hdb_test::temp_dir dir;
  const auto schema = dir.path() / "schema";
  fs::create_directories(schema);
  fs::copy_file(fs::path(HDB_SOURCE_DIR) / "bench" / "copy" / "schema.json", schema / "copy.json");
  const hdb::judging_declarations installed(schema);
  const hdb::figure_rule frozen{0.25, false};
  // pinned h2d: copy's bandwidth tolerance; pageable h2d: its check's own, a host line.
  const auto pinned = hdb::judging_rule(installed, "copy", std::string("pinned h2d 1 GiB"), "bandwidth", frozen);
  CHECK(pinned.installed);
  CHECK(pinned.rule.tolerance == 0.03);
  CHECK_FALSE(pinned.rule.host_bound);
  const auto pageable = hdb::judging_rule(installed, "copy", std::string("pageable h2d 1 GiB"), "bandwidth", frozen);
  CHECK(pageable.rule.tolerance == 0.5);
  CHECK(pageable.rule.host_bound);
  // A family with nothing installed: the fallback whole.
  const auto other = hdb::judging_rule(installed, "made-up", std::nullopt, "bandwidth", frozen);
  CHECK_FALSE(other.installed);
  CHECK(other.rule.tolerance == 0.25);
}
