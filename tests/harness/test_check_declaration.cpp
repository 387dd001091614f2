// A family's "checks" (the bring-up figures of hdbench check) in its declaration: what an entry
// may say, and the committed families' checks, which must select what their binaries measure.
#include <string>

#include "catch_compat.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/contract/declaration.hpp"
#include "test_support.hpp"

namespace {

// A family with one case kind, and `checks` spliced in.
hdb::family_declaration declare(const std::string& checks) {
  return hdb::parse_declaration(std::string_view(R"({"family": "f",
    "parameters": {"direction": {"type": "text", "values": ["h2d", "d2h"]}, "size_bytes": {"type": "int"}},
    "metrics": {"bandwidth": {"unit": "GB/s", "better": "higher"}, "latency": {"unit": "us", "better": "lower"}},
    "cases": {"copy": {"parameters": ["direction", "size_bytes"], "metrics": ["bandwidth"], "headlines": ["bandwidth"]}},
    "checks": )" + checks + "}"));
}

}  // namespace

TEST_CASE("declaration checks: a valid entry is read", "[check][declaration]") {
  const auto d = declare(R"([{"label": "h2d 1 GiB", "case": "copy", "metric": "bandwidth",
                              "parameters": {"direction": "h2d", "size_bytes": 1073741824}, "graded_by_peak": false,
                              "description": "why"}])");
  REQUIRE(d.checks.size() == 1);
  const auto& c = d.checks[0];
  CHECK(c.label == "h2d 1 GiB");
  CHECK(c.case_kind == "copy");
  CHECK(c.metric == "bandwidth");
  CHECK(c.parameters == hdb::label_list{{"direction", "h2d"}, {"size_bytes", "1073741824"}});
  CHECK_FALSE(c.graded_by_peak);
  CHECK(c.description == "why");
  CHECK(declare(R"([{"label": "any", "case": "copy", "metric": "bandwidth"}])").checks[0].graded_by_peak);
}

TEST_CASE("declaration checks: an entry naming anything undeclared is a declaration error", "[check][declaration]") {
  using Catch::Matchers::Equals;
  const auto error = [](const std::string& checks) {
    try {
      (void)declare(checks);
    } catch (const hdb::declaration_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error(R"([{"label": "x", "case": "nope", "metric": "bandwidth"}])"),
             Equals("f: check 'x': case kind 'nope' is not declared"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "latency"}])"),
             Equals("f: check 'x': metric 'latency' is not a metric of case kind 'copy'"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "parameters": {"streams": "1"}}])"),
             Equals("f: check 'x': parameter 'streams' is not declared for case kind 'copy'"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "parameters": {"direction": "bidir"}}])"),
             Equals("f: check 'x': value 'bidir' of parameter 'direction' is not one of its declared values"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "parameters": {"size_bytes": "1G"}}])"),
             Equals("f: check 'x': parameter 'size_bytes' is int, but its value is '1G'"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "parameters": {"size_bytes": 1.5}}])"),
             Equals("f: check 'x'.parameters.size_bytes: is neither text nor a whole number"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "gpu": 0}])"),
             Equals("f: check 0: unknown field \"gpu\""));
  CHECK_THAT(error(R"([{"case": "copy", "metric": "bandwidth"}])"), Equals("f: check 0: needs \"label\""));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth"}, {"label": "x", "case": "copy", "metric": "bandwidth"}])"),
             Equals("f: check 'x': label is used twice"));
  CHECK_THAT(error(R"({"label": "x"})"), Equals("f: declaration.checks: is not a list"));
  CHECK_THAT(error(R"([{"label": "x", "case": "copy", "metric": "bandwidth", "graded_by_peak": "no"}])"),
             Equals("f: check 'x'.graded_by_peak: is not true or false"));
}

TEST_CASE("declaration checks: the committed families' checks parse", "[check][declaration]") {
  const auto copy = hdb::parse_declaration(std::string_view(hdb::read_text_file(hdb_test::fixture("../../../bench/copy/schema.json"))));
  REQUIRE(copy.checks.size() == 7);
  CHECK(copy.checks[3].label == "pageable h2d 1 GiB");
  CHECK_FALSE(copy.checks[3].graded_by_peak);  // the host's staging copy sets it, not the link
  const auto p2p = hdb::parse_declaration(std::string_view(hdb::read_text_file(hdb_test::fixture("../../../bench/p2p/schema.json"))));
  REQUIRE(p2p.checks.size() == 1);
  CHECK(p2p.checks[0].label == "staged loopback 1 GiB");
}
