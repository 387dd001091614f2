#pragma once
// A graded line: one figure of one GPU (or a health line of the node) with its grade and
// everything that decided it. check makes them, check.json holds them, fleet reads them back and
// grades them again by the same decision (decision.hpp); its JSON form is written and read here
// and nowhere else (docs/machine-output.md, "check.json").
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/verdict/decision.hpp"
#include "hdb/harness/verdict/grades.hpp"
#include "hdb/harness/data/metric_key.hpp"
#include "hdb/harness/data/traffic.hpp"

namespace hdb {

// What a line was graded against. none: a figure with nothing to judge it by (INFO), or a check
// whose case did not run; node: a fleet's line about a node that left no usable run.
enum class grade_basis { set, peers, peak, none, health, node };

[[nodiscard]] std::string_view to_string(grade_basis basis);
[[nodiscard]] std::optional<grade_basis> grade_basis_from_string(std::string_view text);

// check.json's version: 2 adds each line's "basis", "key" and "check"; fleet refuses another
// version (`hdbench check DIR` writes it again).
inline constexpr int check_json_version = 2;

// How a figure's grade stands against `hdbench run`'s confirmations (runner.hpp): none, measured
// once and not a FAIL; unconfirmed, a FAIL measured once (check cannot measure again); confirmed, a
// FAIL on every try; transient, a FAIL on an earlier try and not on the last, which decides (a WARN
// at least); unsteady, a FAIL on the last try but not on every one (a WARN).
enum class confirmation { none, unconfirmed, confirmed, transient, unsteady };

[[nodiscard]] std::string_view to_string(confirmation value);
[[nodiscard]] std::optional<confirmation> confirmation_from_string(std::string_view text);

// One measurement of a figure: the run's (attempt 1) or a confirmation's.
struct attempt_reading {
  int attempt = 1;
  std::optional<double> value;  // none: the case failed on this attempt
  grade result = grade::not_graded;
};

// A number a health line read, for Prometheus: hdbench_gpu_<name>{node, gpu, <labels>} value
// (prometheus_render.cpp), e.g. ecc_errors{kind="uncorrected_volatile"} 0. Its labels are bounded
// words (a kind, a state, an Xid number), never a reading.
struct health_counter {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;

  auto operator<=>(const health_counter&) const = default;
};

struct graded_line {
  grade result = grade::not_graded;
  grade_basis basis = grade_basis::none;
  std::vector<int> gpus;  // CUDA indices (node.gpus[i].index); empty: the node as a whole
  std::string family;     // the figure's family; "health" for a health line, "node" for a node's
  std::string figure;     // "pinned h2d 1 GiB", "PCIe replays"
  std::optional<double> value;
  std::string unit;
  std::string reading;  // a health line's reading instead of a value: "Gen4 x16", "0 -> 17"
  std::optional<figure_band> band;        // basis set or peers
  std::optional<peak_ref> peak;           // basis peak
  std::optional<double> percent_of_peak;  // basis peak
  std::optional<better> direction;        // the row's
  figure_rule rule;                       // the tolerance and host flag that judged it
  std::optional<metric_key> key;          // the row it grades
  std::optional<std::string> check;       // the label of the declared check that selected it
  std::string reason;
  confirmation confirmed = confirmation::none;
  std::vector<attempt_reading> attempts;  // every attempt, the deciding one last; empty: measured once
  std::vector<health_counter> counters;   // a health line's counters (ECC errors, remapped rows, Xid events)

  [[nodiscard]] bool is_figure() const { return family != "health" && family != "node"; }
};

// A health line (family "health", basis health): the GPU(s) (none: the node), the item ("PCIe
// link", "ECC"), its reading ("Gen4 x16", "pending") and the reason in words.
[[nodiscard]] graded_line health_line(grade result, std::vector<int> gpus, std::string item, std::string reading,
                                      std::string reason);

// The confirmation rule on a figure line just decided on its last try against its band, or its
// link's peak (check's and fleet's one rule): line.attempts holds every try, the last one the
// line's value; the earlier ones are graded against the same band or peak. A FAIL stands only
// when every try failed (confirmed); a line that failed earlier and not on its last try is a WARN
// naming both readings (transient); one that failed on its last try but not on every one is a
// WARN (unsteady); a FAIL with no earlier try says it is not confirmed. The reason gets the words.
void weigh_tries(graded_line& line);

[[nodiscard]] nlohmann::json to_json(const graded_line& line);
// Any version of check.json's line, and fleet.json's; fields it does not have stay empty. A
// version-1 line's basis is read from what it holds (a band: set; a peak: peak; health).
[[nodiscard]] graded_line graded_line_from_json(const nlohmann::json& value);

}  // namespace hdb
