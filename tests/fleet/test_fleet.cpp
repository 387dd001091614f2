// hdbench fleet's pure parts: the leave-one-out band and its k, Slurm's hostlist, and the grading
// of small synthetic fleets written as check.json + meta.json (the committed members as a fleet,
// and the 1,000-node scale, are the Python tests beside this file).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch_compat.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/verdict/fleet.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json meta_of(const std::string& host, int gpus) {
  json list = json::array();
  for (int g = 0; g < gpus; ++g) {
    list.push_back({{"index", g},
                    {"name", "NVIDIA Test GPU"},
                    {"pcie", {{"gen_max", 5}, {"width_max", 16}, {"gen_current", 5}, {"width_current", 16}}},
                    {"nvlink", {{"links_active", 0}}}});
  }
  return {{"run_id", "20261202T000000Z-" + host}, {"node", {{"hostname", host}, {"gpus", list}}}};
}

// One figure line as check writes it into check.json (graded_line's own JSON: the real door),
// peaks only (no band), of copy's pinned h2d check unless `label` names another figure.
json figure_line(int gpu, double value, double tolerance = 0.03, bool host_bound = false,
                 const std::string& label = "pinned h2d 1 GiB", hdb::better direction = hdb::better::higher) {
  hdb::graded_line line;
  line.basis = hdb::grade_basis::none;
  line.gpus = {gpu};
  line.family = "copy";
  line.figure = label;
  line.value = value;
  line.unit = "GB/s";
  line.direction = direction;
  line.rule = {tolerance, host_bound};
  line.key = hdb::metric_key{"copy", "bandwidth", gpu, 1,
                             {{"api", "async"}, {"direction", "h2d"}, {"host_kind", "pinned"}, {"size_bytes", "1073741824"},
                              {"streams", "1"}},
                             "bandwidth"};
  if (label == "pinned h2d 1 GiB") line.check = label;
  else line.key->case_name = label;  // another figure: another row
  line.reason = "peaks only";
  return hdb::to_json(line);
}

json health_line(int gpu, const std::string& grade) {
  hdb::graded_line line;
  line.result = *hdb::grade_from_string(grade);
  line.basis = hdb::grade_basis::health;
  line.gpus = {gpu};
  line.family = "health";
  line.figure = "PCIe link";
  line.reading = grade == "FAIL" ? "Gen4 x16" : "Gen5 x16";
  line.reason = "as read";
  return hdb::to_json(line);
}

// check.json as check writes it (this hdbench's version), without a reference set.
json check_json(const json& lines) { return {{"version", hdb::check_json_version}, {"reference", nullptr}, {"lines", lines}}; }

struct fleet_dir {
  fs::path root;
  explicit fleet_dir(const std::string& name) : root(fs::temp_directory_path() / ("hdb_fleet_" + name)) {
    fs::remove_all(root);
    fs::create_directories(root / "no-sets");
    // copy's real declaration gives the figures their direction, as installed beside hdbench.
    fs::create_directories(root / "schema");
    const auto source = fs::path(HDB_TEST_FIXTURES).parent_path().parent_path().parent_path();  // tests/fleet/fixtures
    fs::copy_file(source / "bench" / "copy" / "schema.json", root / "schema" / "copy.json");
  }
  ~fleet_dir() { fs::remove_all(root); }
  fleet_dir(const fleet_dir&) = delete;
  fleet_dir& operator=(const fleet_dir&) = delete;

  fs::path node(const std::string& host, const json& lines, int gpus = 1, bool with_check = true) const {
    const auto dir = root / host / ("20261202T000000Z-" + host);
    fs::create_directories(dir);
    std::ofstream(dir / "meta.json") << meta_of(host, gpus).dump();
    if (with_check) std::ofstream(dir / "check.json") << check_json(lines).dump();
    return dir;
  }
  // trailing_slash: each DIR as a shell glob `nodes/*/` passes it, "gpu01/".
  [[nodiscard]] hdb::fleet_report grade(bool trailing_slash = false) const {
    hdb::fleet_options options;
    options.reference = root / "no-sets";
    options.plots = false;
    options.schema_dir = root / "schema";
    std::vector<fs::path> args;
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.path().filename() == "no-sets" || entry.path().filename() == "schema") continue;
      args.push_back(trailing_slash ? entry.path() / "" : entry.path());
    }
    return hdb::grade_fleet(hdb::fleet_run_dirs(args), options);
  }
};

// A fleet of `n` one-GPU nodes whose pinned h2d reads 55.3 GB/s +- 0.2 %, node `slow` times `factor`.
void healthy_fleet(const fleet_dir& fleet, int n, int slow = -1, double factor = 1) {
  for (int i = 0; i < n; ++i) {
    const double jitter = 1 + 0.002 * std::sin(1.7 * i);
    const double value = 55.3 * (i == slow ? factor : jitter);  // the planted node off the exact centre
    char host[16];
    std::snprintf(host, sizeof host, "gpu%02d", i + 1);
    fleet.node(host, json::array({figure_line(0, value), health_line(0, "PASS")}));
  }
}

// A copy, not a reference: callers pass a temporary report or temporary strings, and g++ 13's
// -Wdangling-reference cannot tell which of them a returned reference would point into.
hdb::graded_line line_named(const hdb::fleet_report& report, const std::string& node, const std::string& family) {
  for (const auto& n : report.nodes) {
    if (n.name != node) continue;
    for (const auto& l : n.lines) {
      if (l.family == family) return l;
    }
  }
  throw std::runtime_error("no line " + family + " on " + node);
}

}  // namespace

TEST_CASE("fleet band k: Bonferroni over node x figure tests, t with the MAD's degrees of freedom") {
  // 1,000 peers: near the normal quantile at 1 - 0.05 / (2 x 104,000) (about 5.04), a little more.
  const double k = hdb::fleet_band_k(0.05, 104000, 999);
  CHECK(k > 5.0);
  CHECK(k < 5.4);
  // Few peers: far wider (a MAD of 11 values says little), and more tests widen it.
  CHECK(hdb::fleet_band_k(0.05, 156, 11) > 2 * hdb::fleet_band_k(0.05, 156, 999));
  CHECK(hdb::fleet_band_k(0.05, 1000, 100) > hdb::fleet_band_k(0.05, 10, 100));
  CHECK(hdb::fleet_band_k(0.05, 0, 10) == 0);
}

TEST_CASE("leave-one-out bands: the others' median and 1.4826 MAD of ln(value), floored") {
  const std::vector<double> values{1.0, 1.01, 0.99, 1.02, 0.98, 2.0};
  const auto bands = hdb::leave_one_out_bands(values, 3.0, 0.0);
  REQUIRE(bands.size() == values.size());
  // The outlier does not judge itself: its band comes from the five others (median 1.0).
  REQUIRE(bands[5]);
  CHECK(bands[5]->centre == hdb_test::Approx(1.0));
  CHECK(bands[5]->peers == 5);
  CHECK(bands[5]->high < 2.0);
  // Node 0's centre is the median of {1.01, 0.99, 1.02, 0.98, 2.0} = 1.01; its MAD of ln values.
  REQUIRE(bands[0]);
  CHECK(bands[0]->centre == hdb_test::Approx(1.01));
  std::vector<double> dev;
  for (const double v : {1.01, 0.99, 1.02, 0.98, 2.0}) dev.push_back(std::abs(std::log(v) - std::log(1.01)));
  std::sort(dev.begin(), dev.end());
  CHECK(bands[0]->spread == hdb_test::Approx(1.4826 * dev[2]));
  CHECK(bands[0]->low == hdb_test::Approx(1.01 * std::exp(-3.0 * bands[0]->spread)));
  // The floor: identical values still have a band of width floor x k.
  const auto flat = hdb::leave_one_out_bands(std::vector<double>(6, 4.0), 2.0, 0.001);
  REQUIRE(flat[0]);
  CHECK(flat[0]->spread == hdb_test::Approx(0.001));
  CHECK(flat[0]->high == hdb_test::Approx(4.0 * std::exp(0.002)));
  // Too few peers: no band.
  CHECK_FALSE(hdb::leave_one_out_bands({1.0, 1.0, 1.0}, 3.0)[0]);
  // Even and odd counts agree with a direct median of the others.
  const std::vector<double> seven{3, 1, 4, 1.5, 5, 9, 2.6};
  const auto b7 = hdb::leave_one_out_bands(seven, 1.0, 0.0);
  for (std::size_t i = 0; i < seven.size(); ++i) {
    std::vector<double> others;
    for (std::size_t j = 0; j < seven.size(); ++j) {
      if (j != i) others.push_back(std::log(seven[j]));
    }
    std::sort(others.begin(), others.end());
    const double median = (others[2] + others[3]) / 2;
    REQUIRE(b7[i]);
    CHECK(std::log(b7[i]->centre) == hdb_test::Approx(median));
  }
}

TEST_CASE("slurm hostlist: equal prefix and digit count share brackets") {
  CHECK(hdb::slurm_hostlist({"gpu03", "gpu01", "gpu02", "gpu07", "login1"}) == "gpu[01-03,07],login1");
  CHECK(hdb::slurm_hostlist({"gpu05"}) == "gpu05");
  CHECK(hdb::slurm_hostlist({"vm", "vm"}) == "vm");
  CHECK(hdb::slurm_hostlist({"a9", "a10", "a11"}) == "a[10-11],a9");
  CHECK(hdb::slurm_hostlist({"n001", "n002", "n004", "n005", "n006"}) == "n[001-002,004-006]");
  CHECK(hdb::slurm_hostlist({}).empty());
}

TEST_CASE("fleet: peers grade with check's rule, tolerance boundary") {
  SECTION("healthy fleet: 0 FAIL, exit 0") {
    fleet_dir fleet("healthy");
    healthy_fleet(fleet, 12);
    const auto report = fleet.grade();
    CHECK(report.exit_code() == 0);
    CHECK(report.failed_nodes() == 0);
    REQUIRE(report.kinds.size() == 1);
    CHECK(report.kinds[0].basis == hdb::grade_basis::peers);
    CHECK(report.kinds[0].tests == 12);
  }
  SECTION("5 % slower beyond a 3 % tolerance: FAIL; the others are not dragged") {
    fleet_dir fleet("slow");
    healthy_fleet(fleet, 12, 3, 0.95);
    const auto report = fleet.grade();
    CHECK(report.exit_code() == 1);
    REQUIRE(report.failing_hostnames() == std::vector<std::string>{"gpu04"});
    CHECK(report.nodes.front().name == "gpu04");
    const auto line = line_named(report, "gpu04", "copy");
    CHECK(line.result == hdb::grade::fail);
    CHECK_THAT(line.reason, hdb_test::contains_text("slower than its peers' centre 55.3 by 5.0 %"));
    CHECK(hdb::slurm_hostlist(report.failing_hostnames()) == "gpu04");
  }
  SECTION("2.9 % slower: outside the band but within the 3 % tolerance, WARN; 3.1 %: FAIL") {
    for (const auto& [factor, expected] : {std::pair{0.971, hdb::grade::warn}, std::pair{0.969, hdb::grade::fail}}) {
      fleet_dir fleet("boundary");
      healthy_fleet(fleet, 40, 7, factor);
      const auto report = fleet.grade();
      CHECK(line_named(report, "gpu08", "copy").result == expected);
    }
  }
  SECTION("faster: WARN, and PASS on a host line") {
    fleet_dir fleet("faster");
    healthy_fleet(fleet, 12, 0, 1.2);
    CHECK(line_named(fleet.grade(), "gpu01", "copy").result == hdb::grade::warn);
  }
  SECTION("a health FAIL stays FAIL") {
    fleet_dir fleet("health");
    healthy_fleet(fleet, 6);
    fleet.node("gpu07", json::array({figure_line(0, 55.3), health_line(0, "FAIL")}));
    const auto report = fleet.grade();
    CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu07"});
    CHECK(line_named(report, "gpu07", "health").result == hdb::grade::fail);
  }
}

TEST_CASE("fleet: a fault every node shares still FAILs on its link's peak, whatever the peers say") {
  // Five nodes whose pinned h2d reads a third of PCIe Gen5's 63 GB/s: check (peaks, no set) FAILs
  // each; their peers read alike, and five peers' band is wide besides.
  fleet_dir fleet("shared-fault");
  const auto against_peak = [](double value, hdb::grade result) {
    auto line = hdb::graded_line_from_json(figure_line(0, value));
    line.basis = hdb::grade_basis::peak;
    line.result = result;
    line.peak = hdb::peak_ref{63.0, 1, "PCIe per direction, GPU 0"};
    line.percent_of_peak = value / 63.0;
    line.reason = "as check graded it against the peak";
    if (result == hdb::grade::fail) {  // the node's run measured it 3 times
      line.confirmed = hdb::confirmation::confirmed;
      for (int attempt = 1; attempt <= 3; ++attempt) line.attempts.push_back({attempt, value, hdb::grade::fail});
    }
    return hdb::to_json(line);
  };
  for (int i = 0; i < 5; ++i) {
    fleet.node("gpu0" + std::to_string(i + 1), json::array({against_peak(22.2 * (1 + 0.001 * i), hdb::grade::fail),
                                                             health_line(0, "PASS")}));
  }
  auto report = fleet.grade();
  CHECK(report.exit_code() == 1);
  CHECK(report.failed_nodes() == 5);
  const auto line = line_named(report, "gpu03", "copy");
  CHECK(line.result == hdb::grade::fail);
  CHECK_THAT(line.reason, hdb_test::contains_text("as check graded it against the peak; PASS against its 4 peers"));
  // What Prometheus counts and fleet.json shows: the node's confirmation and tries, not the peers' grades of them.
  CHECK(line.confirmed == hdb::confirmation::confirmed);
  REQUIRE(line.attempts.size() == 3);
  CHECK(std::all_of(line.attempts.begin(), line.attempts.end(), [](const auto& a) { return a.result == hdb::grade::fail; }));
  REQUIRE(line.band);  // the fleet's figure still draws it, in its peers' band

  SECTION("a node that passes its peak is graded by its peers alone") {
    fleet_dir healthy("shared-healthy");
    for (int i = 0; i < 5; ++i) {
      healthy.node("gpu0" + std::to_string(i + 1), json::array({against_peak(55.3 * (1 + 0.001 * i), hdb::grade::pass),
                                                                 health_line(0, "PASS")}));
    }
    report = healthy.grade();
    CHECK(report.exit_code() == 0);
    CHECK(line_named(report, "gpu03", "copy").basis == hdb::grade_basis::peers);
  }
}

TEST_CASE("fleet: a node whose run did not finish is a FAIL of its own, the others still report") {
  fleet_dir fleet("unfinished");
  healthy_fleet(fleet, 6);
  fleet.node("gpu08", json::array(), 1, false);        // meta.json, no check.json
  fs::create_directories(fleet.root / "gpu09");        // never started
  const auto report = fleet.grade();
  CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu08", "gpu09"});
  CHECK(report.nodes.size() == 8);
  CHECK_THAT(line_named(report, "gpu08", "node").reason, hdb_test::contains_text("no check.json: the run did not finish"));
  CHECK_THAT(line_named(report, "gpu09", "node").reason, hdb_test::contains_text("the run did not start"));
  // The same fleet named as `nodes/*/` names its nodes alike: a node without a run directory is in the drain list.
  CHECK(fleet.grade(true).failing_hostnames() == std::vector<std::string>{"gpu08", "gpu09"});
}

TEST_CASE("fleet: --nodelist names a node by Slurm's name for it (meta.json host.slurm_node_name), else its hostname") {
  fleet_dir fleet("slurm_names");
  // Six slurmd on one host "vm" (their hostnames repeat), n3's link a health FAIL; gpu09 ran outside
  // Slurm and FAILs too; n8's task never started (its directory only, named by Slurm as the batch script does).
  for (int i = 1; i <= 6; ++i) {
    const std::string name = "n" + std::to_string(i);
    const auto dir = fleet.root / name / ("20261202T000000Z-vm-" + name);
    fs::create_directories(dir);
    auto meta = meta_of("vm", 1);
    meta["host"] = {{"hostname", "vm"}, {"slurm_node_name", name}};
    std::ofstream(dir / "meta.json") << meta.dump();
    std::ofstream(dir / "check.json") << check_json(json::array({figure_line(0, 55.3), health_line(0, i == 3 ? "FAIL" : "PASS")})).dump();
  }
  fleet.node("gpu09", json::array({figure_line(0, 55.3), health_line(0, "FAIL")}));
  fs::create_directories(fleet.root / "n8");
  const auto report = fleet.grade();
  CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu09", "n8", "vm"});
  CHECK(report.failing_slurm_nodes() == std::vector<std::string>{"gpu09", "n3", "n8"});
  const auto document = hdb::to_json(report);
  CHECK(document["summary"]["nodelist"] == "gpu09,n[3,8]");
  CHECK(document["summary"]["failing_hostnames"] == json::array({"gpu09", "n8", "vm"}));
  for (const auto& node : document["nodes"]) {
    if (node["hostname"] == "vm") CHECK(node["slurm_node_name"].get<std::string>().starts_with("n"));
    else CHECK(node["slurm_node_name"].is_null());
  }
}

TEST_CASE("fleet: nodes by kind, GPUs apart, repeated hostnames named by run directory") {
  fleet_dir fleet("kinds");
  for (int i = 0; i < 8; ++i) {
    const std::string host = "n" + std::to_string(i);
    // Two GPUs; GPU 1 of n5 slow. GPU 1 reads 10 % above GPU 0 everywhere: judged against its own index.
    fleet.node(host, json::array({figure_line(0, 50 * (1 + 0.001 * i)), figure_line(1, (i == 5 ? 0.9 : 1) * 55)}), 2);
  }
  for (int i = 0; i < 4; ++i) {
    const auto dir = fleet.root / ("single" + std::to_string(i)) / ("run" + std::to_string(i));
    fs::create_directories(dir);
    std::ofstream(dir / "meta.json") << meta_of("vm", 1).dump();
    std::ofstream(dir / "check.json") << check_json(json::array({figure_line(0, 40)})).dump();
  }
  const auto report = fleet.grade();
  CHECK(report.kinds.size() == 2);
  CHECK(report.failing_hostnames() == std::vector<std::string>{"n5"});
  const auto& worst = report.nodes.front();
  CHECK(worst.name == "n5");
  CHECK(worst.lines.front().gpus == std::vector<int>{1});
  int named_by_dir = 0;
  for (const auto& node : report.nodes) named_by_dir += node.name.starts_with("vm (run");
  CHECK(named_by_dir == 4);
  const auto junit = hdb::render_fleet(report, hdb::output_format::junit);
  CHECK_THAT(junit, hdb_test::contains_text("tests=\"12\" failures=\"1\""));
  const auto text = hdb::render_fleet(report, hdb::output_format::text);
  CHECK_THAT(text, hdb_test::contains_text("1 of 12 nodes FAIL (n5)"));
}

namespace {

// One run of node `host` whose GPU has `uuid` (what tells two runs of one machine from two
// machines of one hostname), started at `utc` ("2026-12-02T01:00:00Z"), pinned h2d at `value`.
void node_run(const fleet_dir& fleet, const std::string& host, const std::string& uuid, const std::string& utc, double value,
              const std::string& link = "PASS") {
  auto meta = meta_of(host, 1);
  meta["node"]["gpus"][0]["uuid"] = uuid;
  std::string compact = utc;
  std::erase_if(compact, [](char c) { return c == '-' || c == ':'; });
  meta["run_id"] = compact + "-" + host;
  meta["started_utc"] = utc;
  const auto dir = fleet.root / host / meta["run_id"].get<std::string>();
  fs::create_directories(dir);
  std::ofstream(dir / "meta.json") << meta.dump();
  std::ofstream(dir / "check.json") << check_json(json::array({figure_line(0, value), health_line(0, link)})).dump();
}

}  // namespace

TEST_CASE("fleet: a node run again is one node, graded on its latest run with its earlier runs as earlier tries") {
  fleet_dir fleet("again");
  healthy_fleet(fleet, 8);
  SECTION("slow on its first run only: a transient, the fleet passes") {
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:00:00Z", 55.3 * 0.95);
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:05:00Z", 55.3);
    const auto report = fleet.grade();
    CHECK(report.nodes.size() == 9);
    CHECK(report.exit_code() == 0);
    const auto line = line_named(report, "gpu09", "copy");
    CHECK(line.result == hdb::grade::warn);
    CHECK(line.confirmed == hdb::confirmation::transient);
    CHECK_THAT(line.reason, hdb_test::contains_text("first try 52.5 GB/s, confirmed 55.3 GB/s: a transient"));
    const auto node = std::find_if(report.nodes.begin(), report.nodes.end(), [](const hdb::fleet_node& n) { return n.name == "gpu09"; });
    REQUIRE(node != report.nodes.end());
    CHECK(node->run == "20261202T010500Z-gpu09");
    CHECK(node->earlier_runs == std::vector<std::string>{"20261202T010000Z-gpu09"});
    REQUIRE(report.kinds.size() == 1);
    CHECK_THAT(hdb::render_fleet(report, hdb::output_format::text),
               hdb_test::contains_text("gpu09: graded on its latest run 20261202T010500Z-gpu09, with 20261202T010000Z-gpu09 as its "
                                       "earlier tries"));
  }
  SECTION("slow on both runs: FAIL, confirmed") {
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:05:00Z", 55.3 * 0.95);  // given first, measured later
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:00:00Z", 55.3 * 0.94);
    const auto report = fleet.grade();
    CHECK(report.nodes.size() == 9);
    CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu09"});
    const auto line = line_named(report, "gpu09", "copy");
    CHECK(line.result == hdb::grade::fail);
    CHECK(line.confirmed == hdb::confirmation::confirmed);
    CHECK_THAT(line.reason, hdb_test::contains_text("confirmed: failed on every try (52 GB/s, 52.5 GB/s)"));
  }
  SECTION("a health FAIL of the earlier run stays the node's FAIL") {
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:00:00Z", 55.3, "FAIL");
    node_run(fleet, "gpu09", "GPU-9", "2026-12-02T01:05:00Z", 55.3);
    const auto report = fleet.grade();
    CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu09"});
    const auto line = line_named(report, "gpu09", "health");
    CHECK(line.result == hdb::grade::fail);
    CHECK_THAT(line.reason, hdb_test::contains_text("in the earlier run 20261202T010000Z-gpu09: "));
  }
  SECTION("two machines of one hostname stay two nodes") {
    node_run(fleet, "vm", "GPU-a", "2026-12-02T01:00:00Z", 55.3);
    node_run(fleet, "vm", "GPU-b", "2026-12-02T01:05:00Z", 55.3);
    const auto report = fleet.grade();
    CHECK(report.nodes.size() == 10);
    for (const auto& node : report.nodes) CHECK(node.earlier_runs.empty());
  }
}

TEST_CASE("fleet: bad input") {
  CHECK_THROWS_AS(hdb::fleet_run_dirs({"/no/such/dir"}), hdb::harness_error);
  CHECK_THROWS_AS(hdb::grade_fleet({}, {}), hdb::harness_error);
  CHECK_THROWS_AS(hdb::parse_output_format("xml", hdb::fleet_formats), hdb::harness_error);
  CHECK(hdb::kind_dir_name(json{{"gpu_name", "NVIDIA H200"}, {"gpus", 1}}) == "h200");
  CHECK(hdb::kind_dir_name(json{{"gpu_name", "NVIDIA H100 80GB HBM3"}, {"gpus", 8}}) == "h100-80gb-hbm3-x8");
}

TEST_CASE("fleet: a figure's direction is its line's, and a check.json of another version is refused") {
  // 12 one-GPU nodes of one figure; node 4 (gpu13) reads 5 % higher.
  const auto graded = [](const std::string& name, hdb::better direction, bool older, const std::string& schema_dir = "schema") {
    fleet_dir fleet(name);
    for (int i = 0; i < 12; ++i) {
      auto line = figure_line(0, (i == 3 ? 1.05 : 1 + 0.002 * std::sin(1.7 * i)) * 10, 0.03, false, "pinned h2d 1 GiB", direction);
      const auto dir = fleet.node("gpu" + std::to_string(10 + i), json::array({line}));
      if (older) {  // check.json of an older hdbench: no version, and lines without key, check and basis
        line.erase("key");
        line.erase("check");
        line.erase("basis");
        std::ofstream(dir / "check.json") << json{{"reference", nullptr}, {"lines", json::array({line})}}.dump();
      }
    }
    hdb::fleet_options options;
    options.reference = fleet.root / "no-sets";
    options.plots = false;
    options.schema_dir = fleet.root / schema_dir;
    std::vector<fs::path> args;
    for (int i = 0; i < 12; ++i) args.push_back(fleet.root / ("gpu" + std::to_string(10 + i)));
    return hdb::grade_fleet(hdb::fleet_run_dirs(args), options);
  };
  SECTION("lower is better, as the line says: 5 % higher FAILs") {
    const auto report = graded("better_lower", hdb::better::lower, false);
    CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu13"});
    CHECK(line_named(report, "gpu13", "copy").direction == hdb::better::lower);
    CHECK(line_named(report, "gpu13", "copy").basis == hdb::grade_basis::peers);
  }
  SECTION("higher is better: 5 % higher is better than the peers, a WARN") {
    const auto report = graded("better_higher", hdb::better::higher, false);
    CHECK(report.failed_nodes() == 0);
    CHECK(line_named(report, "gpu13", "copy").result == hdb::grade::warn);
  }
  SECTION("an older check.json: one line naming the file, its version and what to run, and no grades") {
    try {
      (void)graded("older", hdb::better::lower, true);
      FAIL("an older check.json was graded");
    } catch (const hdb::harness_error& e) {
      CHECK_THAT(std::string(e.what()), hdb_test::contains_text("gpu10/check.json: check.json version 1 (no \"version\"); this hdbench "
                                                                "reads version 2: run `hdbench check "));
    }
  }
  SECTION("no declaration installed: the check.json's tolerance judges, and a FAIL says so") {
    const auto report = graded("no_schema", hdb::better::lower, false, "no-schema");
    CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu13"});
    CHECK_THAT(line_named(report, "gpu13", "copy").reason, hdb_test::contains_text("no schema/copy.json beside this hdbench"));
  }
}

TEST_CASE("fleet_plot.json: what the figures draw, per figure one entry per node x GPU with a band") {
  fleet_dir fleet("plot_input");
  healthy_fleet(fleet, 12, 3, 0.95);
  fleet.node("gpu13", json::array(), 1, false);  // no check.json: a row of the heatmap, no dot
  fleet.node("gpu14", json::array({figure_line(0, 55.3), health_line(0, "FAIL")}));  // its health FAIL: no cell
  const auto report = fleet.grade();
  const auto plot = hdb::fleet_plot_json(report);
  CHECK(plot["fleet_plot_version"] == 2);
  const auto& names = plot["nodes"]["name"];
  REQUIRE(names.size() == 14);
  CHECK(names[0] == report.nodes[0].name);  // report order: worst first
  CHECK(plot["nodes"]["grade"][0] == "FAIL");
  // Why a node FAILs where no dot or cell shows it; "" where its dots do (gpu04) or it passed.
  REQUIRE(plot["nodes"]["reason"].size() == 14);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& reason = plot["nodes"]["reason"][i];
    if (names[i] == "gpu13") CHECK(reason == "no check.json: the run did not finish");
    else if (names[i] == "gpu14") CHECK(reason == "GPU 0 health PCIe link: as read");
    else CHECK(reason == "");
  }
  REQUIRE(plot["figures"].size() == 1);
  const auto& figure = plot["figures"][0];
  CHECK(figure["family"] == "copy");
  CHECK(figure["figure"] == "pinned h2d 1 GiB");
  CHECK(figure["unit"] == "GB/s");
  for (const char* column : {"node", "gpu", "grade", "value", "low", "high", "centre", "rule"}) CHECK(figure[column].size() == 13);
  // One rule judged every line: listed once, as fleet.json's lines hold it.
  REQUIRE(figure["rules"].size() == 1);
  const auto judged = line_named(report, "gpu04", "copy").rule;
  REQUIRE(judged.tolerance);
  CHECK(figure["rules"][0] == json({{"better", "higher"}, {"tolerance", *judged.tolerance}, {"host_bound", judged.host_bound}}));
  int fails = 0;
  for (std::size_t j = 0; j < 13; ++j) {
    const auto& node = report.nodes[figure["node"][j].get<std::size_t>()];
    CHECK(node.name != "gpu13");
    CHECK(figure["gpu"][j] == "GPU 0");
    CHECK(figure["rule"][j] == 0);
    const auto line = line_named(report, node.name, "copy");
    CHECK(figure["grade"][j] == std::string(hdb::to_string(line.result)));
    // 6 significant digits: short in the file, a part in a million off
    CHECK(figure["value"][j].get<double>() == hdb_test::Approx(*line.value).epsilon(1e-6));
    CHECK(figure["low"][j].get<double>() == hdb_test::Approx(line.band->low).epsilon(1e-6));
    CHECK(figure["value"][j].dump().size() <= 8);
    if (figure["grade"][j] == "FAIL") {
      ++fails;
      CHECK(node.name == "gpu04");
    }
  }
  CHECK(fails == 1);
}

TEST_CASE("fleet_plot.json: lines of one figure judged by different tolerances keep a rule each") {
  // Nodes whose check.json froze other rules (hdbench versions that declared other tolerances):
  // the heatmap weighs each line by its own rule, so no two of these may merge.
  hdb::fleet_report report;
  const std::vector<std::pair<std::optional<double>, bool>> rules = {{0.03, false}, {0.05, false}, {0.03, true}, {std::nullopt, false},
                                                                    {0.03, false}};
  for (std::size_t i = 0; i < rules.size(); ++i) {
    hdb::fleet_node node;
    node.name = "gpu0" + std::to_string(i + 1);
    auto line = hdb::graded_line_from_json(figure_line(0, 55.3));
    line.band = hdb::figure_band{54.7, 56.2, 55.4, 6, 0.01};
    line.rule = {rules[i].first, rules[i].second};
    node.lines.push_back(line);
    report.nodes.push_back(std::move(node));
  }
  const auto plot = hdb::fleet_plot_json(report);
  REQUIRE(plot["figures"].size() == 1);
  const auto& figure = plot["figures"][0];
  CHECK(figure["rule"] == json({0, 1, 2, 3, 0}));
  REQUIRE(figure["rules"].size() == 4);
  CHECK(figure["rules"][1]["tolerance"] == 0.05);
  CHECK(figure["rules"][2]["host_bound"] == true);
  CHECK(figure["rules"][3]["tolerance"].is_null());
}

TEST_CASE("fleet: the spread floor and the band's k, pinned by value") {
  // Identical values: the default floor (0.1 %) is the spread, exactly.
  const auto flat = hdb::leave_one_out_bands(std::vector<double>(6, 4.0), 2.0);
  REQUIRE(flat[0]);
  CHECK(flat[0]->spread == hdb_test::Approx(0.001).epsilon(1e-9));
  CHECK(flat[0]->low == hdb_test::Approx(4.0 * std::exp(-0.002)).epsilon(1e-12));
  // ln(value) = d x (-5..5): the middle one's others are +-d .. +-5d, MAD 3d. A spread of 0.09 %
  // is raised to the floor, 0.11 % stays.
  const auto spread_of = [](double spread) {
    const double d = spread / (1.4826 * 3);
    std::vector<double> values;
    for (int i = -5; i <= 5; ++i) values.push_back(std::exp(d * i));
    return hdb::leave_one_out_bands(values, 1.0)[5]->spread;
  };
  CHECK(spread_of(0.0009) == hdb_test::Approx(0.001).epsilon(1e-9));
  CHECK(spread_of(0.0011) == hdb_test::Approx(0.0011).epsilon(1e-6));
  // k = t(1 - alpha / (2 tests), 0.37 (peers - 1)) x sqrt(1 + pi / (2 peers)), at three points.
  CHECK(hdb::fleet_band_k(0.05, 156, 11) == hdb_test::Approx(13.881471861).epsilon(1e-8));
  CHECK(hdb::fleet_band_k(0.05, 12, 11) == hdb_test::Approx(6.750534784).epsilon(1e-8));
  CHECK(hdb::fleet_band_k(0.05, 104000, 999) == hdb_test::Approx(5.129034495).epsilon(1e-8));
  // fewer than 3 others: no band; 3: a band.
  CHECK_FALSE(hdb::leave_one_out_bands({1.0, 1.0, 1.0}, 3.0)[0]);
  CHECK(hdb::leave_one_out_bands({1.0, 1.0, 1.0, 1.0}, 3.0)[0]);
}

TEST_CASE("fleet: a node that wrote results.csv but no check.json (it hung) is a FAIL of its own") {
  fleet_dir fleet("hung");
  healthy_fleet(fleet, 6);
  const auto dir = fleet.node("gpu08", json::array(), 1, false);
  std::ofstream(dir / "results.csv") << "run_id,family\n";
  const auto report = fleet.grade();
  CHECK(report.failing_hostnames() == std::vector<std::string>{"gpu08"});
  CHECK_THAT(line_named(report, "gpu08", "node").reason, hdb_test::contains_text("no check.json: the run did not finish"));
}

// `hdbench fleet nodes/*` twice: the first run's output lands beside nodes/, not in it, and a
// fleet output named among the arguments (or found under a parent) is left out, never a node.
TEST_CASE("fleet: its own output is never a node, and its default --out is beside what it grades") {
  fleet_dir fleet("twice");
  healthy_fleet(fleet, 6);
  std::vector<fs::path> nodes;
  for (const auto& entry : fs::directory_iterator(fleet.root)) {
    if (entry.path().filename() != "no-sets" && entry.path().filename() != "schema") nodes.push_back(entry.path());
  }
  const auto out = hdb::default_fleet_out(nodes);
  CHECK(out.parent_path() == fs::absolute(fleet.root).lexically_normal().parent_path());
  CHECK(hdb::default_fleet_out({fleet.root}).parent_path() == fs::absolute(fleet.root).lexically_normal().parent_path());
  const auto first = fleet.grade();
  // An output written among the nodes (as `--out nodes/fleet-1` would), then the glob again.
  const auto inside = fleet.root / "fleet-1";
  std::ostringstream log;
  hdb::write_fleet_outputs(first, hdb::to_json(first).dump(), inside, false, log);
  CHECK(hdb::is_fleet_output(inside));
  std::vector<fs::path> skipped;
  auto args = nodes;
  args.push_back(inside);
  const auto dirs = hdb::fleet_run_dirs(args, &skipped);
  CHECK(skipped == std::vector<fs::path>{inside});
  CHECK(dirs.size() == 6);
  // and one under a parent of runs (`nodes/gpu01/` holds its run and the output)
  const auto beside_run = nodes.front() / "fleet-2";
  hdb::write_fleet_outputs(first, hdb::to_json(first).dump(), beside_run, false, log);
  skipped.clear();
  CHECK(hdb::fleet_run_dirs({nodes.front()}, &skipped).size() == 1);
  CHECK(skipped == std::vector<fs::path>{beside_run});
  const auto second = fleet.grade();
  CHECK(second.nodes.size() == first.nodes.size());
  CHECK(second.exit_code() == first.exit_code());
}
