// Pure functions of the harness: Mann-Whitney U, the alpha-beta fit, PCIe peaks, run
// ids, CSV quoting, the results.csv round trip and what meta.json records of them (median and
// summary are hdb_contract's: tests/host).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "hdb/harness/data/csv.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/fit.hpp"
#include "hdb/harness/verdict/mann_whitney.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/run/node_probe.hpp"
#include "hdb/harness/data/peaks.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "test_support.hpp"

using hdb_test::Approx;

TEST_CASE("Mann-Whitney U matches known p-values", "[stats][mann_whitney]") {
  SECTION("exact: complete separation, 3 vs 3 and 5 vs 5") {
    const auto r = hdb::mann_whitney_u(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
    CHECK(r.exact);
    CHECK(r.u == 0);
    CHECK(r.p_value == Approx(0.1));  // 2 / C(6,3)
    CHECK(hdb::mann_whitney_u(std::vector<double>{1, 2, 3, 4, 5}, std::vector<double>{6, 7, 8, 9, 10}).p_value ==
          Approx(2.0 / 252));
  }
  SECTION("exact: interleaved 4 vs 4 (R wilcox.test: 0.6857)") {
    const auto r = hdb::mann_whitney_u(std::vector<double>{1, 3, 5, 7}, std::vector<double>{2, 4, 6, 8});
    CHECK(r.u == 6);
    CHECK(r.p_value == Approx(0.6857142857));
  }
  SECTION("exact: scipy documentation example (U = 17, p = 0.1111)") {
    const auto r = hdb::mann_whitney_u(std::vector<double>{19, 22, 16, 29, 24}, std::vector<double>{20, 11, 17, 12});
    CHECK(r.u == 17);
    CHECK(r.p_value == Approx(1.0 / 9));
  }
  SECTION("normal approximation above the exact limit") {
    std::vector<double> x, y;
    for (int i = 1; i <= 25; ++i) x.push_back(i), y.push_back(i + 25);
    const auto r = hdb::mann_whitney_u(x, y);
    CHECK_FALSE(r.exact);
    CHECK(r.p_value == Approx(1.4156562248e-09).epsilon(1e-6));
  }
  SECTION("normal approximation with tie correction") {
    const auto r = hdb::mann_whitney_u(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 3, 4, 5});
    CHECK_FALSE(r.exact);
    CHECK(r.u == 3);
    CHECK(r.p_value == Approx(0.0993422479).epsilon(1e-6));
  }
  SECTION("all values tied: no evidence") {
    CHECK(hdb::mann_whitney_u(std::vector<double>{1, 1, 1}, std::vector<double>{1, 1, 1}).p_value == 1);
  }
  SECTION("smallest reachable p-value") {
    CHECK(hdb::mann_whitney_min_p(3, 3) == Approx(0.1));
    CHECK(hdb::mann_whitney_min_p(5, 5) == Approx(2.0 / 252));
  }
}

TEST_CASE("alpha-beta fit recovers latency and bandwidth", "[stats][fit]") {
  const double alpha = 2.5, beta = 55e3;  // us, bytes per us (55 GB/s)
  std::vector<double> sizes = {4096, 65536, 1048576, 16777216}, times;
  for (const double n : sizes) times.push_back(alpha + n / beta);
  const auto fit = hdb::fit_alpha_beta(sizes, times);
  REQUIRE(fit);
  CHECK(fit->alpha_us == Approx(alpha));
  CHECK(fit->bandwidth_gbps() == Approx(55));
  CHECK(fit->n_half_bytes() == Approx(alpha * beta));
  SECTION("fewer than 3 sizes: no fit") {
    CHECK_FALSE(hdb::fit_alpha_beta(std::vector<double>{1, 2, 2}, std::vector<double>{1, 2, 2}));
  }
}

TEST_CASE("PCIe peak per direction", "[peaks]") {
  CHECK(*hdb::pcie_peak_gbps(5, 16) == Approx(63.0).epsilon(1e-3));  // 32 GT/s x 16 x 128/130 / 8
  CHECK(*hdb::pcie_peak_gbps(4, 16) == Approx(31.5).epsilon(1e-3));
  CHECK(*hdb::pcie_peak_gbps(3, 8) == Approx(7.877).epsilon(1e-3));
  CHECK(*hdb::pcie_peak_gbps(2, 16) == Approx(8.0));                // 5 GT/s x 16 x 8/10 / 8
  CHECK(*hdb::pcie_peak_gbps(1, 1) == Approx(0.25));
  CHECK_FALSE(hdb::pcie_peak_gbps(0, 16));
  CHECK_FALSE(hdb::pcie_peak_gbps(5, 0));
}

TEST_CASE("run id: UTC second plus a file-safe short hostname", "[run_dir]") {
  using namespace std::chrono;
  const sys_seconds when = sys_days{year{2026} / 11 / 29} + hours{10} + minutes{31} + seconds{22};
  CHECK(hdb::make_run_id(when, "gpu01") == "20261129T103122Z-gpu01");
  CHECK(hdb::make_run_id(when, "gpu01.cluster.example") == "20261129T103122Z-gpu01");
  CHECK(hdb::make_run_id(when, "odd host/name") == "20261129T103122Z-odd_host_name");
  CHECK(hdb::utc_timestamp(when) == "2026-11-29T10:31:22Z");
  SECTION("back-to-back runs get distinct directories") {
    const hdb_test::temp_dir tmp;
    CHECK(hdb::create_run_dir(tmp.path(), "id").filename() == "id");
    CHECK(hdb::create_run_dir(tmp.path(), "id").filename() == "id-2");
    CHECK(hdb::create_run_dir(tmp.path(), "id").filename() == "id-3");
  }
}

TEST_CASE("IOMMU decision and its evidence", "[meta]") {
  CHECK(hdb::detect_iommu(4, "ro quiet").enabled == true);
  CHECK(hdb::detect_iommu(0, "ro intel_iommu=on").enabled == true);
  CHECK(hdb::detect_iommu(0, "ro quiet").enabled == false);
  CHECK_FALSE(hdb::detect_iommu(std::nullopt, "ro quiet").enabled);
  CHECK(hdb_test::contains(hdb::detect_iommu(2, "iommu=pt").evidence, "passthrough"));
  CHECK(hdb::os_pretty_name("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n") == "Debian GNU/Linux 12 (bookworm)");
}

TEST_CASE("CSV quoting", "[csv]") {
  CHECK(hdb::csv_field("plain") == "plain");
  CHECK(hdb::csv_field("a,b") == "\"a,b\"");
  CHECK(hdb::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(hdb::csv_field("two\nlines") == "\"two\nlines\"");
  const auto records = hdb::parse_csv("a,\"b,c\",\"d\"\"e\"\r\n,\"x\ny\",\n");
  REQUIRE(records.size() == 2);
  CHECK(records[0] == std::vector<std::string>{"a", "b,c", "d\"e"});
  CHECK(records[1] == std::vector<std::string>{"", "x\ny", ""});
  CHECK_THROWS_AS(hdb::parse_csv("a,\"unterminated\n"), hdb::harness_error);
}

namespace {

// A sample row with every field set.
hdb::result_row every_field_row() {
  hdb::result_row sample;
  sample.run_id = "20261129T103122Z-gpu01";
  sample.family = "copy";
  sample.case_name = "bandwidth";
  sample.device = 1;
  sample.gpus = 2;
  sample.gpu_uuid = "GPU-a,GPU-b";
  sample.params = {{"direction", "h2d"}, {"size_bytes", "1048576"}};
  sample.metric = "bandwidth";
  sample.unit = "GB/s";
  sample.better_direction = hdb::better::higher;
  sample.headline = true;
  sample.traffic = "pcie_per_direction";
  sample.stat = hdb::statistic::sample;
  sample.sample_index = 3;
  sample.value = 52.123456789;
  sample.repetitions = 7;
  sample.stopped_by = "precise";
  sample.attempt = 2;
  return sample;
}

}  // namespace

TEST_CASE("results.csv round trip", "[csv]") {
  const auto sample = every_field_row();
  hdb::result_row skipped;
  skipped.run_id = sample.run_id;
  skipped.family = "copy";
  skipped.case_name = "bandwidth";
  skipped.status = hdb::row_status::skipped;
  skipped.reason = "pageable, \"async\" would\ntime the host";
  hdb::result_row neutral = sample;
  neutral.metric = "best_chunk_bytes";
  neutral.better_direction = hdb::better::neutral;

  const std::vector<hdb::result_row> rows = {sample, skipped, neutral};
  const std::vector<std::string> columns = {"direction", "host_kind", "size_bytes"};
  const auto text = hdb::write_results_csv(rows, columns);
  CHECK(text.starts_with("schema_version,run_id,family,case,device,gpus,gpu_uuid,direction,host_kind,size_bytes,metric,unit,"
                         "better,headline,traffic,statistic,sample_index,value,status,reason,repetitions,stopped_by,attempt\n"));
  const auto back = hdb::read_results_csv(text);
  CHECK(back.param_columns == columns);
  REQUIRE(back.rows.size() == 3);
  CHECK(back.rows[0].params == sample.params);  // an empty column is an unset parameter
  CHECK(back.rows[0].device == 1);
  CHECK(back.rows[0].gpus == 2);
  CHECK(back.rows[0].gpu_uuid == "GPU-a,GPU-b");
  CHECK(back.rows[0].traffic == "pcie_per_direction");
  CHECK(back.rows[0].value == sample.value);  // shortest round-trip formatting loses nothing
  CHECK(back.rows[0].sample_index == 3);
  CHECK(back.rows[0].headline);
  CHECK(back.rows[0].repetitions == 7);
  CHECK(back.rows[0].stopped_by == "precise");
  CHECK(back.rows[0].attempt == 2);
  CHECK_FALSE(back.rows[1].repetitions);
  CHECK(back.rows[1].attempt == 1);
  CHECK(back.rows[1].reason == skipped.reason);
  CHECK_FALSE(back.rows[1].value);
  CHECK_FALSE(back.rows[1].device);
  CHECK(back.rows[2].better_direction == hdb::better::neutral);
  CHECK(hdb::write_results_csv(back.rows, back.param_columns) == text);
  CHECK(hdb::format_value(52.1) == "52.1");
  CHECK(hdb::describe_case(sample) == "device=1 gpus=2 direction=h2d size_bytes=1048576");
  SECTION("a file written before repetitions, stopped_by and attempt reads them as unset, one attempt") {
    const std::string header = "schema_version,run_id,family,case,device,gpus,gpu_uuid,direction,metric,unit,better,headline,"
                               "traffic,statistic,sample_index,value,status,reason\n";
    const auto older = hdb::read_results_csv(header + "3,r,copy,bandwidth,0,1,GPU-a,h2d,bandwidth,GB/s,higher,yes,-,sample,0,"
                                                      "52.1,ok,-\n");
    REQUIRE(older.rows.size() == 1);
    CHECK(older.param_columns == std::vector<std::string>{"direction"});
    CHECK_FALSE(older.rows[0].repetitions);
    CHECK(older.rows[0].stopped_by.empty());
    CHECK(older.rows[0].attempt == 1);
    CHECK(older.rows[0].value == 52.1);
    // Any other core column is still required.
    CHECK_THROWS_WITH(hdb::read_results_csv("schema_version,run_id\n3,r\n"), "missing column 'family'");
  }
  SECTION("a parameter without a column is refused, never dropped") {
    CHECK_THROWS_WITH(hdb::write_results_csv(rows, {"direction"}), "copy bandwidth: parameter 'size_bytes' has no column");
  }
  SECTION("schema 2 is refused: it names its schema and the one this hdbench reads") {
    CHECK_THROWS_WITH(hdb::read_results_csv(hdb::read_text_file(hdb_test::fixture("schema2_run/results.csv"))),
                      "schema_version 2: a schema 2 results.csv; this hdbench reads schema 3");
  }
}

TEST_CASE("results_csv: the writer's core columns, the types its fields hold, and the statistics", "[csv][meta]") {
  const auto record = hdb::results_csv_record();
  CHECK(record.at("schema_version") == hdb::results_schema_version);
  // The names are the header's, in order around the parameter columns.
  const auto row = every_field_row();
  const auto records = hdb::parse_csv(hdb::write_results_csv({row}, {"direction", "size_bytes"}));
  REQUIRE(records.size() == 2);
  std::vector<std::string> names;
  for (const auto* part : {"leading_columns", "trailing_columns"}) {
    for (const auto& column : record.at(part)) names.push_back(column.at("name").get<std::string>());
    if (std::string(part) == "leading_columns") names.insert(names.end(), {"direction", "size_bytes"});
  }
  CHECK(names == records[0]);
  // Every int and float field of a row with all of them set reads back as its type.
  for (const auto* part : {"leading_columns", "trailing_columns"}) {
    for (const auto& column : record.at(part)) {
      const auto name = column.at("name").get<std::string>();
      const auto type = column.at("type").get<std::string>();
      INFO(name << " " << type);
      const auto at = std::find(records[0].begin(), records[0].end(), name) - records[0].begin();
      const auto& field = records[1][static_cast<std::size_t>(at)];
      if (type == "int") CHECK(field.find_first_not_of("0123456789") == std::string::npos);
      if (type == "float") CHECK(std::stod(field) == *row.value);
      CHECK((type == "int" || type == "float" || type == "text"));
      CHECK(type == hdb::to_string(hdb::core_column_type(name)));
    }
  }
  CHECK(hdb::core_column_type("value") == hdb::column_type::number);
  CHECK(hdb::core_column_type("sample_index") == hdb::column_type::integer);
  CHECK(hdb::core_column_type("gpu_uuid") == hdb::column_type::text);
  // The statistics are parse_statistic's words, in enum order.
  std::vector<std::string> statistics;
  for (auto s = hdb::statistic::sample;; s = static_cast<hdb::statistic>(static_cast<int>(s) + 1)) {
    statistics.emplace_back(hdb::to_string(s));
    if (s == hdb::statistic::fit) break;
  }
  CHECK(record.at("statistics").get<std::vector<std::string>>() == statistics);
  CHECK(hdb::core_column_type("repetitions") == hdb::column_type::integer);
  CHECK(hdb::core_column_type("attempt") == hdb::column_type::integer);
  CHECK(record.at("later_columns") == nlohmann::json::array({"repetitions", "stopped_by", "attempt"}));
}

TEST_CASE("meta.json records results_csv and the link rates the plots read", "[meta][peaks]") {
  const auto gpus = nlohmann::json::parse(R"([
    {"index": 0, "compute_capability": "9.0", "pcie": {"gen_max": 5, "width_max": 16, "gen_current": 3, "width_current": 16}, "nvlink": {"links_active": 18}},
    {"index": 1, "pcie": {"gen_current": 4, "width_current": 8}, "nvlink": {"links_active": 4, "per_link_GBps": 50.0}},
    {"index": 2, "pcie": {"source": "unavailable"}},
    {"index": 3, "compute_capability": "6.0"}])");
  const auto topology = nlohmann::json::parse(R"({"gpus": [
    {"index": 0, "nvlink": {"links_active": 12, "per_link_GBps": 26.5625}},
    {"index": 1, "nvlink": {"per_link_GBps": 25.0}},
    {"index": 3, "nvlink": {"links_active": 2, "per_link_GBps": 20.0}}],
    "pairs": [{"src": 0, "dst": 3, "link": {"type": "nvlink", "links": 2, "peak_GBps": 53.125}},
              {"src": 0, "dst": 1, "link": {"type": "nvlink", "links": 4}},
              {"src": 0, "dst": 2, "link": {"type": "pcie", "links": null}}]})");
  nlohmann::json meta = {{"run_id", "r"}, {"node", {{"gpus", gpus}, {"topology", topology}}}};
  hdb::record_harness_tables(meta);
  CHECK(meta.at("results_csv") == hdb::results_csv_record());
  const auto& recorded = meta.at("node").at("gpus");
  // PCIe: the maximum link's rate (Gen5 x16, not the Gen3 it idles at), else the current one's; null when unknown.
  CHECK(recorded[0].at("pcie").at("peak_GBps") == *hdb::pcie_peak_gbps(5, 16));
  CHECK(recorded[1].at("pcie").at("peak_GBps") == *hdb::pcie_peak_gbps(4, 8));
  CHECK(recorded[2].at("pcie").at("peak_GBps").is_null());
  CHECK_FALSE(recorded[3].contains("pcie"));
  // NVLink: what only node.topology has is copied; the GPU's own values are kept; the data rate
  // of its generation is recorded (null when its compute capability is unknown).
  CHECK(recorded[0].at("nvlink") ==
        nlohmann::json{{"links_active", 18}, {"per_link_GBps", 26.5625}, {"data_per_link_GBps", 25.0}});
  CHECK(recorded[1].at("nvlink") ==
        nlohmann::json{{"links_active", 4}, {"per_link_GBps", 50.0}, {"data_per_link_GBps", nullptr}});
  CHECK_FALSE(recorded[2].contains("nvlink"));
  CHECK(recorded[3].at("nvlink") ==
        nlohmann::json{{"links_active", 2}, {"per_link_GBps", 20.0}, {"data_per_link_GBps", 20.0}});
  // An NVLink pair's peak: its links x the slower end's data rate (an older reported-rate peak is
  // replaced); unknown when one end's rate is; a PCIe pair is left alone.
  const auto& pairs = meta.at("node").at("topology").at("pairs");
  CHECK(pairs[0].at("link").at("peak_GBps") == 2 * 20.0);
  CHECK(pairs[1].at("link").at("peak_GBps").is_null());
  CHECK_FALSE(pairs[2].at("link").contains("peak_GBps"));
  auto again = meta;
  hdb::record_harness_tables(again);
  CHECK(again == meta);

  const hdb_test::temp_dir dir;
  SECTION("write_meta records them; update_meta_tables gives an older meta.json them once") {
    hdb::atomic_write_file(dir.path() / "meta.json", nlohmann::json{{"run_id", "r"}, {"node", {{"gpus", gpus}}}}.dump());
    hdb::update_meta_tables(dir.path());
    const auto updated = *hdb::read_meta(dir.path() / "meta.json");
    CHECK(updated.at("results_csv") == hdb::results_csv_record());
    CHECK(updated.at("run_id") == "r");
    CHECK(updated.at("node").at("gpus")[0].at("pcie").at("peak_GBps") == *hdb::pcie_peak_gbps(5, 16));
    const auto written = hdb::read_text_file(dir.path() / "meta.json");
    const auto modified = std::filesystem::last_write_time(dir.path() / "meta.json") - std::chrono::hours(1);
    std::filesystem::last_write_time(dir.path() / "meta.json", modified);  // a rewrite now would move it
    hdb::update_meta_tables(dir.path());  // nothing to add: not rewritten
    CHECK(hdb::read_text_file(dir.path() / "meta.json") == written);
    CHECK(std::filesystem::last_write_time(dir.path() / "meta.json") == modified);
    hdb::write_meta(dir.path() / "meta.json", nlohmann::json{{"run_id", "w"}});
    CHECK(hdb::read_meta(dir.path() / "meta.json")->at("results_csv") == hdb::results_csv_record());
  }
  SECTION("a run without meta.json gets one holding only them; an unreadable one is left alone") {
    hdb::update_meta_tables(dir.path());
    CHECK(*hdb::read_meta(dir.path() / "meta.json") ==
          nlohmann::json{{"schema_version", hdb::meta_schema_version}, {"results_csv", hdb::results_csv_record()}});
    hdb::atomic_write_file(dir.path() / "meta.json", "{not json");
    hdb::update_meta_tables(dir.path());
    CHECK(hdb::read_text_file(dir.path() / "meta.json") == "{not json");
  }
}
