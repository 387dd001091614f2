// Reference sets and the noise model: synthetic sets of runs (meta.json with a node kind,
// results.csv written with hdb::write_results_csv) with fixed level shifts between runs; a planted
// 5 % change, an unchanged run, one baseline plus the model, a kind mismatch, the compact copy,
// detectable as the true edge of the rule, and the band check reads.
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "hdb/harness/cli.hpp"
#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/util/stats.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;

// Two tight bandwidths and two device latencies (headlines), and a non-headline pageable
// bandwidth whose repetitions a compact copy drops.
struct synthetic_metric {
  std::string case_name, direction, host_kind, metric, unit;
  hdb::better better;
  bool headline;
  double level, within;  // median of an unshifted run; relative SD of its repetitions
};

const std::array<synthetic_metric, 5> metrics = {{
    {"bandwidth", "h2d", "pinned", "bandwidth", "GB/s", hdb::better::higher, true, 55.0, 0.001},
    {"bandwidth", "d2h", "pinned", "bandwidth", "GB/s", hdb::better::higher, true, 55.3, 0.001},
    {"latency", "h2d", "pinned", "latency", "us", hdb::better::lower, true, 2.2, 0.01},
    {"latency", "d2h", "pinned", "latency", "us", hdb::better::lower, true, 1.6, 0.01},
    {"bandwidth", "h2d", "pageable", "bandwidth", "GB/s", hdb::better::higher, false, 20.0, 0.02},
}};
using shifts = std::array<double, metrics.size()>;

// Level shifts between fresh machines of the size the issue measured (bandwidth ~0.2-0.3 %,
// device latency ~0.4 %); the last one is an extra run outside the set.
constexpr std::array<shifts, 7> run_shifts = {{
    {+0.003, -0.001, +0.005, -0.004, +0.01},
    {-0.002, +0.003, -0.006, +0.002, -0.02},
    {+0.001, -0.003, +0.002, +0.006, +0.00},
    {-0.004, +0.002, +0.000, -0.005, +0.02},
    {+0.002, +0.000, -0.003, +0.001, -0.01},
    {+0.000, -0.001, +0.004, +0.000, +0.01},
    {-0.001, +0.002, -0.002, +0.003, +0.00},
}};
constexpr std::array<double, 10> pattern = {0.3, -1.1, 0.8, -0.4, 1.5, -0.9, 0.1, 1.0, -1.4, 0.1};

struct run_spec {
  std::string run_id;
  shifts shift{};
  double headline_worse = 0;  // every headline this much worse in its direction
  int pcie_gen = 5;
};

std::vector<hdb::result_row> make_rows(const run_spec& spec) {
  std::vector<hdb::result_row> rows;
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    const auto& metric = metrics[m];
    double level = metric.level * (1 + spec.shift[m]);
    if (metric.headline) level *= metric.better == hdb::better::higher ? 1 - spec.headline_worse : 1 + spec.headline_worse;
    hdb::result_row row;
    row.run_id = spec.run_id;
    row.family = "copy";
    row.case_name = metric.case_name;
    row.params = {{"direction", metric.direction}, {"host_kind", metric.host_kind}};
    row.device = 0;
    row.gpus = 1;
    row.gpu_uuid = "GPU-" + spec.run_id;  // every member its own machine, as a real set
    row.metric = metric.metric;
    row.unit = metric.unit;
    row.better_direction = metric.better;
    row.headline = metric.headline;
    std::vector<double> samples;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      samples.push_back(level * (1 + metric.within * pattern[(i + m) % pattern.size()]));
    }
    hdb_test::append_samples_and_median(rows, row, samples);
  }
  hdb::result_row skipped;
  skipped.run_id = spec.run_id;
  skipped.family = "copy";
  skipped.case_name = "bandwidth";
  skipped.params = {{"direction", "h2d"}, {"host_kind", "mapped"}};
  skipped.device = 0;
  skipped.gpus = 1;
  skipped.status = hdb::row_status::skipped;
  skipped.reason = "not supported here";
  rows.push_back(skipped);
  return rows;
}

// The declaration check reads the headlines' tolerances from: 3 % for a bandwidth, 15 % for a latency.
const char* const copy_declaration = R"({"family": "copy",
  "parameters": {"direction": {"type": "text"}, "host_kind": {"type": "text"}},
  "metrics": {"bandwidth": {"unit": "GB/s", "better": "higher", "tolerance": 0.03},
              "latency": {"unit": "us", "better": "lower", "tolerance": 0.15}},
  "cases": {"bandwidth": {"parameters": ["direction", "host_kind"], "metrics": ["bandwidth"], "headlines": ["bandwidth"]},
            "latency": {"parameters": ["direction", "host_kind"], "metrics": ["latency"], "headlines": ["latency"]}}})";

nlohmann::json meta_of(const run_spec& spec) {
  return {{"run_id", spec.run_id},
          {"node",
           {{"driver_release", "580"},
            {"gpus", nlohmann::json::array({{{"name", "NVIDIA H200"},
                                             {"pcie", {{"gen_max", spec.pcie_gen * 1.0}, {"width_max", 16.0}}},
                                             {"nvlink", {{"links_active", 0}}}}})}}},
          {"families", {{"copy", {{"status", "ok"}, {"schema", nlohmann::json::parse(copy_declaration)}}}}}};
}

fs::path write_run(const fs::path& base, const run_spec& spec) {
  const auto dir = base / spec.run_id;
  fs::create_directories(dir);
  hdb::atomic_write_file(dir / "results.csv", hdb::write_results_csv(make_rows(spec), {"direction", "host_kind"}));
  hdb::write_json_file(dir / "meta.json", meta_of(spec));
  return dir;
}

std::string member_id(std::size_t i) { return "2026120" + std::to_string(i) + "T000000Z-node" + std::to_string(i); }

// runs/ of six members, plus the seventh shift as an extra run beside it.
struct synthetic_set {
  hdb_test::temp_dir tmp;
  fs::path set_dir = tmp.path() / "h200";
  fs::path extra;
  std::vector<fs::path> members;

  synthetic_set() {
    for (std::size_t i = 0; i < 6; ++i) {
      members.push_back(write_run(tmp.path() / "incoming", {member_id(i), run_shifts[i]}));
      (void)hdb::add_to_reference_set(set_dir, members.back(), false);
    }
    extra = write_run(tmp.path() / "incoming", {"20261209T000000Z-extra", run_shifts[6]});
  }
};

// The verdict of the table line that contains both needles.
std::string verdict_of(const std::string& output, const std::string& needle, const std::string& other) {
  std::size_t start = 0;
  while (start < output.size()) {
    const auto end = output.find('\n', start);
    const auto line = output.substr(start, end - start);
    if (hdb_test::contains(line, needle) && hdb_test::contains(line, other) &&
        (line.starts_with("SLOWER") || line.starts_with("SAME") || line.starts_with("FASTER"))) {
      return line.substr(0, line.find(' '));
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

}  // namespace

TEST_CASE("reference add: compact members, a representative, noise.json per metric", "[reference]") {
  const synthetic_set set;
  CHECK(hdb::is_reference_set(set.set_dir));
  CHECK(fs::exists(set.set_dir / "results.csv"));  // the first run became the representative
  CHECK(fs::exists(set.set_dir / "meta.json"));
  const auto loaded = hdb::load_reference_set(set.set_dir);
  REQUIRE(loaded.runs.size() == 6);
  CHECK(loaded.model.members.size() == 6);
  CHECK(loaded.model.kind.gpu_name == "NVIDIA H200");
  REQUIRE(loaded.model.kind.pcie.size() == 1);
  CHECK(loaded.model.kind.pcie[0].gen_max == 5);

  SECTION("the compact copy keeps medians, the headlines' repetitions and skipped rows; drops other repetitions") {
    const auto& rows = loaded.runs.front().rows;
    std::size_t headline_samples = 0, other_samples = 0, medians = 0, skipped = 0;
    for (const auto& row : rows) {
      if (row.status == hdb::row_status::skipped) ++skipped;
      else if (row.stat == hdb::statistic::median) ++medians;
      else if (row.stat == hdb::statistic::sample) (row.headline ? headline_samples : other_samples)++;
    }
    CHECK(headline_samples == 40);
    CHECK(other_samples == 0);
    CHECK(medians == 5);
    CHECK(skipped == 1);
  }
  SECTION("the model: geometric-mean centre, between-run variance of ln(median), within from the repetitions") {
    hdb::metric_key key{"copy", "bandwidth", 0, 1, {{"direction", "h2d"}, {"host_kind", "pinned"}}, "bandwidth"};
    const auto* noise = loaded.model.find(key);
    REQUIRE(noise);
    CHECK(noise->runs == 6);
    CHECK(noise->df == 5);
    std::vector<double> logs;
    for (std::size_t i = 0; i < 6; ++i) logs.push_back(std::log(55.0 * (1 + run_shifts[i][0])));
    double mean = 0;
    for (const double l : logs) mean += l / 6;
    double squares = 0;
    for (const double l : logs) squares += (l - mean) * (l - mean);
    // The medians of the repetitions, not the levels: the pattern's median offsets them alike.
    CHECK(noise->between_variance == hdb_test::Approx(squares / 5).epsilon(0.02));
    REQUIRE(noise->within_variance);
    CHECK(*noise->within_variance > 0);
    auto pageable = key;
    pageable.params["host_kind"] = "pageable";
    REQUIRE(loaded.model.find(pageable));
    CHECK_FALSE(loaded.model.find(pageable)->within_variance);  // its repetitions were not kept
    const auto* spread = loaded.model.spread_for(key, true);
    REQUIRE(spread);
    CHECK(spread->df == 10);  // h2d and d2h pinned, 5 each
    CHECK(spread->inflation > 1);
  }
  SECTION("noise.json reads back as it was written") {
    const auto again = hdb::noise_model_from_json(hdb::to_json(loaded.model));
    CHECK(again.kind == loaded.model.kind);
    CHECK(again.members == loaded.model.members);
    REQUIRE(again.metrics.size() == loaded.model.metrics.size());
    for (const auto& [key, noise] : loaded.model.metrics) {
      const auto* back = again.find(key);
      REQUIRE(back);
      CHECK(back->centre == noise.centre);
      CHECK(back->between_variance == noise.between_variance);
      CHECK(back->within_variance == noise.within_variance);
    }
    CHECK(again.spreads.size() == loaded.model.spreads.size());
    auto other_version = hdb::to_json(loaded.model);
    other_version["noise_model_version"] = 99;
    CHECK_THROWS_AS(hdb::noise_model_from_json(other_version), hdb::harness_error);
  }
  SECTION("a run of another kind is refused, and so is a run already in the set") {
    const hdb_test::temp_dir other;
    const auto gen4 = write_run(other.path(), {"20261210T000000Z-gen4", run_shifts[6], 0, 4});
    CHECK_THROWS_WITH(hdb::add_to_reference_set(set.set_dir, gen4, false),
                      hdb_test::contains_text("refused: 20261210T000000Z-gen4 is NVIDIA H200 x1, PCIe Gen4 x16"));
    CHECK_FALSE(fs::exists(set.set_dir / "runs" / "20261210T000000Z-gen4"));
    CHECK_THROWS_WITH(hdb::add_to_reference_set(set.set_dir, set.members.front(), false),
                      hdb_test::contains_text("already a member"));
  }
}

TEST_CASE("compare against a set: unchanged quiet, planted 5 % SLOWER beyond the tolerance, noted within it", "[reference]") {
  const synthetic_set set;
  const auto quiet = hdb::compare_runs({set.set_dir}, set.extra, {});
  INFO(quiet.output);
  CHECK(quiet.exit_code == 0);
  CHECK(hdb_test::contains(quiet.output, "0 slower, 0 faster, 4 same"));
  CHECK(hdb_test::contains(quiet.output, "spread of the 6 runs of the reference set"));
  CHECK(hdb_test::contains(quiet.output, "reaches the 1 % threshold"));
  // A set's members are other machines by design: that is not worth a warning.
  CHECK_FALSE(hdb_test::contains(quiet.output, "different physical GPU"));

  const auto planted = write_run(set.tmp.path(), {"20261211T000000Z-planted", run_shifts[6], 0.05});
  const auto slow = hdb::compare_runs({set.set_dir}, planted, {});
  INFO(slow.output);
  CHECK(slow.exit_code == 1);
  // Pinned copies (3 % tolerance) are SLOWER; the device latencies (15 %) are outside the band
  // but within the change that matters for a node: SAME, with check's WARN words.
  CHECK(hdb_test::contains(slow.output, "2 slower, 0 faster, 2 same (headline metrics; 2 of them outside the set's band"));
  CHECK(hdb_test::contains(slow.output, "but within the 15 % that matters for a node"));
  hdb::compare_options at_one;
  at_one.statistics.threshold = 0.01;  // the user names the change that matters: the band and 1 % alone
  CHECK(hdb_test::contains(hdb::compare_runs({set.set_dir}, planted, at_one).output, "4 slower, 0 faster, 0 same"));

  SECTION("a plain run directory as baseline is a single run, as before") {
    const auto plain = hdb::compare_runs({set.members.front()}, set.extra, [] {
      hdb::compare_options none;
      none.noise_model = "none";
      return none;
    }());
    CHECK(hdb_test::contains(plain.output, "so the run-to-run noise is unknown"));
  }
}

TEST_CASE("one baseline plus the model is a real test, without the model the repetitions decide", "[reference]") {
  const synthetic_set set;
  const auto planted = write_run(set.tmp.path(), {"20261211T000000Z-planted", run_shifts[6], 0.05});
  hdb::compare_options with_model;
  with_model.noise_model = (set.set_dir / "noise.json").string();
  const auto one = hdb::compare_runs({set.members[2]}, planted, with_model);
  INFO(one.output);
  CHECK(hdb_test::contains(one.output, "the noise model's run-to-run spread (one baseline run)"));
  CHECK(hdb_test::contains(one.output, "4 slower, 0 faster, 0 same"));
  const auto quiet = hdb::compare_runs({set.members[2]}, set.extra, with_model);
  INFO(quiet.output);
  CHECK(hdb_test::contains(quiet.output, "0 slower, 0 faster, 4 same"));

  SECTION("found by the current run's kind with --reference (auto)") {
    hdb::compare_options found;
    found.reference = set.set_dir;
    const auto automatic = hdb::compare_runs({set.members[2]}, planted, found);
    CHECK(hdb_test::contains(automatic.output, "noise model: " + set.set_dir.string()));
    CHECK(hdb_test::contains(automatic.output, "4 slower"));
  }
  SECTION("--noise-model none: the one-run rule, whose 5 % threshold a planted 5 % cannot clear on every headline") {
    hdb::compare_options none;
    none.noise_model = "none";
    const auto repetitions = hdb::compare_runs({set.members[2]}, planted, none);
    CHECK(hdb_test::contains(repetitions.output, "Mann-Whitney U"));
    CHECK_FALSE(hdb_test::contains(repetitions.output, "4 slower"));
  }
  SECTION("the user's own 2 baselines pooled with the model: the degrees of freedom add") {
    const hdb_test::temp_dir own;
    const auto a = write_run(own.path(), {"20261212T000000Z-a", run_shifts[0]});
    const auto b = write_run(own.path(), {"20261213T000000Z-b", run_shifts[1]});
    const auto pooled = hdb::compare_runs({a, b}, planted, with_model);
    INFO(pooled.output);
    CHECK(hdb_test::contains(pooled.output, "2 baseline runs pooled with the noise model's"));
    CHECK(hdb_test::contains(pooled.output, "4 slower"));
    const hdb::run_spread mine{0.1, 2, 3, 2}, model{0.4, 8, 5, 8};
    const auto sum = hdb::combine_spreads(mine, model);
    CHECK(sum.df == 10);
    CHECK(sum.variance == hdb_test::Approx((0.1 * 2 + 0.4 * 8) / 10));
    CHECK(sum.inflation == hdb_test::Approx((3 * 2 + 5 * 8) / 10.0));
  }
}

TEST_CASE("detectable is the edge of the rule: just beyond it SLOWER, just inside SAME", "[reference]") {
  // Five baselines of one metric with known spread; the edge combines the half-width h and the
  // threshold: the smallest bad change flagged is max(h, -ln(1 - threshold) - h) on the log scale.
  const std::vector<double> levels = {100.0, 100.4, 99.7, 100.2, 99.8};
  std::vector<hdb::run_metric> runs;
  for (const double l : levels) runs.push_back({{}, l});
  const auto spread = hdb::pool_run_spread({runs});
  double mean_log = 0;
  for (const double l : levels) mean_log += std::log(l) / 5;
  const double centre = std::exp(mean_log);
  double previous_edge = 0;
  for (const double threshold : {0.001, 0.01, 0.05, 0.10}) {
    hdb::statistics_options options;
    options.threshold = threshold;
    const auto probe = hdb::decide_against_runs(runs, {{}, centre}, spread, hdb::better::higher, 3, options);
    REQUIRE(probe.detectable);
    const double edge = *probe.detectable;
    INFO("threshold " << threshold << " detectable " << edge);
    CHECK(edge >= previous_edge);  // a larger threshold never makes a smaller change visible
    previous_edge = edge;
    const auto at = [&](double change, hdb::better direction) {
      const double value = direction == hdb::better::higher ? centre * (1 - change) : centre * (1 + change);
      return hdb::decide_against_runs(runs, {{}, value}, spread, direction, 3, options).result;
    };
    CHECK(at(edge * 1.01, hdb::better::higher) == hdb::verdict::slower);
    CHECK(at(edge * 0.99, hdb::better::higher) == hdb::verdict::same);
    const auto lower = hdb::decide_against_runs(runs, {{}, centre}, spread, hdb::better::lower, 3, options);
    CHECK(at(*lower.detectable * 1.01, hdb::better::lower) == hdb::verdict::slower);
    CHECK(at(*lower.detectable * 0.99, hdb::better::lower) == hdb::verdict::same);
  }
}

TEST_CASE("band_for: the values compare against the whole set calls SAME", "[reference]") {
  const synthetic_set set;
  const auto loaded = hdb::load_reference_set(set.set_dir);
  const hdb::metric_key key{"copy", "latency", 0, 1, {{"direction", "h2d"}, {"host_kind", "pinned"}}, "latency"};
  const auto band = hdb::band_for(loaded, key, hdb::better::lower, 4, 0.05);  // 4 gating headlines, as compare counts
  REQUIRE(band);
  CHECK(band->runs == 6);
  CHECK(band->low < band->centre);
  CHECK(band->high > band->centre);
  CHECK(band->detectable == hdb_test::Approx(band->high / band->centre - 1));
  CHECK_FALSE(hdb::band_for(loaded, {"copy", "nothing", 0, 1, {}, "x"}, hdb::better::lower, 4, 0.05));

  // A new run whose h2d latency median sits just beyond the band's high end is SLOWER against
  // the set's band, just inside it SAME (its repetitions are as noisy as the members').
  const auto verdict_at = [&](double median) {
    run_spec spec{"20261214T000000Z-edge", {}};
    spec.shift[2] = median / (2.2 * (1 + 0.01 * 0.1)) - 1;  // the pattern's median is +0.1 within-SDs
    const auto dir = write_run(set.tmp.path() / std::to_string(median), spec);
    hdb::compare_options band_alone;  // at band_for's 1 %, not held to the node tolerance
    band_alone.statistics.threshold = 0.01;
    return verdict_of(hdb::compare_runs({set.set_dir}, dir, band_alone).output, " latency ", "direction=h2d host_kind=pinned");
  };
  CHECK(verdict_at(band->high * 1.0005) == "SLOWER");
  CHECK(verdict_at(band->high * 0.9995) == "SAME");
  CHECK(verdict_at(band->low * 0.9995) == "FASTER");
  CHECK(verdict_at(band->low * 1.0005) == "SAME");
}

TEST_CASE("find_reference_set: by kind among sets, an explicit set of another kind is an error", "[reference]") {
  const synthetic_set set;
  const auto h200_meta = meta_of({"x", {}});
  const auto gen4_meta = meta_of({"x", {}, 0, 4});
  const auto root = set.tmp.path();  // holds h200/ (a set) and incoming/ (not a set)
  const auto found = hdb::find_reference_set(h200_meta, root);
  REQUIRE(found);
  CHECK(found->dir == set.set_dir);
  CHECK_FALSE(hdb::find_reference_set(gen4_meta, root));
  CHECK(hdb::find_reference_set(h200_meta, set.set_dir));
  CHECK_THROWS_WITH(hdb::find_reference_set(gen4_meta, set.set_dir), hdb_test::contains_text("is for NVIDIA H200 x1, PCIe Gen5 x16"));
  CHECK_THROWS_WITH(hdb::find_reference_set(h200_meta, root / "missing"), hdb_test::contains_text("does not exist"));
  CHECK_THROWS_AS(hdb::find_reference_set(nlohmann::json::object(), root), hdb::harness_error);

  // A second set of the kind beside it: which grades the run is the user's to say, never the
  // first name's; the set named on its own still grades.
  fs::copy(set.set_dir, root / "h200-renewed", fs::copy_options::recursive);
  const auto both = hdb_test::contains_text("two reference sets for NVIDIA H200 x1, PCIe Gen5 x16");
  CHECK_THROWS_WITH(hdb::find_reference_set(h200_meta, root), both);
  CHECK(hdb::find_reference_set(h200_meta, root / "h200-renewed"));
}

TEST_CASE("find_reference_set_of_gpu_model: a plan's prices for a node whose own kind has no set", "[reference]") {
  const synthetic_set set;
  const auto root = set.tmp.path();
  // The same GPU on a Gen4 link: another kind, no set of its own, priced by the H200 set.
  const auto gen4 = hdb::find_reference_set_of_gpu_model(meta_of({"x", {}, 0, 4}), root);
  REQUIRE(gen4);
  CHECK(gen4->dir == set.set_dir);
  auto other_model = meta_of({"x", {}});
  other_model["node"]["gpus"][0]["name"] = "NVIDIA A100-SXM4-80GB";
  CHECK_FALSE(hdb::find_reference_set_of_gpu_model(other_model, root));
  CHECK_THROWS_WITH(hdb::find_reference_set_of_gpu_model(other_model, root / "missing"), hdb_test::contains_text("does not exist"));
}

TEST_CASE("validate: leave-one-out and an extra run quiet, planted 5 % caught on every headline", "[reference]") {
  const synthetic_set set;
  hdb::validate_options options;
  options.plant = 0.05;
  const auto inside = hdb::validate_reference_set(set.set_dir, {}, options);
  INFO(hdb::render_validation(inside));
  CHECK(inside.members == 6);
  REQUIRE(inside.headlines.size() == 4);
  CHECK(inside.false_verdicts == 0);
  CHECK(inside.missed == 0);
  for (const auto& h : inside.headlines) {
    CHECK(h.same == 6);
    CHECK(h.caught == 6);
    REQUIRE(h.detectable);
    CHECK(*h.detectable < 0.05);
  }
  const auto with_extra = hdb::validate_reference_set(set.set_dir, {set.extra}, options);
  CHECK(with_extra.false_verdicts == 0);
  CHECK(with_extra.missed == 0);
  CHECK(with_extra.headlines.front().same == 7);
  CHECK(with_extra.headlines.front().caught == 1);
  CHECK(hdb_test::contains(hdb::render_validation(with_extra), "0 false verdicts, 0 planted changes missed over 4 headlines; PASS"));
  // check too: every member against the others and the extra run against the set, without a FAIL;
  // the planted faults graded as the rule says (the pinned copies FAIL, the link FAILs).
  CHECK(inside.checks.size() == 6);
  CHECK(with_extra.checks.size() == 7);
  for (const auto& c : with_extra.checks) CHECK(c.failed == 0);
  const auto planted = [&](const std::string& fragment) -> const hdb::planted_check* {
    for (const auto& p : with_extra.planted_checks) {
      if (p.figure.find(fragment) != std::string::npos) return &p;
    }
    return nullptr;
  };
  for (const char* figure : {"bandwidth (direction=h2d host_kind=pinned)", "bandwidth (direction=d2h host_kind=pinned)",
                             "health PCIe link"}) {
    INFO(figure);
    const auto* p = planted(figure);
    REQUIRE(p != nullptr);
    CHECK(p->expected == "FAIL");
    CHECK(p->got == "FAIL");
    CHECK(p->as_expected);
  }
  CHECK(hdb_test::contains(hdb::render_validation(with_extra), "check's rule against planted faults:"));

  SECTION("a 0.5 % plant is below what the set can see: missed, and validate says FAIL") {
    options.plant = 0.005;
    const auto small = hdb::validate_reference_set(set.set_dir, {}, options);
    CHECK(small.missed > 0);
    CHECK(hdb_test::contains(hdb::render_validation(small), "; FAIL"));
  }
  SECTION("a member that is 3 % slower than the others is a false verdict in leave-one-out") {
    const auto slow = write_run(set.tmp.path() / "slow", {"20261215T000000Z-slow", run_shifts[6], 0.03});
    (void)hdb::add_to_reference_set(set.set_dir, slow, false);
    const auto with_slow = hdb::validate_reference_set(set.set_dir, {}, {});
    CHECK(with_slow.false_verdicts > 0);
  }
}

TEST_CASE("validate: an extra run worse than the set beyond the tolerance is a false SLOWER, within it SAME outside the band, "
          "a better one a false FASTER, as compare decides",
          "[reference]") {
  // Leave-one-out inside the set is quiet (the test above); the extra run alone moves the counts.
  const synthetic_set set;
  const auto columns = [&](double worse, const std::string& id) {
    const auto run = write_run(set.tmp.path() / id, {"20261217T000000Z-" + id, run_shifts[6], worse});
    const auto result = hdb::validate_reference_set(set.set_dir, {run}, {});
    INFO(hdb::render_validation(result));
    REQUIRE(result.headlines.size() == 4);
    return result;
  };
  // 6 % worse: beyond a bandwidth's 3 % tolerance (compare against the set: SLOWER), within a
  // latency's 15 % (SAME, outside the band: check's WARN).
  const auto slow = columns(0.06, "slow");
  for (const auto& h : slow.headlines) {
    INFO(hdb::describe(h.key));
    const bool within_tolerance = h.key.metric == "latency";
    CHECK(h.false_slower == (within_tolerance ? 0 : 1));
    CHECK(h.false_faster == 0);
    CHECK(h.same == (within_tolerance ? 7 : 6));
    CHECK(h.outside_band == (within_tolerance ? 1 : 0));
  }
  const auto verdicts = hdb::compare_runs({set.set_dir}, set.tmp.path() / "slow" / "20261217T000000Z-slow", {});
  INFO(verdicts.output);
  CHECK(verdicts.exit_code == 1);  // the bandwidths: validate's false SLOWERs are compare's SLOWERs
  CHECK(hdb_test::contains(verdicts.output, "2 slower"));
  const auto fast = columns(-0.06, "fast");
  for (const auto& h : fast.headlines) {
    INFO(hdb::describe(h.key));
    CHECK(h.false_slower == 0);
    CHECK(h.false_faster == 1);
    CHECK(h.same == 6);
  }
  CHECK(slow.false_verdicts >= 2);
  CHECK(fast.false_verdicts >= 4);
}

TEST_CASE("validate: each false verdict of compare names its run and headline, an extra run's or a left-out member's",
          "[reference]") {
  const synthetic_set set;
  // Beside the healthy extra run, one 6 % worse: its two bandwidths are compare's SLOWER (beyond
  // the 3 % tolerance), its latencies SAME (within 15 %); the healthy runs give none.
  const auto slow = write_run(set.tmp.path() / "slow", {"20261217T000000Z-slow", run_shifts[6], 0.06});
  const auto result = hdb::validate_reference_set(set.set_dir, {set.extra, slow}, {});
  const auto text = hdb::render_validation(result);
  INFO(text);
  REQUIRE(result.false_by_run.size() == 2);
  for (const auto& f : result.false_by_run) {
    INFO(hdb::describe(f.key));
    CHECK(f.run == "20261217T000000Z-slow");
    CHECK(f.result == hdb::verdict::slower);
    CHECK(f.key.metric == "bandwidth");
    CHECK(f.change == hdb_test::Approx(-0.06).margin(0.005));
  }
  CHECK(hdb_test::contains(text, "\ncompare's false verdicts, by run:\n"));
  CHECK(hdb_test::contains(text, "\n  20261217T000000Z-slow: false SLOWER copy bandwidth [device=0 direction=h2d host_kind=pinned] "
                                 "bandwidth (change -"));
  CHECK_FALSE(hdb_test::contains(hdb::render_validation(hdb::validate_reference_set(set.set_dir, {set.extra}, {})),
                                 "compare's false verdicts"));

  SECTION("a run kept in a directory named otherwise: its directory beside its run id, where a user finds it") {
    const auto renamed = slow.parent_path() / "20261217T000000Z-slow-boot-first";
    fs::rename(slow, renamed);
    const auto labelled = hdb::render_validation(hdb::validate_reference_set(set.set_dir, {set.extra, renamed}, {}));
    INFO(labelled);
    CHECK(hdb_test::contains(labelled, "\n  20261217T000000Z-slow (" + renamed.string() + "): false SLOWER copy bandwidth"));
  }

  SECTION("a member 6 % slower than the others: its own name, in leave-one-out") {
    const auto member = write_run(set.tmp.path() / "slow-member", {"20261215T000000Z-slow", run_shifts[6], 0.06});
    (void)hdb::add_to_reference_set(set.set_dir, member, false);
    const auto inside = hdb::validate_reference_set(set.set_dir, {}, {});
    INFO(hdb::render_validation(inside));
    REQUIRE_FALSE(inside.false_by_run.empty());
    for (const auto& f : inside.false_by_run) CHECK(f.run == "20261215T000000Z-slow");
  }
}

TEST_CASE("hdbench reference: exit 0 on a sound set, 1 on a missed plant, 2 on a refused run", "[reference][cli]") {
  const synthetic_set set;
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), "hdbench");
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    return hdb::cli_main(static_cast<int>(argv.size()), argv.data());
  };
  const auto dir = set.set_dir.string();
  CHECK(run({"reference", "validate", dir, set.extra.string(), "--plant", "5%"}) == 0);
  CHECK(run({"reference", "validate", dir, "--plant", "0.5%"}) == 1);
  CHECK(run({"reference", "validate", dir, "--plant", "150%"}) == 2);
  const auto gen4 = write_run(set.tmp.path() / "other", {"20261216T000000Z-gen4", run_shifts[6], 0, 4});
  CHECK(run({"reference", "add", dir, gen4.string()}) == 2);
  CHECK(run({"reference", "learn", dir}) == 0);
  CHECK(run({"reference", "learn", (set.tmp.path() / "incoming").string()}) == 2);  // no runs/
  CHECK(run({"compare", dir, set.extra.string()}) == 0);
}
