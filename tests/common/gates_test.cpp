// schema.json's "gates": what the parser accepts and refuses, what require_documented asks of
// them, and which cases gated_metrics makes headlines (fixed values, "largest"/"smallest" per set
// of GPUs, first gate wins, skipped cases never gate), and which cases a verdict run keeps
// (verdict_cases: the gates' and the checks'). The real families' gates are pinned against what
// their code chose before in registration_test.cpp.
#include "catch_compat.hpp"

#include "hdb/contract/declaration.hpp"

#include <string>
#include <vector>

namespace {

std::string with_gates(const std::string& gates, const std::string& tolerance = R"(, "tolerance": 0.03)") {
  return R"({"family": "t", "summary": "s",
    "parameters": {"direction": {"type": "text", "values": ["h2d", "d2h"], "description": "d"},
                   "size_bytes": {"type": "int", "description": "b"},
                   "streams": {"type": "int", "description": "s"}},
    "metrics": {"bandwidth": {"unit": "GB/s", "better": "higher", "description": "d")" + tolerance + R"(},
                "latency": {"unit": "us", "better": "lower", "description": "l", "tolerance": 0.1},
                "chunk": {"unit": "B", "better": "neutral", "description": "c"}},
    "cases": {"bandwidth": {"description": "d", "parameters": ["direction", "size_bytes", "streams"],
                            "metrics": ["bandwidth", "latency", "chunk"]},
              "other": {"description": "o", "parameters": ["direction"], "metrics": ["latency"]}},
    "gates": )" + gates + "}";
}

hdb::family_declaration parsed(const std::string& gates) { return hdb::parse_declaration(std::string_view(with_gates(gates))); }

void check_rejected(const std::string& gates, const std::string& fragment) {
  INFO(gates);
  try {
    static_cast<void>(parsed(gates));
    FAIL("expected declaration_error containing: " << fragment);
  } catch (const hdb::declaration_error& e) {
    CHECK_THAT(std::string(e.what()), hdb_test::contains_text(fragment));
  }
}

struct fake_case {
  std::string kind;
  hdb::label_list labels;
  std::vector<int> devices;
  bool skipped = false;
};

fake_case bw(const std::string& direction, const std::string& size, std::vector<int> devices, const std::string& streams = "1") {
  return {"bandwidth", {{"direction", direction}, {"size_bytes", size}, {"streams", streams}}, std::move(devices), false};
}

std::vector<std::string> metrics_of(const hdb::family_declaration& d, const std::vector<fake_case>& cases) {
  std::vector<hdb::gate_candidate> candidates;
  for (const auto& c : cases) candidates.push_back({c.kind, &c.labels, &c.devices, c.skipped});
  return hdb::gated_metrics(d, candidates);
}

}  // namespace

TEST_CASE("gates: a valid list is read in order with its selections", "[schema][gates]") {
  const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"direction": "h2d", "size_bytes": "largest"},
                             "metric": "bandwidth", "description": "why"},
                            {"case": "bandwidth", "parameters": {"size_bytes": 1}, "metric": "latency", "description": "w"}])");
  REQUIRE(d.gates.size() == 2);
  CHECK(d.gates[0].case_kind == "bandwidth");
  CHECK(d.gates[0].parameters == hdb::label_list{{"direction", "h2d"}, {"size_bytes", "largest"}});
  CHECK(d.gates[0].metric == "bandwidth");
  CHECK(d.gates[0].description == "why");
  CHECK(d.gates[1].parameters == hdb::label_list{{"size_bytes", "1"}});  // a number is read as its digits
  CHECK_NOTHROW(hdb::require_documented(d));
  // A case's headlines are the metrics its gates name, in the order of its metrics.
  CHECK(d.case_kind("bandwidth")->headlines == std::vector<std::string>{"bandwidth", "latency"});
  CHECK(d.case_kind("other")->headlines.empty());
  const auto ungated = hdb::parse_declaration(std::string_view(with_gates("[]")));
  CHECK(ungated.gates.empty());
  CHECK(ungated.case_kind("bandwidth")->headlines.empty());
}

TEST_CASE("gates: a gate that could select nothing or gates the undeclared is refused", "[schema][gates]") {
  check_rejected(R"({})", "declaration.gates: is not a list");
  check_rejected(R"([{"case": "nope", "metric": "bandwidth"}])", "gate 0: case kind 'nope' is not declared");
  check_rejected(R"([{"case": "bandwidth"}])", "gate 0: needs \"metric\"");
  check_rejected(R"([{"case": "other", "metric": "bandwidth"}])", "metric 'bandwidth' is not a metric of case kind 'other'");
  check_rejected(R"([{"case": "bandwidth", "metric": "chunk"}])", "metric 'chunk' is neutral, so it never gates");
  check_rejected(R"([{"case": "bandwidth", "metric": "bandwidth", "label": "x"}])", "unknown field \"label\"");
  check_rejected(R"([{"case": "other", "parameters": {"size_bytes": "largest"}, "metric": "bandwidth"}])",
                 "is not a metric of case kind");  // the metric is checked first
  check_rejected(R"([{"case": "bandwidth", "parameters": {"api": "x"}, "metric": "bandwidth"}])",
                 "parameter 'api' is not declared for case kind 'bandwidth'");
  check_rejected(R"([{"case": "bandwidth", "parameters": {"direction": "x2h"}, "metric": "bandwidth"}])",
                 "value 'x2h' of parameter 'direction' is not one of its declared values");
  check_rejected(R"([{"case": "bandwidth", "parameters": {"size_bytes": "1K"}, "metric": "bandwidth"}])",
                 "parameter 'size_bytes' is int, but its value is '1K'");
  check_rejected(R"([{"case": "bandwidth", "parameters": {"direction": "largest"}, "metric": "bandwidth"}])",
                 "parameter 'direction' is text, so it cannot be 'largest'");
  check_rejected(R"([{"case": "bandwidth", "parameters": {"size_bytes": "largest", "streams": "smallest"}, "metric": "bandwidth"}])",
                 "names more than one parameter \"largest\" or \"smallest\"");
  check_rejected(R"([{"case": "bandwidth", "parameters": {"size_bytes": -1}, "metric": "bandwidth"}])",
                 "gate 0 (bandwidth bandwidth).parameters.size_bytes: is neither text nor a whole number");
}

TEST_CASE("gates: a binary needs each gate's description and a tolerance on its metric", "[schema][gates]") {
  const std::string gate = R"([{"case": "bandwidth", "metric": "bandwidth", "description": "why"}])";
  CHECK_NOTHROW(hdb::require_documented(hdb::parse_declaration(std::string_view(with_gates(gate)))));
  CHECK_THROWS_WITH(hdb::require_documented(hdb::parse_declaration(std::string_view(with_gates(gate, "")))),
                    hdb_test::contains_text("metric 'bandwidth': is a headline of case kind 'bandwidth', so it needs a \"tolerance\""));
  CHECK_THROWS_WITH(hdb::require_documented(parsed(R"([{"case": "bandwidth", "metric": "latency"}])")),
                    hdb_test::contains_text("gate 0 (bandwidth latency): needs a \"description\""));
}

TEST_CASE("gates: which cases become headlines", "[schema][gates]") {
  SECTION("fixed values select as a check does; parameters not named are free") {
    const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"direction": "h2d", "size_bytes": "64"}, "metric": "bandwidth"}])");
    const std::vector<fake_case> cases = {bw("h2d", "64", {0}), bw("h2d", "64", {1}, "2"), bw("d2h", "64", {0}),
                                          bw("h2d", "4096", {0}), {"other", {{"direction", "h2d"}}, {0}, false}};
    CHECK(metrics_of(d, cases) == std::vector<std::string>{"bandwidth", "bandwidth", "", "", ""});
  }
  SECTION("largest and smallest: the sweep's end on each set of GPUs, whatever the sizes are") {
    const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"direction": "h2d", "size_bytes": "largest"}, "metric": "bandwidth"},
                              {"case": "bandwidth", "parameters": {"direction": "d2h", "size_bytes": "smallest"}, "metric": "latency"}])");
    // GPU 0 swept to 1 GiB, GPU 1 to 64 MiB (a 2-digit and a 10-digit size compare as numbers).
    const std::vector<fake_case> cases = {bw("h2d", "64", {0}),        bw("h2d", "1073741824", {0}), bw("h2d", "99", {1}),
                                          bw("h2d", "67108864", {1}),  bw("d2h", "4096", {0}),       bw("d2h", "1024", {0}),
                                          bw("h2d", "1073741824", {0, 1})};
    CHECK(metrics_of(d, cases) ==
          std::vector<std::string>{"", "bandwidth", "", "bandwidth", "", "latency", "bandwidth"});
  }
  SECTION("a case takes the first gate that selects it") {
    const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"streams": "1"}, "metric": "latency"},
                              {"case": "bandwidth", "metric": "bandwidth"}])");
    CHECK(metrics_of(d, {bw("h2d", "64", {0}, "1"), bw("h2d", "64", {0}, "2")}) == std::vector<std::string>{"latency", "bandwidth"});
  }
  SECTION("a case registered only to say why it cannot run never gates, nor counts for largest") {
    const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"size_bytes": "largest"}, "metric": "bandwidth"}])");
    fake_case skipped = bw("h2d", "4096", {0});
    skipped.skipped = true;
    CHECK(metrics_of(d, {bw("h2d", "64", {0}), skipped}) == std::vector<std::string>{"bandwidth", ""});
  }
  SECTION("a case without the named label is not selected") {
    const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"streams": "largest"}, "metric": "bandwidth"}])");
    const fake_case no_streams{"bandwidth", {{"direction", "h2d"}, {"size_bytes", "64"}}, {0}, false};
    CHECK(metrics_of(d, {no_streams, bw("h2d", "64", {0}, "4")}) == std::vector<std::string>{"", "bandwidth"});
  }
  SECTION("no gates: nothing gates") {
    const auto d = parsed("[]");
    CHECK(metrics_of(d, {bw("h2d", "64", {0})}) == std::vector<std::string>{""});
  }
}

TEST_CASE("verdict: a verdict run keeps what a gate or a check selects, and why a gated figure cannot run", "[schema][gates][verdict]") {
  const auto d = parsed(R"([{"case": "bandwidth", "parameters": {"direction": "h2d", "size_bytes": "largest"}, "metric": "bandwidth"}],
    "checks": [{"label": "d2h 4 KiB two streams", "case": "bandwidth", "metric": "bandwidth",
                "parameters": {"direction": "d2h", "size_bytes": 4096, "streams": 2}}])");
  const auto skipped = [](fake_case c) {
    c.skipped = true;
    return c;
  };
  const std::vector<fake_case> cases = {
      bw("h2d", "64", {0}),
      bw("h2d", "1073741824", {0}),                 // the gate's largest that runs
      skipped(bw("h2d", "4294967296", {0})),        // larger, but cannot run: kept to say why
      skipped(bw("h2d", "64", {1})),                // GPU 1 cannot run any: its largest is kept
      skipped(bw("h2d", "4096", {1})),
      bw("d2h", "4096", {0}, "2"),                  // the check's
      bw("d2h", "4096", {0}, "1"),
      skipped(bw("d2h", "4096", {1}, "2")),         // the check's, skipped: check says why
      {"other", {{"direction", "h2d"}}, {0}, false}};
  std::vector<hdb::gate_candidate> candidates;
  for (const auto& c : cases) candidates.push_back({c.kind, &c.labels, &c.devices, c.skipped});
  CHECK(hdb::verdict_cases(d, candidates) == std::vector<bool>{false, true, true, false, true, true, false, true, false});
  // What gates is unchanged by it: the runnable largest alone.
  CHECK(metrics_of(d, cases) == std::vector<std::string>{"", "bandwidth", "", "", "", "", "", "", ""});
}
