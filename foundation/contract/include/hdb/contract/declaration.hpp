#pragma once
// A family's declaration, bench/<family>/schema.json: its typed parameters, its metrics (unit,
// better, the traffic classes they may carry), its case kinds and any traffic class of its own.
// It is the only description of a family's numbers: the CSV's parameter columns, the checks on
// what a binary reported, % of peak and the report's tables are derived from it. A binary
// publishes it unchanged in its Google Benchmark context as `hdbench.schema` (after the shared
// main held every case to it: check_registration, check_outputs); the build copies each one
// beside hdbench as schema/<family>.json for the commands that read no raw JSON.
// One model and one parser for the bench binaries and the harness (host-only, no CUDA).
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hdb {

// A declaration that breaks the rules (docs/csv-schema.md): "<family>: <what is wrong>". The
// harness translates it into its own error where it reads one; a binary refuses to start.
class declaration_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// neutral: a description, not a quality (a chosen chunk size, a timeline position); it never gates.
enum class better { higher, lower, neutral };

// int: decimal digits only; text: never all digits, so pandas always loads it as text.
enum class param_type { integer, text };

struct parameter_decl {
  std::string name;
  param_type type = param_type::text;
  std::vector<std::string> values;  // the allowed values of a text parameter; empty: any
  std::string description;
};

struct metric_decl {
  std::string name;
  std::string unit;  // one of metric_units
  better direction = better::higher;
  std::string description;
  std::vector<std::string> traffic;  // classes a case may pick for it; empty: it has no peak
  // The change that matters for a node (a fraction: 0.03 = 3 %): `hdbench check` FAILs a figure of
  // this metric only when it is outside the set's band and worse than the set's centre by more
  // than this. A check may declare its own. Every gating headline metric declares one.
  std::optional<double> tolerance;
};

struct case_decl {
  std::string name;  // the `case` column
  std::string description;
  std::vector<std::string> parameters;  // exactly those appear in the case's label
  std::vector<std::string> metrics;     // the counters it may set
  // Those its gates name, in the order of `metrics`; an older stored declaration's own list.
  std::vector<std::string> headlines;
};

// Links whose rates meta.json records, from which every traffic class is composed.
enum class link_kind {
  pcie,         // one GPU's PCIe rate per direction at its maximum link
  hbm,          // one GPU's HBM peak
  nvlink_pair,  // NVLinks between the row's src and dst x per-link rate
  nvlink_gpu,   // one GPU's active NVLinks x per-link rate
};
enum class link_combine { sum, min, first };  // over the row's GPUs

struct traffic_class {
  std::string name;
  link_kind link = link_kind::pcie;
  link_combine combine = link_combine::first;
  int directions = 1;         // 2: both directions at once
  double traffic_factor = 1;  // bytes the hardware moves per byte the metric counts
  std::string basis;          // how the report words the peak, "PCIe per direction"
};

// A case's parameters as labelled, in label order: {"direction", "h2d"}, {"size_bytes", "4096"}.
using label_list = std::vector<std::pair<std::string, std::string>>;

// A figure `hdbench check` grades on every GPU beside the family's headlines: what a bring-up
// engineer reads (pageable and bidirectional copies, small-copy latency, staged transfers). It
// selects the median rows of one case kind whose parameters have the given values (parameters
// not named are free) and one of the kind's metrics.
struct check_decl {
  std::string label;      // how the check prints the figure: "pageable h2d 1 GiB"
  std::string case_kind;  // "case"
  label_list parameters;  // "parameters": name -> value, as labelled (an int parameter's digits)
  std::string metric;
  // false: % of the traffic class's peak says nothing about the node (a pageable copy is bound by
  // the host's memcpy into a staging buffer), so without a reference set it is not graded.
  bool graded_by_peak = true;
  // The metric's tolerance for this figure, where it differs (a pageable copy's against a pinned one's).
  std::optional<double> tolerance;
  // The host's CPU and memory set this figure's rate (pageable copies, host-staged transfers), not
  // the GPU or its link: check words its line as the host's ("host_bound": true).
  bool host_bound = false;
  std::string description;
};

// A selection of rows that gate `hdbench compare` (schema.json's "gates"; docs/csv-schema.md): the
// shared main makes `metric` a headline of every case it selects, and no family's C++ names one.
// It selects as a check does: cases of one kind whose labels have the given values (parameters not
// named are free). One int parameter may instead be "largest" or "smallest" (gate_largest,
// gate_smallest): of the cases the other parameters select on one set of GPUs, those with that
// parameter's largest (smallest) registered value, so a gate follows --sizes. A case gates on the
// first gate in declaration order that selects it (a narrower gate goes first); a case registered
// only to say why it cannot run (skipped) never gates.
struct gate_decl {
  std::string case_kind;  // "case"
  label_list parameters;  // "parameters": name -> value, as labelled, or "largest" / "smallest"
  std::string metric;     // one of the kind's metrics, never a neutral one
  std::string description;  // why this row gates (and why its neighbours do not)
};

inline constexpr std::string_view gate_largest = "largest";
inline constexpr std::string_view gate_smallest = "smallest";

// The alpha-beta fit t(n) = alpha + n/beta of one of the family's time metrics ("fit" in
// schema.json; docs/csv-schema.md): the harness fits each group of that metric's medians that
// differ only in size_bytes and writes one row per role under the metric the family declares for
// it. A role's unit and direction follow from the fit itself, so the declared metric must have them.
enum class fit_role { beta, alpha, n_half };  // the order of a group's fit rows
struct fit_role_info {
  fit_role role;
  std::string_view key;  // its key in "fit"
  std::string_view unit;
  better direction;
};
inline constexpr fit_role_info fit_roles[] = {
    {fit_role::beta, "beta", "GB/s", better::higher},    // the asymptotic bandwidth
    {fit_role::alpha, "alpha", "us", better::lower},     // the fixed cost of one operation
    {fit_role::n_half, "n_half", "B", better::lower}};  // alpha * beta: the size that reaches half of beta

struct fit_decl {
  std::string of;                     // the time metric fitted
  std::array<std::string, 3> metrics;  // by fit_role
  [[nodiscard]] const std::string& metric(fit_role role) const { return metrics[static_cast<std::size_t>(role)]; }
};

struct family_declaration {
  std::string family;
  std::string summary;
  std::vector<parameter_decl> parameters;  // declaration order
  std::vector<metric_decl> metrics;        // declaration order
  std::vector<case_decl> cases;            // declaration order
  std::optional<fit_decl> fit;             // none when the family has no alpha-beta fit
  std::vector<traffic_class> traffic_classes;  // the family's own, beside the built-in ones
  std::vector<check_decl> checks;              // "checks": bring-up figures for `hdbench check`
  std::vector<gate_decl> gates;                // "gates": what gates `hdbench compare`, in order
  nlohmann::ordered_json source;           // the document as read, key order kept (meta.json, hdbench.schema)

  // nullptr when not declared.
  [[nodiscard]] const parameter_decl* parameter(std::string_view name) const;
  [[nodiscard]] const metric_decl* metric(std::string_view name) const;
  [[nodiscard]] const case_decl* case_kind(std::string_view name) const;
  // The tolerance of a figure: the check's own, else its metric's; nullopt when neither declares one.
  [[nodiscard]] std::optional<double> tolerance(const check_decl* check, std::string_view metric) const;
};

// The closed set of units.
inline constexpr std::string_view metric_units[] = {"GB/s", "us", "us/MiB", "B", "%", "ratio", "count"};

// results.csv's core columns: before the parameter columns, and after them.
[[nodiscard]] const std::vector<std::string>& leading_columns();
[[nodiscard]] const std::vector<std::string>& trailing_columns();
// Columns of results.csv that are never a parameter.
[[nodiscard]] bool is_core_column(std::string_view name);
// Keys Google Benchmark writes into every entry itself: never a metric, ignored when collecting.
[[nodiscard]] bool is_benchmark_field(std::string_view key);

// The standard classes: pcie_per_direction, pcie_per_direction_per_gpu, pcie_both_directions,
// hbm_read_write, nvlink_per_direction, nvlink_both_directions, nvlink_bus.
[[nodiscard]] const std::vector<traffic_class>& builtin_traffic_classes();
// A built-in class or one of `family`'s own (family may be nullptr); nullptr when neither has it.
[[nodiscard]] const traffic_class* find_traffic_class(std::string_view name, const family_declaration* family);

// Checks everything schema.json's rules say (docs/csv-schema.md) and throws declaration_error
// "<family>: <what is wrong>" on the first problem.
[[nodiscard]] family_declaration parse_declaration(const nlohmann::ordered_json& document);
// The same from text (a schema.json, or the context's `hdbench.schema`).
[[nodiscard]] family_declaration parse_declaration(std::string_view text);
// What a binary holds its own declaration to beyond the rules: a summary, a description of every
// metric, case kind and gate (its --help and the schema doc print them), a tolerance for every
// figure check grades (each check, and each headline metric whose better is not neutral, which
// every gate's metric is), and no case's "headlines" (its gates decide them). Throws
// declaration_error.
void require_documented(const family_declaration& declaration);

// What is wrong with a case at registration, or nullopt: its kind and every label parameter
// must be declared for the kind, every value must have the parameter's type and, for a text
// parameter with values, be one of them. The message names the parameter.
[[nodiscard]] std::optional<std::string> check_registration(const family_declaration& declaration, std::string_view kind,
                                                            const label_list& labels);

// A case's label value of parameter `key`; nullptr where the label has none.
[[nodiscard]] const std::string* label_value(const label_list& labels, std::string_view key);

// The one selection rule of a check's and a gate's cases: cases of kind `case_kind` whose labels
// have the `wanted` values, parameters not named free; a gate's "largest" or "smallest" matches
// any whole number here (gate_selects then keeps the extreme). `value_of` gives a case's label
// value by parameter name, nullptr where it has none.
[[nodiscard]] bool selection_matches(std::string_view case_kind, const label_list& wanted, std::string_view kind,
                                     const std::function<const std::string*(std::string_view)>& value_of);

// A registered case as the gates and checks see it.
struct gate_candidate {
  std::string_view kind;
  const label_list* labels = nullptr;
  const std::vector<int>* devices = nullptr;  // the GPUs it measures: "largest" is taken per set
  bool skipped = false;  // registered only to report why it cannot run here: never gates
};

// The headline metric of each candidate from the declaration's gates (gate_decl): the metric of
// the first gate that selects it, or "" where none does.
[[nodiscard]] std::vector<std::string> gated_metrics(const family_declaration& declaration,
                                                     const std::vector<gate_candidate>& candidates);

// Which candidates a verdict run measures (a binary's --verdict): those a gate selects (as
// gated_metrics does) and those a check selects (selection_matches), which are every figure check
// grades and compare gates. A skipped candidate is kept where a gate would select it if it could
// run, so that the verdict run still says why that figure is missing (one GPU, no pair).
[[nodiscard]] std::vector<bool> verdict_cases(const family_declaration& declaration,
                                              const std::vector<gate_candidate>& candidates);

// What is wrong with a finished case, or nullopt: every counter it set must be declared for its
// kind (and never be named like a Google Benchmark key), every headline must be one of the kind's
// headlines, every traffic pick a metric of the kind with a class that metric allows. The
// message names the counter, headline or metric.
[[nodiscard]] std::optional<std::string> check_outputs(const family_declaration& declaration, std::string_view kind,
                                                       const std::vector<std::string>& counters,
                                                       const std::vector<std::string>& headlines,
                                                       const std::map<std::string, std::string>& traffic);

}  // namespace hdb
