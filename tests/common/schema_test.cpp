// The declaration rules the shared main enforces (hdb_contract's declaration.cpp, the parser the harness
// uses too), and every family's schema.json read by the same parser the binaries use.
#include "catch_compat.hpp"

#include "hdb/contract/declaration.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A small valid declaration; each test breaks one thing in it.
std::string declaration(const std::string& parameters, const std::string& metrics, const std::string& cases,
                        const std::string& extra = "") {
  return R"({"family": "t", "summary": "s", "parameters": {)" + parameters + R"(}, "metrics": {)" + metrics +
         R"(}, "cases": {)" + cases + "}" + extra + "}";
}

const std::string parameters =
    R"("direction": {"type": "text", "values": ["h2d", "d2h"], "description": "d"},
       "size_bytes": {"type": "int", "description": "b"},
       "api": {"type": "text", "description": "any text"})";
const std::string metrics =
    R"("bandwidth": {"unit": "GB/s", "better": "higher", "description": "d", "traffic": ["pcie_per_direction"]},
       "time": {"unit": "us", "better": "lower", "description": "t"})";
const std::string cases =
    R"("bandwidth": {"description": "d", "parameters": ["direction", "size_bytes"], "metrics": ["bandwidth", "time"]},
       "other": {"description": "d", "parameters": ["api"], "metrics": ["time"]})";
const std::string gate = R"(, "gates": [{"case": "bandwidth", "metric": "bandwidth", "description": "g"}])";

hdb::family_declaration valid() { return hdb::parse_declaration(std::string_view(declaration(parameters, metrics, cases, gate))); }

void check_rejected(const std::string& text, const std::string& fragment) {
  INFO(text);
  try {
    static_cast<void>(hdb::parse_declaration(std::string_view(text)));
    FAIL("expected declaration_error containing: " << fragment);
  } catch (const hdb::declaration_error& e) {
    CHECK_THAT(std::string(e.what()), hdb_test::contains_text(fragment));
  }
}

}  // namespace

TEST_CASE("every family's schema.json satisfies the contract", "[schema]") {
  for (const char* family : {"copy", "overlap", "sync", "p2p", "allreduce"}) {
    INFO(family);
    const hdb::family_declaration s =
        hdb::parse_declaration(std::string_view(read_file(std::string(HDB_SOURCE_DIR) + "/bench/" + family + "/schema.json")));
    CHECK_NOTHROW(hdb::require_documented(s));  // what the shared main holds it to beyond the rules
    CHECK(s.family == family);
    CHECK_FALSE(s.summary.empty());
    CHECK_FALSE(s.cases.empty());
    // One line, key order kept: the context value the harness copies into meta.json.
    const std::string text = s.source.dump();
    CHECK(text.find('\n') == std::string::npos);
    CHECK(text.rfind(std::string(R"({"family":")") + family + "\"", 0) == 0);
  }
}

TEST_CASE("a valid declaration is read with its types, values, units and cases", "[schema]") {
  const auto s = valid();
  CHECK(s.family == "t");
  REQUIRE(s.parameter("size_bytes") != nullptr);
  CHECK(s.parameter("size_bytes")->type == hdb::param_type::integer);
  REQUIRE(s.parameter("direction") != nullptr);
  CHECK(s.parameter("direction")->values == std::vector<std::string>{"h2d", "d2h"});
  REQUIRE(s.metric("bandwidth") != nullptr);
  CHECK(s.metric("bandwidth")->traffic == std::vector<std::string>{"pcie_per_direction"});
  REQUIRE(s.case_kind("bandwidth") != nullptr);
  CHECK(s.case_kind("bandwidth")->headlines == std::vector<std::string>{"bandwidth"});  // its gate's metric
  CHECK(s.case_kind("other")->headlines.empty());
  CHECK_FALSE(s.fit);
}

// A declaration stored before the gates named the headlines (a committed run's meta.json, with
// or without gates) lists them: it is read as written, and collect holds that run's rows to it.
// A binary refuses its own schema.json that still lists them.
TEST_CASE("headlines: a stored declaration's own list is read, a binary's schema.json may not declare one", "[schema]") {
  const std::string listed =
      R"("bandwidth": {"description": "d", "parameters": ["direction", "size_bytes"], "metrics": ["bandwidth", "time"],
                       "headlines": ["time", "bandwidth"]},
         "other": {"description": "d", "parameters": ["api"], "metrics": ["time"]})";
  const auto stored = hdb::parse_declaration(std::string_view(declaration(parameters, metrics, listed)));
  CHECK(stored.case_kind("bandwidth")->headlines == std::vector<std::string>{"time", "bandwidth"});
  CHECK(stored.case_kind("other")->headlines.empty());
  CHECK_THROWS_WITH(hdb::require_documented(stored),
                    hdb_test::contains_text("t: case 'bandwidth': declares \"headlines\": a case's headlines are the metrics its gates name"));
}

// The fit's three rows take the names the family declares; each must be a metric in the unit and
// direction the fit computes. A declaration of before "fit" (a committed reference run's
// meta.json) still reads, with the names the harness gave its rows then.
TEST_CASE("an alpha-beta fit is declared with a metric per role", "[schema]") {
  const std::string fitted = metrics + R"(, "beta": {"unit": "GB/s", "better": "higher", "description": "b"},
       "alpha": {"unit": "us", "better": "lower", "description": "a"}, "half": {"unit": "B", "better": "lower", "description": "h"})";
  const auto with_fit = [&](const std::string& fit) {
    return declaration(parameters, fitted, cases, R"(, "fit": )" + fit);
  };
  const auto d = hdb::parse_declaration(std::string_view(with_fit(R"({"of": "time", "beta": "beta", "alpha": "alpha", "n_half": "half"})")));
  REQUIRE(d.fit);
  CHECK(d.fit->of == "time");
  CHECK(d.fit->metric(hdb::fit_role::beta) == "beta");
  CHECK(d.fit->metric(hdb::fit_role::alpha) == "alpha");
  CHECK(d.fit->metric(hdb::fit_role::n_half) == "half");
  check_rejected(with_fit(R"({"of": "time", "beta": "alpha", "alpha": "alpha", "n_half": "half"})"),
                 "fit.beta: 'alpha' must be in GB/s, better higher, as the fit computes it");
  check_rejected(with_fit(R"({"of": "time", "beta": "beta", "alpha": "alpha", "n_half": "nowhere"})"),
                 "fit.n_half: 'nowhere' is not a declared metric");
  check_rejected(with_fit(R"({"of": "latency", "beta": "beta", "alpha": "alpha", "n_half": "half"})"),
                 "fit.of: 'latency' is not a declared metric");
  check_rejected(with_fit(R"({"of": "time", "beta": "beta", "alpha": "alpha", "n_half": "half", "gamma": "g"})"),
                 "fit: unknown field \"gamma\"");
  check_rejected(declaration(parameters, fitted, cases, R"(, "fit_metric": "time", "fit": {"of": "time"})"),
                 "and \"fit\" both declare the fit");
  const auto legacy = hdb::parse_declaration(std::string_view(declaration(parameters, metrics, cases, R"(, "fit_metric": "time")")));
  REQUIRE(legacy.fit);
  CHECK(legacy.fit->of == "time");
  CHECK(legacy.fit->metric(hdb::fit_role::beta) == "fit_bandwidth");
  CHECK(legacy.fit->metric(hdb::fit_role::alpha) == "fit_latency");
  CHECK(legacy.fit->metric(hdb::fit_role::n_half) == "fit_n_half");
}

TEST_CASE("a declaration that breaks the contract is refused, naming what is wrong", "[schema]") {
  check_rejected("{", "not valid JSON");
  check_rejected(declaration(parameters, R"("b": {"unit": "x", "better": "higher", "description": "d"})", ""),
                 "metric 'b': unit 'x' is not one of GB/s, us, us/MiB, B, %, ratio, count");
  check_rejected(declaration(parameters, R"("b": {"unit": "us", "better": "up", "description": "d"})", ""), "better 'up'");
  check_rejected(declaration(parameters, R"("cpu_time": {"unit": "us", "better": "lower", "description": "d"})", ""),
                 "metric 'cpu_time': is a key Google Benchmark writes itself");
  check_rejected(declaration(R"("gpus": {"type": "int", "description": "n"})", metrics, ""),
                 "parameter 'gpus': is a core column");
  check_rejected(declaration(R"("every": {"type": "text", "values": ["1", "never"], "description": "k"})", metrics, ""),
                 "text value '1' is all digits");
  check_rejected(declaration(R"("n": {"type": "float", "description": "k"})", metrics, ""), "type 'float'");
  check_rejected(declaration(parameters, R"("b": {"unit": "GB/s", "better": "higher", "description": "d", "traffic": ["pcie"]})", ""),
                 "traffic class 'pcie' is not known");
  check_rejected(declaration(parameters, metrics,
                             R"("c": {"description": "d", "parameters": [], "metrics": ["latency"]})"),
                 "case 'c': metric 'latency' is not declared");
  check_rejected(declaration(parameters, metrics,
                             R"("c": {"description": "d", "parameters": ["streams"], "metrics": []})"),
                 "case 'c': parameter 'streams' is not declared");
  check_rejected(declaration(parameters, metrics,
                             R"("c": {"description": "d", "parameters": [], "metrics": ["time"], "headlines": ["bandwidth"]})"),
                 "headline 'bandwidth' is not one of its metrics");
  check_rejected(declaration(parameters, metrics,
                             R"("c": {"description": "d", "parameters": [], "metrics": ["time"], "metric": ["bandwidth"]})"),
                 "case 'c': unknown field \"metric\"");
  check_rejected(declaration(parameters, metrics, cases, R"(, "fit_metric": "latency")"), "fit_metric: 'latency' is not a declared metric");
  check_rejected(declaration(parameters, metrics, cases, R"(, "traffic_classes": {"nvlink_bus": {"link": "pcie",
                 "directions": 1, "combine": "min", "traffic_factor": 1, "basis": "b"}})"),
                 "reuses a built-in class name");
}

TEST_CASE("a family's own traffic class may be picked by its metrics", "[schema]") {
  const std::string own = R"(, "traffic_classes": {"standin_link": {"link": "pcie", "directions": 1, "combine": "min",
                             "traffic_factor": 2, "basis": "PCIe per direction, slowest GPU"}})";
  const std::string m = R"("b": {"unit": "GB/s", "better": "higher", "description": "d", "traffic": ["standin_link"]})";
  const auto s = hdb::parse_declaration(std::string_view(declaration(parameters, m, "", own)));
  REQUIRE(s.traffic_classes.size() == 1);
  CHECK(s.traffic_classes.front().name == "standin_link");
  check_rejected(declaration(parameters, m, "", own.substr(0, own.find("\"link\": \"pcie\"")) +
                                                   R"("link": "ethernet", "directions": 1, "combine": "min",
                             "traffic_factor": 2, "basis": "b"}})"),
                 "link 'ethernet' (pcie, hbm, nvlink_pair or nvlink_gpu)");
}

TEST_CASE("registration: the kind, every label parameter and every value must be declared", "[schema]") {
  const auto s = valid();
  CHECK_FALSE(hdb::check_registration(s, "bandwidth", {{"direction", "h2d"}, {"size_bytes", "4096"}}));
  CHECK_FALSE(hdb::check_registration(s, "bandwidth", {{"size_bytes", "4096"}}));  // a parameter may be absent
  CHECK_FALSE(hdb::check_registration(s, "other", {{"api", "anything_textual"}}));
  CHECK(hdb::check_registration(s, "latency", {}) == "case kind 'latency' is not declared");
  CHECK(hdb::check_registration(s, "bandwidth", {{"gpus", "2"}}) ==
        "parameter 'gpus' is not declared for case kind 'bandwidth'");
  CHECK(hdb::check_registration(s, "other", {{"direction", "h2d"}}) ==
        "parameter 'direction' is not declared for case kind 'other'");
  CHECK(hdb::check_registration(s, "bandwidth", {{"size_bytes", "4K"}}) ==
        "parameter 'size_bytes' is int, but its value is '4K'");
  CHECK(hdb::check_registration(s, "bandwidth", {{"size_bytes", ""}}).has_value());
  CHECK(hdb::check_registration(s, "bandwidth", {{"direction", "bidir"}}) ==
        "value 'bidir' of parameter 'direction' is not one of its declared values");
  CHECK(hdb::check_registration(s, "other", {{"api", "0"}}) ==
        "parameter 'api' is text, so its value '0' must be non-empty and not all digits");
}

TEST_CASE("outputs: counters, headlines and traffic picks must be declared for the kind", "[schema]") {
  const auto s = valid();
  const std::map<std::string, std::string> pcie = {{"bandwidth", "pcie_per_direction"}};
  CHECK_FALSE(hdb::check_outputs(s, "bandwidth", {"bandwidth", "time"}, {"bandwidth"}, pcie));
  CHECK_FALSE(hdb::check_outputs(s, "bandwidth", {}, {}, {}));  // a declared metric may be unset
  CHECK(hdb::check_outputs(s, "other", {"time", "bandwidth"}, {}, {}) ==
        "counter 'bandwidth' is not a declared metric for case kind 'other'");
  CHECK(hdb::check_outputs(s, "bandwidth", {"iterations"}, {}, {}) ==
        "counter 'iterations' is named like one of Google Benchmark's own JSON keys");
  CHECK(hdb::check_outputs(s, "bandwidth", {"time"}, {"time"}, {}) ==
        "headline 'time' is not a declared headline for case kind 'bandwidth'");
  CHECK(hdb::check_outputs(s, "bandwidth", {}, {}, {{"bandwidth", "hbm_read_write"}}) ==
        "traffic class 'hbm_read_write' is not allowed for metric 'bandwidth'");
  CHECK(hdb::check_outputs(s, "other", {}, {}, pcie) ==
        "traffic pick for 'bandwidth', which is not a declared metric for case kind 'other'");
  CHECK(hdb::check_outputs(s, "latency", {}, {}, {}) == "case kind 'latency' is not declared");
}

TEST_CASE("Google Benchmark's own JSON keys are known", "[schema]") {
  for (const char* key : {"name", "iterations", "real_time", "cpu_time", "time_unit", "label", "error_message"}) {
    CHECK(hdb::is_benchmark_field(key));
  }
  CHECK_FALSE(hdb::is_benchmark_field("bandwidth"));
  CHECK_FALSE(hdb::is_benchmark_field("waiter_cpu_time"));
}

TEST_CASE("tolerances: a fraction per metric or check, and every figure check grades has one", "[schema]") {
  const std::string tolerant =
      R"("bandwidth": {"unit": "GB/s", "better": "higher", "tolerance": 0.03, "description": "d", "traffic": ["pcie_per_direction"]},
         "time": {"unit": "us", "better": "lower", "description": "t"})";
  const std::string host_check =
      R"(, "checks": [{"label": "slow h2d", "case": "bandwidth", "parameters": {"direction": "h2d"}, "metric": "bandwidth",
                       "tolerance": 0.5, "host_bound": true, "description": "d"},
                      {"label": "any", "case": "bandwidth", "metric": "bandwidth", "description": "d"}])";
  const auto d = hdb::parse_declaration(std::string_view(declaration(parameters, tolerant, cases, host_check)));
  REQUIRE(d.checks.size() == 2);
  CHECK(d.tolerance(&d.checks[0], "bandwidth") == 0.5);
  CHECK(d.checks[0].host_bound);
  CHECK(d.tolerance(&d.checks[1], "bandwidth") == 0.03);  // the metric's
  CHECK_FALSE(d.checks[1].host_bound);
  CHECK(d.tolerance(nullptr, "bandwidth") == 0.03);
  CHECK_FALSE(d.tolerance(nullptr, "time"));
  CHECK_NOTHROW(hdb::require_documented(d));

  check_rejected(declaration(parameters, R"("b": {"unit": "us", "better": "lower", "tolerance": 3, "description": "d"})", ""),
                 "metric 'b'.tolerance: must be a fraction between 0 and 1");
  check_rejected(declaration(parameters, tolerant, cases,
                             R"(, "checks": [{"label": "x", "case": "bandwidth", "metric": "bandwidth", "host_bound": 1}])"),
                 "check 'x'.host_bound: is not true or false");
  // A gating headline without a tolerance, and a check of a metric without one, are not documented.
  CHECK_THROWS_WITH(hdb::require_documented(valid()),
                    hdb_test::contains_text("metric 'bandwidth': is a headline of case kind 'bandwidth', so it needs a \"tolerance\""));
  const auto untolerated = hdb::parse_declaration(std::string_view(declaration(
      parameters, tolerant, cases, R"(, "checks": [{"label": "t", "case": "other", "metric": "time", "description": "d"}])")));
  CHECK_THROWS_WITH(hdb::require_documented(untolerated),
                    hdb_test::contains_text("check 't': needs a \"tolerance\", its own or its metric's"));
}
