// hdbench check on stand-in runs: synthetic copy + p2p runs of H200 nodes written with
// write_results_csv and a meta.json built here (the families' real declarations, with their
// "checks"), graded against a reference set learned from five such runs (H3's noise model) or
// against peaks alone. Each node fault is planted in an otherwise healthy run.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <regex>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "hdb/harness/cli.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/verdict/fleet.hpp"
#include "hdb/harness/verdict/compare.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/data/gpu_health.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/util/stats.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// One GPU of a stand-in node: its figures (medians of a healthy H200) and its state.
struct gpu_spec {
  double pinned_h2d = 55.3, pinned_d2h = 55.2, bidir = 97.5, pageable_h2d = 7.7, pageable_d2h = 13.2;
  double latency_h2d = 2.3, latency_d2h = 1.6, loopback = 49.4;
  double pinned_h2d_scatter = 1;  // its repetitions' spread, times a healthy run's
  int gen = 5, width = 16, gen_max = 5, width_max = 16;
  int nvlinks = 0;
  unsigned long long clock_reasons = 0;  // at the copy family's start
  unsigned long long replays_start = 0, replays_end = 0;
  unsigned long long nvlink_errors_start = 0, nvlink_errors_end = 0;  // link 0 replay_errors
};

struct run_spec {
  std::string run_id = "current";
  std::vector<gpu_spec> gpus = std::vector<gpu_spec>(1);
  double shift = 0;  // this run's level shift of every figure (relative)
  std::vector<hdb::compute_process> others;  // seen on the GPUs around the copy family
  bool health = true;  // meta.json has the link counters
  // meta.json's health.processes_end: unset, none (a run that did not look); else whether `others`
  // were still on the GPUs as the run ended.
  std::optional<bool> others_at_end;
};

std::string uuid(std::size_t gpu) { return "GPU-0000000" + std::to_string(gpu); }

json declaration(const std::string& family) {
  return json::parse(hdb::read_text_file(hdb_test::fixture("../../../bench/" + family + "/schema.json")));
}

constexpr std::array<double, 10> pattern = {0.3, -1.1, 0.8, -0.4, 1.5, -0.9, 0.1, 1.0, -1.4, 0.1};

void add_metric(std::vector<hdb::result_row>& rows, const std::string& run_id, const std::string& family,
                const std::string& case_name, std::size_t gpu, std::map<std::string, std::string> params,
                const std::string& metric, const std::string& unit, hdb::better better, bool headline,
                const std::string& traffic, double level, double within) {
  hdb::result_row row;
  row.run_id = run_id;
  row.family = family;
  row.case_name = case_name;
  row.device = static_cast<int>(gpu);
  row.gpus = 1;
  row.gpu_uuid = uuid(gpu);
  row.params = std::move(params);
  row.metric = metric;
  row.unit = unit;
  row.better_direction = better;
  row.headline = headline;
  row.traffic = traffic;
  std::vector<double> samples;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    samples.push_back(level * (1 + within * pattern[(i + gpu) % pattern.size()]));
  }
  hdb_test::append_samples_and_median(rows, row, samples);
}

std::vector<hdb::result_row> make_rows(const run_spec& spec) {
  std::vector<hdb::result_row> rows;
  const auto f = 1 + spec.shift;
  const std::string gib = "1073741824";
  for (std::size_t g = 0; g < spec.gpus.size(); ++g) {
    const auto& gpu = spec.gpus[g];
    const auto copy = [&](const std::string& direction, const std::string& kind, const std::string& streams) {
      return std::map<std::string, std::string>{
          {"direction", direction}, {"host_kind", kind}, {"api", "async"}, {"size_bytes", gib}, {"streams", streams}};
    };
    const auto higher = hdb::better::higher, lower = hdb::better::lower;
    add_metric(rows, spec.run_id, "copy", "bandwidth", g, copy("h2d", "pinned", "1"), "bandwidth", "GB/s", higher, true,
               "pcie_per_direction", gpu.pinned_h2d * f, 0.001 * gpu.pinned_h2d_scatter);
    add_metric(rows, spec.run_id, "copy", "bandwidth", g, copy("d2h", "pinned", "1"), "bandwidth", "GB/s", higher, true,
               "pcie_per_direction", gpu.pinned_d2h * f, 0.001);
    add_metric(rows, spec.run_id, "copy", "bandwidth", g, copy("bidir", "pinned", "2"), "bandwidth", "GB/s", higher, false,
               "pcie_both_directions", gpu.bidir * f, 0.003);
    add_metric(rows, spec.run_id, "copy", "bandwidth", g, copy("h2d", "pageable", "1"), "bandwidth", "GB/s", higher, false,
               "pcie_per_direction", gpu.pageable_h2d * f, 0.003);
    add_metric(rows, spec.run_id, "copy", "bandwidth", g, copy("d2h", "pageable", "1"), "bandwidth", "GB/s", higher, false,
               "pcie_per_direction", gpu.pageable_d2h * f, 0.003);
    auto latency = copy("h2d", "pinned", "1");
    latency["size_bytes"] = "1";
    add_metric(rows, spec.run_id, "copy", "latency", g, latency, "latency", "us", lower, true, "", gpu.latency_h2d / f, 0.005);
    latency["direction"] = "d2h";
    add_metric(rows, spec.run_id, "copy", "latency", g, latency, "latency", "us", lower, true, "", gpu.latency_d2h / f, 0.005);
    add_metric(rows, spec.run_id, "p2p", "bandwidth", g,
               {{"api", "staged"}, {"direction", "loopback"}, {"src", std::to_string(g)}, {"dst", std::to_string(g)},
                {"size_bytes", gib}},
               "bandwidth", "GB/s", higher, true, "pcie_per_direction", gpu.loopback * f, 0.002);
  }
  return rows;
}

json make_meta(const run_spec& spec) {
  json gpus = json::array();
  hdb::activity_snapshot start, end;
  hdb::link_health_snapshot health_start, health_end;
  start.available = end.available = true;
  health_start.available = health_end.available = health_start.nvlink_available = health_end.nvlink_available = true;
  health_start.taken_utc = "2026-12-01T09:50:00Z";
  health_end.taken_utc = "2026-12-01T09:55:00Z";
  for (std::size_t g = 0; g < spec.gpus.size(); ++g) {
    const auto& gpu = spec.gpus[g];
    gpus.push_back({{"index", g},
                    {"name", "NVIDIA H200"},
                    {"uuid", uuid(g)},
                    {"pci_bus_id", "0000:" + std::to_string(10 + g) + ":00.0"},
                    {"pcie",
                     {{"gen_current", gpu.gen},
                      {"gen_max", gpu.gen_max},
                      {"width_current", gpu.width},
                      {"width_max", gpu.width_max},
                      {"source", "nvidia-smi (under load)"}}},
                    {"compute_capability", "9.0"},
                    {"nvlink", {{"links_active", gpu.nvlinks}, {"per_link_GBps", 26.562}}},
                    {"clocks", {{"throttle_reasons", "0x0000000000000000"}, {"source", "nvidia-smi (under load)"}}},
                    {"hbm_peak_GBps", 4814.304}});
    hdb::gpu_clock_state clock;
    clock.index = static_cast<int>(g);
    clock.uuid = uuid(g);
    clock.sm_mhz = gpu.clock_reasons != 0 ? 1200.0 : 1980.0;
    clock.sm_max_mhz = 1980.0;
    clock.event_reasons = gpu.clock_reasons;
    start.gpus.push_back(clock);
    clock.event_reasons = 0;
    clock.sm_mhz = 1980.0;
    end.gpus.push_back(clock);
    std::vector<hdb::smi_nvlink_counter> before, after;
    if (gpu.nvlinks > 0) {
      before = {{0, "replay_errors", gpu.nvlink_errors_start}, {0, "crc_errors", 0}};
      after = {{0, "replay_errors", gpu.nvlink_errors_end}, {0, "crc_errors", 0}};
    }
    health_start.gpus.push_back({uuid(g), gpu.replays_start, 0, before});
    health_end.gpus.push_back({uuid(g), gpu.replays_end, 0, after});
  }
  hdb::family_activity quiet{end, end, {}};
  start.processes = end.processes = spec.others;
  hdb::family_activity copy_activity{start, end, {}};
  json meta = {{"schema_version", 1},
               {"run_id", spec.run_id},
               {"node", {{"gpus", gpus}}},
               {"families",
                {{"copy", {{"status", "ok"}, {"schema", declaration("copy")}, {"activity", hdb::to_json(copy_activity)}}},
                 {"p2p", {{"status", "ok"}, {"schema", declaration("p2p")}, {"activity", hdb::to_json(quiet)}}}}}};
  if (spec.health) {
    meta["health"] = {{"start", hdb::to_json(health_start)}, {"end", hdb::to_json(health_end)}};
    // The GPUs' own record and the run's kernel log as this hdbench records them: all clean.
    hdb::gpu_record_snapshot record;
    record.available = true;
    for (std::size_t g = 0; g < spec.gpus.size(); ++g) {
      hdb::gpu_health_record gpu;
      gpu.uuid = uuid(g);
      // An H200 on PCIe: no error, no remap, no reset asked for; no page retirement, no fabric.
      for (const auto& f : hdb::gpu_record_fields()) {
        if (f == "uuid") continue;
        const bool count = f.starts_with("ecc.errors") || f == "remapped_rows.correctable" || f == "remapped_rows.uncorrectable";
        gpu.fields[f] = count ? "0" : f.starts_with("retired_pages") || f.starts_with("fabric") ? "[N/A]" : "No";
      }
      gpu.fields["ecc.mode.current"] = "Enabled";
      record.gpus.push_back(std::move(gpu));
    }
    meta["health"]["start"]["gpu_record"] = meta["health"]["end"]["gpu_record"] = hdb::to_json(record);
    hdb::kernel_log_window window;
    window.source = "/dev/kmsg";
    window.read = true;
    meta["health"]["kernel_log"] = hdb::to_json(window);
  }
  if (spec.others_at_end) {
    auto at_end = end;
    if (!*spec.others_at_end) at_end.processes.clear();
    meta["health"]["processes_end"] = hdb::to_json(at_end);
  }
  return meta;
}

const std::vector<std::string> columns = {"direction", "host_kind", "api", "size_bytes", "streams", "src", "dst"};

fs::path write_run(const fs::path& parent, const run_spec& spec) {
  const auto dir = parent / spec.run_id;
  fs::create_directories(dir);
  hdb::atomic_write_file(dir / "results.csv", hdb::write_results_csv(make_rows(spec), columns));
  hdb::write_meta(dir / "meta.json", make_meta(spec));
  return dir;
}

// A reference set of `gpus` healthy GPUs: five member runs with typical level shifts between
// machines (bandwidth within 0.4 %, latency as much) and noise.json learned from them.
fs::path write_set(const fs::path& parent, const std::string& name, const std::vector<gpu_spec>& gpus) {
  const auto set = parent / name;
  constexpr std::array<double, 5> shifts = {+0.002, -0.003, +0.001, -0.001, +0.004};
  std::vector<hdb::indexed_run> members;
  for (std::size_t i = 0; i < shifts.size(); ++i) {
    run_spec member;
    member.run_id = "member" + std::to_string(i + 1);
    member.gpus = gpus;
    member.shift = shifts[i];
    const auto dir = write_run(set / "runs", member);
    members.push_back(hdb::index_run(hdb::load_run(dir)));
  }
  const auto kind = hdb::kind_of(*members.front().run.meta);
  hdb::write_noise_model(set / "noise.json", hdb::learn_noise_model(members, kind));
  return set;
}

// check's options against `set`, judged by the declarations as the build installs them beside hdbench.
hdb::check_options against(const fs::path& set) { return {set, 0.05, HDB_TEST_SCHEMA_DIR}; }

std::vector<const hdb::graded_line*> lines_with(const hdb::check_report& report, hdb::grade grade) {
  std::vector<const hdb::graded_line*> found;
  for (const auto& line : report.lines) {
    if (line.result == grade) found.push_back(&line);
  }
  return found;
}

const hdb::graded_line* find_line(const hdb::check_report& report, const std::string& label, int gpu) {
  for (const auto& line : report.lines) {
    if (line.figure == label && line.gpus == std::vector<int>{gpu}) return &line;
  }
  return nullptr;
}

std::string describe_lines(const hdb::check_report& report) { return hdb::render_check(report, hdb::output_format::text); }

struct fixture_set {
  hdb_test::temp_dir dir;
  fs::path set = write_set(dir.path() / "reference", "h200", std::vector<gpu_spec>(1));
};

}  // namespace

TEST_CASE("check: a healthy node is PASS on every line, exit 0", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.shift = -0.001;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  CHECK(report.set == "h200");
  CHECK(report.set_runs == 5);
  CHECK(report.failed == 0);
  CHECK(report.warned == 0);
  CHECK(report.not_graded == 0);
  CHECK(report.exit_code() == 0);
  // Every check of copy and p2p on the GPU, under its declared label, held to the set's band.
  for (const char* label : {"pinned h2d 1 GiB", "pinned d2h 1 GiB", "pinned bidirectional 1 GiB", "pageable h2d 1 GiB",
                            "pageable d2h 1 GiB", "h2d 1 B latency (device-timed)", "d2h 1 B latency (device-timed)",
                            "staged loopback 1 GiB"}) {
    const auto* line = find_line(report, label, 0);
    REQUIRE(line != nullptr);
    CHECK(line->result == hdb::grade::pass);
    REQUIRE(line->band);
    CHECK(line->band->runs == 5);
    CHECK(line->band->low < *line->value);
    CHECK(line->band->high > *line->value);
  }
  // And the evidence of its health, each item its own PASS line.
  for (const char* item : {"PCIe link", "PCIe replays", "clocks", "other processes", "ECC", "row remap", "reset status", "Xid"}) {
    const auto* line = find_line(report, item, 0);
    REQUIRE(line != nullptr);
    CHECK(line->result == hdb::grade::pass);
  }
  CHECK(find_line(report, "NVLinks", 0) == nullptr);  // a PCIe-only GPU has no NVLink lines
  const auto text = hdb::render_check(report, hdb::output_format::text);
  CHECK_THAT(text, hdb_test::contains_text("PASS   GPU 0  copy    pinned h2d 1 GiB"));
  CHECK_THAT(text, hdb_test::contains_text("expected "));
  CHECK_THAT(text, hdb_test::contains_text("(h200, 5 runs)"));
  const auto last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  CHECK(last == "hdbench check: current PASS \u2014 " + std::to_string(report.passed) +
                    " PASS, 0 WARN, 0 FAIL against h200 (5 runs)\n");
}

TEST_CASE("check: a figure worse than the band FAILs, a better one WARNs", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.95;
  spec.gpus[0].latency_d2h *= 0.9;  // 10 % faster
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  const auto failed = lines_with(report, hdb::grade::fail);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]->figure == "pinned h2d 1 GiB");
  CHECK_THAT(failed[0]->reason, Catch::Matchers::StartsWith("slower than the set's centre 55.3 by 5.1 %: outside the band of "
                                                            "healthy nodes of this kind and beyond the 3 % that matters"));
  const auto warned = lines_with(report, hdb::grade::warn);
  REQUIRE(warned.size() == 1);
  CHECK(warned[0]->figure == "d2h 1 B latency (device-timed)");
  CHECK_THAT(warned[0]->reason, hdb_test::contains_text("better than the set's band"));
  CHECK(report.exit_code() == 1);
}

TEST_CASE("check: a figure outside the band but within its tolerance WARNs in words, not FAIL", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.985;  // outside the stand-in set's band (-0.9 %), as -0.8 % was outside the H200 set's
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  CHECK(report.failed == 0);
  CHECK(report.exit_code() == 0);
  const auto* line = find_line(report, "pinned h2d 1 GiB", 0);
  REQUIRE(line != nullptr);
  REQUIRE(line->result == hdb::grade::warn);
  CHECK(line->reason == "slower than the set's machines by 1.6 % (centre 55.3), outside their band but within the 3 % "
                        "that matters for a node");
}

TEST_CASE("check: a figure worse than the band whose repetitions scattered far wider than the set's says so", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.96;
  spec.gpus[0].pinned_h2d_scatter = 8;
  spec.gpus[0].pinned_d2h *= 0.98;  // lower, but as steady as the set's runs
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  const auto* h2d = find_line(report, "pinned h2d 1 GiB", 0);
  const auto* d2h = find_line(report, "pinned d2h 1 GiB", 0);
  REQUIRE(h2d != nullptr);
  REQUIRE(d2h != nullptr);
  CHECK(h2d->result == hdb::grade::fail);
  CHECK_THAT(h2d->reason, hdb_test::contains_text("; its repetitions scattered 8.0x as widely as the set's runs' did: "
                                                 "the node was not steady while it ran"));
  CHECK(d2h->result == hdb::grade::warn);
  CHECK_THAT(d2h->reason, !hdb_test::contains_text("scattered"));
  SECTION("within the tolerance, a scattered figure asks for a re-run") {
    run_spec warned;
    warned.gpus[0].pinned_h2d *= 0.98;
    warned.gpus[0].pinned_h2d_scatter = 8;
    const auto again = hdb::check_run(write_run(f.dir.path() / "warned", warned), against(f.set));
    INFO(describe_lines(again));
    const auto* line = find_line(again, "pinned h2d 1 GiB", 0);
    REQUIRE(line != nullptr);
    CHECK(line->result == hdb::grade::warn);
    CHECK_THAT(line->reason, Catch::Matchers::EndsWith("throttling): re-run it"));
  }
}

TEST_CASE("check: the scatter note needs 3x the set's scatter, a figure worse than the band and a full run", "[check]") {
  const fixture_set f;
  const auto h2d_reason = [&](const std::string& id, double level, double scatter, bool quick) {
    run_spec spec;
    spec.run_id = id;
    spec.gpus[0].pinned_h2d *= level;
    spec.gpus[0].pinned_h2d_scatter = scatter;
    const auto dir = write_run(f.dir.path(), spec);
    if (quick) {
      auto meta = *hdb::read_meta(dir / "meta.json");
      meta["quick"] = true;
      hdb::write_meta(dir / "meta.json", meta);
    }
    const auto report = hdb::check_run(dir, against(f.set));
    INFO(describe_lines(report));
    const auto* line = find_line(report, "pinned h2d 1 GiB", 0);
    REQUIRE(line != nullptr);
    return line->reason;
  };
  CHECK_THAT(h2d_reason("four", 0.96, 4, false), hdb_test::contains_text("scattered 4.0x"));
  CHECK_THAT(h2d_reason("two", 0.96, 2, false), !hdb_test::contains_text("scattered"));
  // Either side of the factor 3 itself: the run's scatter over the set's is the planted factor.
  CHECK_THAT(h2d_reason("three-two", 0.96, 3.2, false), hdb_test::contains_text("scattered 3.2x"));
  CHECK_THAT(h2d_reason("two-eight", 0.96, 2.8, false), !hdb_test::contains_text("scattered"));
  CHECK_THAT(h2d_reason("quick", 0.96, 8, true), !hdb_test::contains_text("scattered"));     // --quick: fewer repetitions
  CHECK_THAT(h2d_reason("inside", 1.0, 8, false), !hdb_test::contains_text("scattered"));   // PASS
  CHECK_THAT(h2d_reason("better", 1.05, 8, false), !hdb_test::contains_text("scattered"));  // better than the band
}

TEST_CASE("check: peaks only, at the cut-offs: PASS from 65 %, WARN from 50 %, FAIL below", "[check]") {
  hdb_test::temp_dir dir;
  write_set(dir.path() / "reference", "h200-x2", std::vector<gpu_spec>(2));
  const double peak = 63.015;  // Gen5 x16, one direction
  const auto grade_at = [&](const std::string& id, double percent) {
    run_spec spec;
    spec.run_id = id;
    spec.gpus[0].pinned_h2d = peak * percent / 100;
    const auto report = hdb::check_run(write_run(dir.path(), spec), against(dir.path() / "reference"));
    return find_line(report, "pinned h2d 1 GiB", 0)->result;
  };
  CHECK(grade_at("p66", 66) == hdb::grade::pass);
  CHECK(grade_at("p64", 64) == hdb::grade::warn);
  CHECK(grade_at("p51", 51) == hdb::grade::warn);
  CHECK(grade_at("p47", 47) == hdb::grade::fail);
  // A tenth of a per cent either side of each cut (the median sits 0.01 % above the level), so a
  // cut moved by half a point either way changes a grade here.
  CHECK(grade_at("p65.1", 65.1) == hdb::grade::pass);
  CHECK(grade_at("p64.9", 64.9) == hdb::grade::warn);
  CHECK(grade_at("p50.1", 50.1) == hdb::grade::warn);
  CHECK(grade_at("p49.9", 49.9) == hdb::grade::fail);
}

TEST_CASE("check: a host line WARNs outside the band and FAILs only below half the set's centre", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pageable_h2d *= 0.70;  // a busier or slower host than the set's
  spec.gpus[0].pageable_d2h *= 0.45;  // a crippled host memory or a misplaced NUMA binding
  spec.gpus[0].bidir *= 1.2;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  const auto* h2d = find_line(report, "pageable h2d 1 GiB", 0);
  const auto* d2h = find_line(report, "pageable d2h 1 GiB", 0);
  REQUIRE(h2d != nullptr);
  REQUIRE(d2h != nullptr);
  CHECK(h2d->result == hdb::grade::warn);
  CHECK_THAT(h2d->reason, Catch::Matchers::StartsWith("host line: slower than the set's machines by 30.0 % (centre 7.71), "
                                                      "outside their band but within the 50 % that matters for a node: "
                                                      "the host's CPU, memory and neighbours set this figure"));
  CHECK(d2h->result == hdb::grade::fail);
  CHECK_THAT(d2h->reason, Catch::Matchers::StartsWith("host line: slower than the set's centre 13.2 by 55.0 %"));
  CHECK(find_line(report, "pinned bidirectional 1 GiB", 0)->result == hdb::grade::warn);  // better than the band
  CHECK(report.exit_code() == 1);
}

TEST_CASE("check: the rule in one place", "[check]") {
  CHECK(hdb::grade_of(hdb::verdict::same, 0.2, {0.03, false}) == hdb::grade::pass);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.031, {0.03, false}) == hdb::grade::fail);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.029, {0.03, false}) == hdb::grade::warn);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.03, {0.03, false}) == hdb::grade::warn);  // FAIL is beyond it, not at it
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.001, {std::nullopt, false}) == hdb::grade::fail);
  CHECK(hdb::grade_of(hdb::verdict::faster, -0.2, {0.03, false}) == hdb::grade::warn);
  CHECK(hdb::grade_of(hdb::verdict::faster, -0.2, {0.5, true}) == hdb::grade::pass);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.49, {0.5, true}) == hdb::grade::warn);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.5, {0.5, true}) == hdb::grade::warn);
  CHECK(hdb::grade_of(hdb::verdict::slower, 0.51, {0.5, true}) == hdb::grade::fail);
  CHECK(hdb::worse_by(95, 100, hdb::better::higher) == hdb_test::Approx(0.05));
  CHECK(hdb::worse_by(105, 100, hdb::better::lower) == hdb_test::Approx(0.05));
  CHECK(hdb::worse_by(105, 100, hdb::better::neutral) == 0);
}

// One rule for a node against its kind's set, as the user runs both (`hdbench check RUN` and
// `hdbench compare SET RUN`): on every gated headline, check FAIL <=> compare SLOWER, check WARN
// below the band <=> compare SAME with the within-tolerance note, and compare's exit is 1 exactly
// when a gated headline FAILs. Swept over shifts of every gated headline from -20 % to +20 %: past
// the bandwidths' 3 % and the latencies' 15 % (lower is better) on both sides.
TEST_CASE("check and compare decide alike on every gated headline of a stand-in set", "[check][compare]") {
  const fixture_set f;
  int fails = 0, within = 0, compared = 0, latency_fails = 0, latency_within = 0;
  for (int step = -40; step <= 40; ++step) {
    const double shift = step * 0.005;
    run_spec spec;
    spec.run_id = "shift" + std::to_string(step + 40);
    for (double* figure : {&spec.gpus[0].pinned_h2d, &spec.gpus[0].pinned_d2h, &spec.gpus[0].latency_d2h,
                           &spec.gpus[0].latency_h2d, &spec.gpus[0].loopback}) {
      *figure *= 1 + shift;
    }
    const auto dir = write_run(f.dir.path(), spec);
    const auto report = hdb::check_run(dir, against(f.set));
    hdb::compare_options options;
    options.format = hdb::output_format::json;
    options.schema_dir = HDB_TEST_SCHEMA_DIR;
    const auto result = hdb::compare_runs({f.set}, dir, options);
    REQUIRE(result.error.empty());
    const auto rows = json::parse(result.output).at("rows");
    bool gated_fail = false;
    for (const auto& row : rows) {
      if (!row.at("headline").get<bool>()) continue;
      const double value = row.at("current").get<double>();
      const auto line = std::find_if(report.lines.begin(), report.lines.end(), [&](const hdb::graded_line& l) {
        return l.family == row.at("family").get<std::string>() && l.value && *l.value == value;
      });
      REQUIRE(line != report.lines.end());
      const auto verdict = row.at("verdict").get<std::string>();
      INFO(line->figure << " shifted " << shift << ": " << line->reason << " / compare " << verdict << " " << row.at("note"));
      ++compared;
      CHECK((line->result == hdb::grade::fail) == (verdict == "SLOWER"));
      const bool below_band = row.at("against_band").get<std::string>() == "SLOWER";
      CHECK((line->result == hdb::grade::warn && below_band) ==
            (verdict == "SAME" && below_band && row.at("note").get<std::string>().starts_with("outside the set's band")));
      const bool latency = line->direction == hdb::better::lower;
      if (line->result == hdb::grade::fail) {
        ++fails;
        latency_fails += latency;
        gated_fail = true;
      }
      if (line->result == hdb::grade::warn && below_band) {
        ++within;
        latency_within += latency;
      }
    }
    CHECK(result.exit_code == (gated_fail ? 1 : 0));
  }
  CHECK(compared >= 81 * 4);
  CHECK(latency_fails > 0);   // a latency beyond its 15 %: FAIL and SLOWER
  CHECK(latency_within > 0);  // and within it: WARN and SAME
  CHECK(fails > 0);   // the sweep reaches past the tolerances
  CHECK(within > 0);  // and has figures below the band within them, which check WARNs and compare calls SAME
}

TEST_CASE("compare against a set: below the band within the tolerance is SAME and says so, --threshold restores the band alone",
          "[check][compare]") {
  const fixture_set f;
  const auto compare_at = [&](const std::string& id, double factor, std::optional<double> threshold) {
    run_spec spec;
    spec.run_id = id;
    spec.gpus[0].pinned_h2d *= factor;
    hdb::compare_options options;
    options.statistics.threshold = threshold;
    return hdb::compare_runs({f.set}, write_run(f.dir.path(), spec), options);
  };
  const auto within = compare_at("two", 0.98, std::nullopt);  // pinned copies: 3 % tolerance
  INFO(within.output);
  CHECK(within.exit_code == 0);
  CHECK_THAT(within.output, hdb_test::contains_text("outside the set's band (-2.1 %) but within the 3 % that matters for a node"));
  CHECK_THAT(within.output, hdb_test::contains_text("1 of them outside the set's band but within the tolerance"));
  CHECK_THAT(within.output, hdb_test::contains_text("rule: against its kind's reference set a node is SLOWER only where"));
  const auto beyond = compare_at("four", 0.96, std::nullopt);
  INFO(beyond.output);
  CHECK(beyond.exit_code == 1);
  const auto asked = compare_at("two-at-1", 0.98, 0.01);  // the user named the change that matters
  INFO(asked.output);
  CHECK(asked.exit_code == 1);
  CHECK_THAT(asked.output, !hdb_test::contains_text("rule: against its kind's reference set"));
}

TEST_CASE("check: a link trained to Gen4 under load is a FAIL naming the GPU", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].gen = 4;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  const auto* line = find_line(report, "PCIe link", 0);
  REQUIRE(line != nullptr);
  CHECK(line->result == hdb::grade::fail);
  CHECK(line->reading == "Gen4 x16");
  CHECK_THAT(line->reason, hdb_test::contains_text("trained below its maximum Gen5 x16 while copying"));
  CHECK(report.exit_code() == 1);
}

TEST_CASE("check: a slot whose maximum is below the kind's is held to the kind and FAILs", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].gen = spec.gpus[0].gen_max = 4;  // a Gen4 riser: trained at its (lower) maximum
  spec.gpus[0].pinned_h2d = spec.gpus[0].pinned_d2h = 27.5;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.dir.path() / "reference"));
  INFO(describe_lines(report));
  CHECK(report.set == "h200");  // not "no reference": this node is the kind with a slower slot
  REQUIRE(report.notes.size() == 2);  // and that the fabric is not graded on a PCIe node
  CHECK_THAT(report.notes[0], hdb_test::contains_text("fewer links than the kind of reference set h200"));
  const auto* link = find_line(report, "PCIe link", 0);
  REQUIRE(link != nullptr);
  CHECK(link->result == hdb::grade::fail);
  CHECK_THAT(link->reason, hdb_test::contains_text("maximum is Gen4 x16, below this kind's Gen5 x16"));
  CHECK(find_line(report, "pinned h2d 1 GiB", 0)->result == hdb::grade::fail);
}

TEST_CASE("check: throttling around a family", "[check]") {
  const fixture_set f;
  run_spec spec;
  SECTION("by the hardware is a FAIL") {
    spec.gpus[0].clock_reasons = 0x8 | 0x1;
    const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
    const auto* line = find_line(report, "clocks", 0);
    REQUIRE(line != nullptr);
    CHECK(line->result == hdb::grade::fail);
    CHECK_THAT(line->reason, hdb_test::contains_text("when copy before it started: 0x9 (gpu_idle,hw_slowdown), SM at 1200 MHz of 1980"));
    CHECK(report.exit_code() == 1);
  }
  SECTION("by a software power cap is a WARN") {
    spec.gpus[0].clock_reasons = 0x4;
    const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
    const auto* line = find_line(report, "clocks", 0);
    REQUIRE(line != nullptr);
    CHECK(line->result == hdb::grade::warn);
    CHECK_THAT(line->reason, hdb_test::contains_text("sw_power_cap"));
    CHECK(report.exit_code() == 0);
  }
  SECTION("an idle GPU is not throttled") {
    spec.gpus[0].clock_reasons = 0x1;
    const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
    CHECK(find_line(report, "clocks", 0)->result == hdb::grade::pass);
  }
}

namespace {

// Another program on GPU 0, pid 4242, around the copy family.
hdb::compute_process other_process(const std::string& name, std::optional<double> memory_mib = std::nullopt) {
  hdb::compute_process other;
  other.pid = 4242;
  other.name = name;
  other.gpu_uuid = uuid(0);
  other.used_memory_mib = memory_mib;
  return other;
}

}  // namespace

TEST_CASE("check: another process on the GPU during a family FAILs, naming it and the figures", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.others = {other_process("python3", 2048)};
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(report));
  const auto failed = lines_with(report, hdb::grade::fail);
  REQUIRE(failed.size() == 1);
  CHECK(failed[0]->figure == "other processes");
  CHECK(failed[0]->gpus == std::vector<int>{0});
  CHECK(failed[0]->reading == "pid 4242 python3 (2048 MiB)");
  CHECK_THAT(failed[0]->reason, hdb_test::contains_text("during copy (before it started, after it ended)"));
  // The copy figures measured meanwhile, not p2p's (it ran alone).
  CHECK_THAT(failed[0]->reason, hdb_test::contains_text("pinned h2d 1 GiB, pinned d2h 1 GiB, pinned bidirectional 1 GiB"));
  CHECK_THAT(failed[0]->reason, !hdb_test::contains_text("staged loopback"));
  CHECK(report.exit_code() == 1);
  SECTION("another hdbench run only WARNs: the per-GPU lock kept them apart") {
    spec.others[0].name = "/opt/hdbench/bin/hdbench-copy";
    spec.run_id = "current-hdbench";
    const auto again = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
    CHECK(again.failed == 0);
    CHECK(find_line(again, "other processes", 0)->result == hdb::grade::warn);
  }
}

TEST_CASE("check: another process that had left by the end of the run WARNs, one still there FAILs", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.others = {other_process("pcie-copy-load")};
  spec.others_at_end = false;
  const auto left = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  INFO(describe_lines(left));
  CHECK(left.failed == 0);
  CHECK(find_line(left, "other processes", 0)->result == hdb::grade::warn);
  CHECK_THAT(find_line(left, "other processes", 0)->reason, hdb_test::contains_text("had left by the end of the run"));
  spec.others_at_end = true;
  spec.run_id = "current-stayed";
  const auto stayed = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  CHECK(find_line(stayed, "other processes", 0)->result == hdb::grade::fail);
  CHECK_THAT(find_line(stayed, "other processes", 0)->reason, hdb_test::contains_text("still on it as the run ended"));
}

namespace {

// The fleet of one node: `run_dir`, graded as `hdbench fleet` grades it, against `set`'s parent.
hdb::fleet_report fleet_of(const fs::path& run_dir, const fs::path& set, const fs::path& schema_dir) {
  hdb::fleet_options options;
  options.reference = set.parent_path();
  options.plots = false;
  options.schema_dir = schema_dir;
  return hdb::grade_fleet({run_dir}, options);
}

// A run whose pinned h2d 1 GiB case of GPU 0 was measured `tries.size()` times, the k-th at
// `tries[k]` times a healthy GPU's rate, each later attempt only that case (as hdbench run's
// confirmations measure).
fs::path write_attempts(const fs::path& parent, const std::string& run_id, const std::vector<double>& tries) {
  std::vector<hdb::result_row> rows;
  for (std::size_t k = 0; k < tries.size(); ++k) {
    run_spec spec;
    spec.run_id = run_id;
    spec.gpus[0].pinned_h2d *= tries[k];
    for (auto& row : make_rows(spec)) {
      const bool pinned_h2d = row.family == "copy" && row.param("host_kind") == "pinned" && row.param("direction") == "h2d" &&
                              row.param("size_bytes") == "1073741824";
      if (k > 0 && !pinned_h2d) continue;
      row.attempt = static_cast<int>(k) + 1;
      rows.push_back(std::move(row));
    }
  }
  run_spec spec;
  spec.run_id = run_id;
  const auto dir = parent / run_id;
  fs::create_directories(dir);
  hdb::atomic_write_file(dir / "results.csv", hdb::write_results_csv(rows, columns));
  hdb::write_meta(dir / "meta.json", make_meta(spec));
  return dir;
}

}  // namespace

TEST_CASE("check: a FAIL stands only when it failed on every try, a transient is a WARN naming both readings", "[check]") {
  const fixture_set f;
  const auto graded = [&](const std::string& run_id, const std::vector<double>& tries) {
    const auto report = hdb::check_run(write_attempts(f.dir.path(), run_id, tries), against(f.set));
    UNSCOPED_INFO(describe_lines(report));
    return std::pair{report, *find_line(report, "pinned h2d 1 GiB", 0)};
  };
  SECTION("measured once: FAIL, not confirmed") {
    const auto [report, line] = graded("once", {0.9});
    CHECK(line.result == hdb::grade::fail);
    CHECK(line.confirmed == hdb::confirmation::unconfirmed);
    CHECK(line.attempts.empty());
    CHECK_THAT(line.reason, hdb_test::contains_text("not confirmed: measured once"));
    CHECK(report.exit_code() == 1);
  }
  SECTION("slow on the first try only: WARN, graded on the last try, both readings in words") {
    const auto [report, line] = graded("transient", {0.9, 1.0});
    CHECK(line.result == hdb::grade::warn);
    CHECK(line.confirmed == hdb::confirmation::transient);
    CHECK(*line.value == hdb_test::Approx(55.3).epsilon(1e-3));
    REQUIRE(line.attempts.size() == 2);
    CHECK(line.attempts[0].attempt == 1);
    CHECK(line.attempts[0].result == hdb::grade::fail);
    CHECK(line.attempts[1].attempt == 2);
    CHECK(line.attempts[1].result == hdb::grade::pass);
    CHECK_THAT(line.reason, hdb_test::contains_text("first try 49.8 GB/s, confirmed 55.3 GB/s: a transient, not the node"));
    CHECK(report.failed == 0);
    CHECK(report.exit_code() == 0);
  }
  SECTION("slow on every try: FAIL, confirmed, every reading named") {
    const auto [report, line] = graded("persistent", {0.9, 0.91, 0.9});
    CHECK(line.result == hdb::grade::fail);
    CHECK(line.confirmed == hdb::confirmation::confirmed);
    REQUIRE(line.attempts.size() == 3);
    CHECK(line.attempts[2].attempt == 3);
    CHECK_THAT(line.reason, hdb_test::contains_text("confirmed: failed on every try (49.8 GB/s, 50.3 GB/s, 49.8 GB/s)"));
    CHECK(report.exit_code() == 1);
  }
  SECTION("slow on the last try but not on every one: WARN, unsteady") {
    const auto [report, line] = graded("unsteady", {1.0, 0.9});
    CHECK(line.result == hdb::grade::warn);
    CHECK(line.confirmed == hdb::confirmation::unsteady);
    CHECK(report.exit_code() == 0);
  }
  SECTION("check.json carries the confirmation and every attempt, and fleet decides each line as check did") {
    for (const auto& [run_id, tries] : {std::pair{"fleet-transient", std::vector<double>{0.9, 1.0}},
                                        std::pair{"fleet-persistent", std::vector<double>{0.9, 0.9}},
                                        std::pair{"fleet-once", std::vector<double>{0.9}}}) {
      const auto [report, line] = graded(run_id, tries);
      const auto back = hdb::graded_line_from_json(hdb::to_json(line));
      CHECK(back.confirmed == line.confirmed);
      REQUIRE(back.attempts.size() == line.attempts.size());
      hdb::write_check_files(f.dir.path() / run_id, report);
      const auto fleet = fleet_of(f.dir.path() / run_id, f.set, HDB_TEST_SCHEMA_DIR);
      const auto in_fleet = std::find_if(fleet.nodes[0].lines.begin(), fleet.nodes[0].lines.end(),
                                         [](const hdb::graded_line& l) { return l.figure == "pinned h2d 1 GiB"; });
      REQUIRE(in_fleet != fleet.nodes[0].lines.end());
      CHECK(in_fleet->result == line.result);
      CHECK(in_fleet->confirmed == line.confirmed);
      CHECK(in_fleet->reason == line.reason);
    }
  }
}

TEST_CASE("check: one slow GPU among eight FAILs on that GPU only", "[check]") {
  hdb_test::temp_dir dir;
  const auto set = write_set(dir.path() / "reference", "h200-x8", std::vector<gpu_spec>(8));
  run_spec spec;
  spec.gpus = std::vector<gpu_spec>(8);
  spec.gpus[5].pinned_h2d *= 0.93;
  spec.gpus[5].loopback *= 0.93;
  const auto report = hdb::check_run(write_run(dir.path(), spec), against(set));
  INFO(describe_lines(report));
  const auto failed = lines_with(report, hdb::grade::fail);
  REQUIRE(failed.size() == 2);
  for (const auto* line : failed) CHECK(line->gpus == std::vector<int>{5});
  CHECK(failed[0]->figure == "pinned h2d 1 GiB");
  CHECK(failed[1]->figure == "staged loopback 1 GiB");
  CHECK(find_line(report, "pinned h2d 1 GiB", 4)->result == hdb::grade::pass);
  CHECK(report.warned == 0);
}

TEST_CASE("check: PCIe replays that grew during the run FAIL", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].replays_start = 3;
  spec.gpus[0].replays_end = 20;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  const auto* line = find_line(report, "PCIe replays", 0);
  REQUIRE(line != nullptr);
  CHECK(line->result == hdb::grade::fail);
  CHECK(line->reading == "3 -> 20");
  CHECK_THAT(line->reason, hdb_test::contains_text("Replays Since Reset"));
  // Replays from before the run (3) are not this run's: counted only when they grow.
  spec.gpus[0].replays_end = 3;
  spec.run_id = "steady";
  CHECK(find_line(hdb::check_run(write_run(f.dir.path(), spec), against(f.set)), "PCIe replays", 0)->result ==
        hdb::grade::pass);
}

TEST_CASE("check: NVLinks down and NVLink errors that grew FAIL", "[check]") {
  hdb_test::temp_dir dir;
  std::vector<gpu_spec> kind(2);
  for (auto& gpu : kind) gpu.nvlinks = 18;
  write_set(dir.path() / "reference", "h200-x2", kind);
  run_spec spec;
  spec.gpus = kind;
  spec.gpus[1].nvlinks = 17;
  spec.gpus[0].nvlink_errors_end = 12;
  const auto report = hdb::check_run(write_run(dir.path(), spec), against(dir.path() / "reference"));
  INFO(describe_lines(report));
  CHECK(report.set == "h200-x2");
  const auto* down = find_line(report, "NVLinks", 1);
  REQUIRE(down != nullptr);
  CHECK(down->result == hdb::grade::fail);
  CHECK(down->reading == "17 active");
  CHECK_THAT(down->reason, hdb_test::contains_text("fewer than this kind's 18: 1 link(s) down"));
  CHECK(find_line(report, "NVLinks", 0)->result == hdb::grade::pass);
  const auto* errors = find_line(report, "NVLink errors", 0);
  REQUIRE(errors != nullptr);
  CHECK(errors->result == hdb::grade::fail);
  CHECK_THAT(errors->reason, hdb_test::contains_text("link 0 replay_errors 0 -> 12"));
  CHECK(find_line(report, "NVLink errors", 1)->result == hdb::grade::pass);
}

TEST_CASE("check: without a reference set of this kind, figures are graded against peaks", "[check]") {
  hdb_test::temp_dir dir;
  // The only set is of another kind (two GPUs).
  write_set(dir.path() / "reference", "h200-x2", std::vector<gpu_spec>(2));
  run_spec spec;
  spec.gpus[0].pinned_d2h = 25;  // 40 % of the Gen5 x16 peak
  spec.gpus[0].bidir = 70;       // 56 %
  const auto report = hdb::check_run(write_run(dir.path(), spec), against(dir.path() / "reference"));
  INFO(describe_lines(report));
  CHECK_FALSE(report.set);
  REQUIRE(report.notes.size() == 2);
  CHECK_THAT(report.notes[0], hdb_test::contains_text("no reference set for NVIDIA H200 x1"));
  CHECK_THAT(report.notes[1], hdb_test::contains_text("fabric not graded: GPU 0: no NVSwitch fabric"));
  CHECK_THAT(report.notes[0], hdb_test::contains_text("graded against peaks only"));
  const auto* h2d = find_line(report, "pinned h2d 1 GiB", 0);
  CHECK(h2d->result == hdb::grade::pass);  // 55.3 of 63.0 GB/s
  REQUIRE(h2d->percent_of_peak);
  CHECK(*h2d->percent_of_peak == hdb_test::Approx(55.3 / 63.015 * 100).epsilon(0.002));
  CHECK(find_line(report, "pinned d2h 1 GiB", 0)->result == hdb::grade::fail);
  CHECK(find_line(report, "pinned bidirectional 1 GiB", 0)->result == hdb::grade::warn);
  CHECK(find_line(report, "staged loopback 1 GiB", 0)->result == hdb::grade::pass);
  // Pageable copies are declared not gradeable by peak; latencies have none.
  const auto* pageable = find_line(report, "pageable h2d 1 GiB", 0);
  CHECK(pageable->result == hdb::grade::not_graded);
  CHECK_THAT(pageable->reason, hdb_test::contains_text("stages pageable memory"));
  CHECK(find_line(report, "h2d 1 B latency (device-timed)", 0)->result == hdb::grade::not_graded);
  CHECK(report.exit_code() == 1);
  const auto text = hdb::render_check(report, hdb::output_format::text);
  // The figures' 6 PASS and the health record's 4 (ECC, row remap, reset status, Xid).
  CHECK_THAT(text, hdb_test::contains_text("FAIL \u2014 10 PASS, 1 WARN, 1 FAIL, 4 not graded against peaks only"));
  CHECK_THAT(text, hdb_test::contains_text("against peaks only"));
  SECTION("a set of another kind asked for by name is an input error") {
    CHECK_THROWS_AS(hdb::check_run(dir.path() / "current", against(dir.path() / "reference" / "h200-x2")), hdb::harness_error);
  }
}

TEST_CASE("check: a run without link counters says health was not read", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.health = false;
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  const auto warned = lines_with(report, hdb::grade::warn);
  REQUIRE(warned.size() == 1);
  CHECK(warned[0]->figure == "health not read");
  CHECK(warned[0]->gpus.empty());
  CHECK(report.failed == 0);
  CHECK(report.exit_code() == 0);
  CHECK(hdb::summary_line(report).starts_with("hdbench check: current WARN \u2014 "));
}

TEST_CASE("check: a check its run did not measure WARNs", "[check]") {
  const fixture_set f;
  run_spec spec;
  auto rows = make_rows(spec);
  // Drop the pageable d2h rows: its check has nothing to grade.
  std::erase_if(rows, [](const hdb::result_row& row) {
    return row.param("host_kind") == "pageable" && row.param("direction") == "d2h";
  });
  const auto run = f.dir.path() / "partial";
  fs::create_directories(run);
  hdb::atomic_write_file(run / "results.csv", hdb::write_results_csv(rows, columns));
  hdb::write_meta(run / "meta.json", make_meta(spec));
  const auto report = hdb::check_run(run, against(f.set));
  const auto warned = lines_with(report, hdb::grade::warn);
  REQUIRE(warned.size() == 1);
  CHECK(warned[0]->figure == "pageable d2h 1 GiB");
  CHECK(warned[0]->reason == "not measured in this run");
}

TEST_CASE("check: bad input is a harness_error (exit 2)", "[check]") {
  hdb_test::temp_dir dir;
  CHECK_THROWS_AS(hdb::check_run(dir.path() / "no-such-run", {}), hdb::harness_error);
  const auto run = write_run(dir.path(), run_spec{});
  fs::remove(run / "meta.json");
  CHECK_THROWS_WITH(hdb::check_run(run, {}), Catch::Matchers::EndsWith("meta.json: missing or unreadable; check needs the node's fingerprint"));
  CHECK_THROWS_AS(hdb::parse_output_format("xml", hdb::check_formats), hdb::harness_error);
  CHECK_THROWS_AS(hdb::parse_output_format("markdown", hdb::check_formats), hdb::harness_error);
  CHECK(hdb::parse_output_format("junit", hdb::check_formats) == hdb::output_format::junit);
}

namespace {

// A small well-formedness check of the XML the junit renderer writes: every tag closed in order,
// attributes quoted, no bare '&' or '<' in text. Returns the names of the elements opened.
std::vector<std::string> xml_elements(const std::string& xml) {
  std::vector<std::string> open, seen;
  std::size_t at = xml.find("?>") + 2;
  while ((at = xml.find_first_of("<&", at)) != std::string::npos) {
    if (xml[at] == '&') {
      const auto end = xml.find(';', at);
      const auto entity = xml.substr(at, end - at + 1);
      REQUIRE((entity == "&amp;" || entity == "&lt;" || entity == "&gt;" || entity == "&quot;"));
      at = end;
      continue;
    }
    const auto end = xml.find('>', at);
    REQUIRE(end != std::string::npos);
    std::string tag = xml.substr(at + 1, end - at - 1);
    REQUIRE(tag.find('<') == std::string::npos);
    REQUIRE(std::count(tag.begin(), tag.end(), '"') % 2 == 0);
    if (tag.starts_with("/")) {
      REQUIRE_FALSE(open.empty());
      CHECK(open.back() == tag.substr(1));
      open.pop_back();
    } else {
      const auto name = tag.substr(0, tag.find_first_of(" /"));
      seen.push_back(name);
      if (!tag.ends_with("/")) open.push_back(name);
    }
    at = end;
  }
  CHECK(open.empty());
  return seen;
}

}  // namespace

TEST_CASE("check: junit and json are well formed and carry every line", "[check]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].gen = 4;
  hdb::compute_process other;
  other.pid = 7;
  other.name = "a&b <copy>";
  other.gpu_uuid = uuid(0);
  spec.others = {other};
  const auto report = hdb::check_run(write_run(f.dir.path(), spec), against(f.set));
  const auto xml = hdb::render_check(report, hdb::output_format::junit);
  const auto elements = xml_elements(xml);
  CHECK(std::count(elements.begin(), elements.end(), "testcase") == static_cast<long>(report.lines.size()));
  CHECK(std::count(elements.begin(), elements.end(), "failure") == report.failed);
  CHECK(report.failed == 2);
  CHECK_THAT(xml, hdb_test::contains_text("tests=\"" + std::to_string(report.lines.size()) + "\" failures=\"2\""));
  CHECK_THAT(xml, hdb_test::contains_text("a&amp;b &lt;copy&gt;"));
  const auto parsed = json::parse(hdb::render_check(report, hdb::output_format::json));
  CHECK(parsed["lines"].size() == report.lines.size());
  CHECK(parsed["summary"]["fail"] == 2);
  CHECK(parsed["summary"]["grade"] == "FAIL");
  CHECK(parsed["exit_code"] == 1);
  CHECK(parsed["reference"]["name"] == "h200");
  const auto& first = parsed["lines"][0];
  CHECK(first["figure"] == "pinned h2d 1 GiB");
  CHECK(first["expected"]["runs"] == 5);
}

namespace {

// The declarations as installed, copy's bandwidth tolerance set to `tolerance`: what an upgraded
// (or downgraded) hdbench judges by.
fs::path schema_with_tolerance(const fs::path& dir, double tolerance) {
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(HDB_TEST_SCHEMA_DIR)) fs::copy_file(entry.path(), dir / entry.path().filename());
  auto copy = nlohmann::ordered_json::parse(hdb::read_text_file(dir / "copy.json"));
  copy["metrics"]["bandwidth"]["tolerance"] = tolerance;
  hdb::atomic_write_file(dir / "copy.json", copy.dump(2));
  return dir;
}

// Every figure line's grade, by GPU and figure, as check and fleet print them.
std::map<std::string, hdb::grade> grades_of(const std::vector<hdb::graded_line>& lines) {
  std::map<std::string, hdb::grade> out;
  for (const auto& line : lines) out[hdb::gpu_text(line.gpus) + " " + line.family + " " + line.figure] = line.result;
  return out;
}

}  // namespace

// issue 37's experiment: a node whose pinned copies read 7 % slow, its check.json written under a
// 3 % tolerance; the installed tolerance then raised to 10 % (and back): check and fleet give the
// node the same grades every time, because both judge by the installed declaration.
TEST_CASE("check and fleet agree after the installed tolerance changes, both ways", "[check][fleet]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.93;
  spec.gpus[0].pinned_d2h *= 0.93;
  const auto run = write_run(f.dir.path(), spec);
  const auto strict = schema_with_tolerance(f.dir.path() / "strict", 0.03);
  const auto lenient = schema_with_tolerance(f.dir.path() / "lenient", 0.10);
  for (const auto& [written, judging, expected] : {std::tuple{strict, lenient, hdb::grade::warn},
                                                   std::tuple{lenient, strict, hdb::grade::fail}}) {
    hdb::check_options made{f.set, 0.05, written};
    hdb::write_check_files(run, hdb::check_run(run, made));
    hdb::check_options judged{f.set, 0.05, judging};
    const auto check = hdb::check_run(run, judged);
    const auto fleet = fleet_of(run, f.set, judging);
    REQUIRE(fleet.nodes.size() == 1);
    const auto by_check = grades_of(check.lines);
    const auto by_fleet = grades_of(fleet.nodes[0].lines);
    CHECK(by_check.at("GPU 0 copy pinned h2d 1 GiB") == expected);
    CHECK(by_fleet == by_check);
    CHECK(fleet.nodes[0].overall() == check.overall());
    CHECK(fleet.nodes[0].failed == check.failed);
    CHECK(fleet.nodes[0].warned == check.warned);
  }
}

// `hdbench check DIR` writes DIR/check.txt and DIR/check.json through the code `hdbench run` uses,
// and fleet grades that check.json as check.txt reads; --no-files writes neither.
TEST_CASE("hdbench check DIR leaves check.txt and check.json, which fleet grades like check", "[check][fleet]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.95;
  const auto run = write_run(f.dir.path(), spec);
  const auto cli = [](std::vector<std::string> args) {
    args.insert(args.begin(), "hdbench");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return hdb::cli_main(static_cast<int>(argv.size()), argv.data());
  };
  CHECK(cli({"check", run.string(), "--reference", f.set.string(), "--no-files", "--format", "json"}) == 1);
  CHECK_FALSE(fs::exists(run / "check.json"));
  CHECK_FALSE(fs::exists(run / "check.txt"));
  CHECK(cli({"check", run.string(), "--reference", f.set.string(), "--format", "junit"}) == 1);
  REQUIRE(fs::exists(run / "check.json"));
  REQUIRE(fs::exists(run / "check.txt"));
  const auto text = hdb::read_text_file(run / "check.txt");
  CHECK_THAT(text, hdb_test::contains_text("FAIL   GPU 0  copy    pinned h2d 1 GiB"));
  const auto written = json::parse(hdb::read_text_file(run / "check.json"));
  CHECK(written["version"] == hdb::check_json_version);
  const auto fleet = fleet_of(run, f.set, HDB_TEST_SCHEMA_DIR);
  const auto check = hdb::check_run(run, against(f.set));
  CHECK(grades_of(fleet.nodes[0].lines) == grades_of(check.lines));
  CHECK(fleet.nodes[0].failed == 1);
}

// A check.json made before the kind had a set (peaks only), or against another set, is graded
// again by the fleet that has this kind's set, from the run's results.csv; without a results.csv
// its grades stand, and the kind's notes say so.
TEST_CASE("fleet checks again a check.json made without the kind's set", "[check][fleet]") {
  const fixture_set f;
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.95;  // FAIL against the set; 83 % of the Gen5 peak PASSes peaks only
  const auto run = write_run(f.dir.path(), spec);
  hdb::check_options peaks_only{f.dir.path() / "no-sets", 0.05, HDB_TEST_SCHEMA_DIR};
  fs::create_directories(f.dir.path() / "no-sets");
  hdb::write_check_files(run, hdb::check_run(run, peaks_only));
  const auto fleet = fleet_of(run, f.set, HDB_TEST_SCHEMA_DIR);
  CHECK(fleet.kinds.at(0).regraded == 1);
  CHECK(fleet.nodes.at(0).failed == 1);
  fs::remove(run / "results.csv");
  const auto kept = fleet_of(run, f.set, HDB_TEST_SCHEMA_DIR);
  CHECK(kept.nodes.at(0).failed == 0);
  CHECK_THAT(kept.kinds.at(0).notes.back(), hdb_test::contains_text("their check.json grades stand"));
}

// A figure the set's runs measured too seldom for a band WARNs, and says why: never a PASS
// without a band.
TEST_CASE("check: a figure without a band WARNs", "[check]") {
  hdb_test::temp_dir dir;
  // A set of one run: its kind, its members, no band for anything.
  run_spec member;
  member.run_id = "member1";
  const auto set = dir.path() / "reference" / "h200";
  const auto member_dir = write_run(set / "runs", member);
  const std::vector<hdb::indexed_run> members{hdb::index_run(hdb::load_run(member_dir))};
  hdb::write_noise_model(set / "noise.json", hdb::learn_noise_model(members, hdb::kind_of(*members.front().run.meta)));
  const auto report = hdb::check_run(write_run(dir.path(), run_spec{}), against(set));
  const auto* line = find_line(report, "pinned h2d 1 GiB", 0);
  REQUIRE(line != nullptr);
  CHECK(line->result == hdb::grade::warn);
  CHECK_THAT(line->reason, hdb_test::contains_text("no band"));
}

namespace {

// A run's meta.json with this driver and kernel recorded, as a copy of a run edited by hand.
void set_fingerprint(const fs::path& run_dir, const std::string& driver, const std::string& kernel) {
  auto meta = *hdb::read_meta(run_dir / "meta.json");
  meta["node"]["driver_release"] = driver;
  meta["host"]["kernel"] = kernel;
  hdb::write_meta(run_dir / "meta.json", meta);
}

}  // namespace

TEST_CASE("check: beside a FAIL, what about the node differs from the set's runs, in check.txt and check.json", "[check][what_changed]") {
  const fixture_set f;
  // The set's five machines: one driver, and one of them on another kernel.
  for (int member = 1; member <= 5; ++member) {
    set_fingerprint(f.set / "runs" / ("member" + std::to_string(member)), "580.95.05", member == 5 ? "6.8.0-51" : "6.8.0-49");
  }
  run_spec spec;
  spec.gpus[0].pinned_h2d *= 0.95;
  const auto run = write_run(f.dir.path(), spec);
  set_fingerprint(run, "580.159.04", "6.8.0-51");
  const std::string driver = "driver 580.95.05 -> 580.159.04 (the 5 runs of the set agree)";

  auto report = hdb::check_run(run, against(f.set));
  REQUIRE(report.failed == 1);
  const auto text = describe_lines(report);
  INFO(text);
  // The kernel is one the set's machines run: not what changed.
  CHECK(hdb_test::contains(text, "\nwhat changed: " + driver + "\n" + hdb::summary_line(report) + "\n"));
  const auto doc = json::parse(hdb::render_check(report, hdb::output_format::json));
  REQUIRE(doc["what_changed"].size() == 1);
  CHECK(doc["what_changed"][0]["field"] == "driver");
  CHECK(doc["what_changed"][0]["baselines"] == json::parse(R"([{"value": "580.95.05", "runs": 5}])"));
  hdb::write_check_files(run, report);
  CHECK(hdb_test::contains(hdb::read_text_file(run / "check.txt"), "what changed: " + driver));
  CHECK(json::parse(hdb::read_text_file(run / "check.json")).contains("what_changed"));

  SECTION("a kernel none of the set's machines runs: the set is not uniform in it, and says so") {
    set_fingerprint(run, "580.159.04", "6.8.0-52");
    CHECK(hdb_test::contains(describe_lines(hdb::check_run(run, against(f.set))),
                             driver + "; kernel 6.8.0-49 -> 6.8.0-52 (runs of the set differ: 6.8.0-49 in 4, 6.8.0-51 in 1)\n"));
  }
  SECTION("the fingerprint of one of the set's machines: nothing beside the FAIL") {
    set_fingerprint(run, "580.95.05", "6.8.0-49");
    report = hdb::check_run(run, against(f.set));
    CHECK(report.failed == 1);
    CHECK(report.what_changed.empty());
    CHECK_FALSE(json::parse(hdb::render_check(report, hdb::output_format::json)).contains("what_changed"));
  }
  SECTION("no FAIL: the fingerprint is not news") {
    run_spec healthy;
    healthy.run_id = "healthy";
    const auto fine = write_run(f.dir.path(), healthy);
    set_fingerprint(fine, "580.159.04", "6.8.0-52");
    report = hdb::check_run(fine, against(f.set));
    CHECK(report.failed == 0);
    CHECK_FALSE(hdb_test::contains(describe_lines(report), "what changed"));
    CHECK_FALSE(json::parse(hdb::render_check(report, hdb::output_format::json)).contains("what_changed"));
  }
}
