#include "hdb/family.hpp"

#include "hdb/build_info.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/fingerprint.hpp"
#include "hdb/gpu_lock.hpp"
#include "hdb/util/lists.hpp"  // all_digits
#include "hdb/util/stopping.hpp"
#include "hdb/sizes.hpp"
#include "hdb/sweep.hpp"
#include "hdb/warmup.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <unistd.h>

namespace hdb {
namespace {

// A deleter type rather than decltype(&std::fclose): fclose carries attributes (nonnull) that
// g++ 13 warns are dropped from a template argument.
struct file_closer {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

// Google Benchmark repeats a case the count it was registered with; a case that stopped early
// (repetition_stopper) spends each repetition it did not need on this skip, which no reporter
// shows: the output holds the repetitions measured, nothing else.
constexpr const char* unneeded_repetition = "hdbench: repetition not needed (the case stopped)";

// Google Benchmark 1.8 renamed the run's error_message to skip_message.
template <class Run>
bool is_unneeded(const Run& run) {
  if constexpr (requires { run.skip_message; }) return run.skip_message == unneeded_repetition;
  else return run.error_message == unneeded_repetition;
}

template <class Run>
std::vector<Run> measured_only(const std::vector<Run>& runs) {
  std::vector<Run> kept;
  std::copy_if(runs.begin(), runs.end(), std::back_inserter(kept), [](const Run& run) { return !is_unneeded(run); });
  return kept;
}

template <class Reporter>
class measured_only_reporter : public Reporter {
 public:
  using Reporter::Reporter;
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    Reporter::ReportRuns(measured_only(runs));
  }
};

// How a console reporter prints: colour only on a terminal (never in a file), counters in columns
// where --benchmark_counters_tabular asks, as Google Benchmark's own would.
struct console_style {
  bool color = false;
  bool tabular = false;
};

// The reporter Google Benchmark would make for a --benchmark_format or --benchmark_out_format,
// without the unneeded repetitions.
std::unique_ptr<benchmark::BenchmarkReporter> display_reporter(const std::string& format, console_style style) {
  if (format == "json") return std::make_unique<measured_only_reporter<benchmark::JSONReporter>>();
  if (format == "csv") {
    // Deprecated upstream, yet still what --benchmark_format=csv asks for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<measured_only_reporter<benchmark::CSVReporter>>();
#pragma GCC diagnostic pop
  }
  int options = benchmark::ConsoleReporter::OO_None;
  if (style.color) options |= benchmark::ConsoleReporter::OO_Color;
  if (style.tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
  return std::make_unique<measured_only_reporter<benchmark::ConsoleReporter>>(
      static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
}

// Flushes after every reported case: a crash or kill later keeps every finished case on disk
// (the file is then a valid JSON prefix, which the harness reads tolerantly).
class flushing_json_reporter : public benchmark::JSONReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    JSONReporter::ReportRuns(measured_only(runs));
    GetOutputStream().flush();
  }
};

struct run_record {
  std::string program;
  int failed_cases = 0;
};

[[noreturn]] void die_context_lost(const run_record& record, const std::string& case_name, const std::string& what) {
  std::cout.flush();
  std::fprintf(stderr,
               "%s: fatal: the CUDA context was lost in case %s: %s\n"
               "%s: every later case would fail; stopping. Cases finished before it are in the output.\n",
               record.program.c_str(), case_name.c_str(), what.c_str(), record.program.c_str());
  std::fflush(stderr);
  std::_Exit(3);
}

// Which host placement is in force: a case on another GPU re-binds the thread to that GPU's node.
struct placement_state {
  std::map<int, numa_placement> by_device;
  int applied_for = -1;
};

// A counter, headline or traffic pick the schema does not declare for the case's kind would reach
// the CSV under a meaning nobody wrote down: the case fails instead, naming it.
void check_declared(benchmark::State& state, const case_spec& spec, const family_declaration& schema, run_record& record) {
  std::vector<std::string> counters;
  for (const auto& [name, counter] : state.counters) counters.push_back(name);
  if (const auto problem = check_outputs(schema, spec.kind, counters, spec.headline_metrics, spec.traffic)) {
    ++record.failed_cases;
    state.SkipWithError(("undeclared in schema.json: " + *problem).c_str());
  }
}

// A CPU family's case makes no CUDA call here: no current device, no placement, and a cuda_error
// it throws is an ordinary failure (there is no context to check).
void run_guarded(benchmark::State& state, const case_spec& spec, const family_declaration& schema, run_record& record,
                 placement_state& placement, backend runs_on) {
  try {
    if (runs_on == backend::cuda && !spec.devices.empty()) {
      const int device = spec.devices.front();
      HDB_CUDA_CALL(cudaSetDevice(device));
      if (placement.applied_for != device && placement.by_device.contains(device)) {
        static_cast<void>(apply_numa_placement(placement.by_device.at(device)));
        placement.applied_for = device;
      }
    }
    if (!spec.skip_reason.empty()) throw skip_case(spec.skip_reason);
    if (spec.headline_aware_body) spec.headline_aware_body(state, spec.headline_metrics);
    else spec.body(state);
    if (!state.error_occurred()) check_declared(state, spec, schema, record);
  } catch (const skip_case& e) {
    state.SkipWithError(("skipped: " + std::string(e.what())).c_str());
  } catch (const cuda_error& e) {
    if (e.code() == cudaErrorMemoryAllocation) {
      state.SkipWithError(("skipped: not enough memory: " + std::string(e.what())).c_str());
      return;
    }
    // A sticky error also poisons every later call; check the device is still usable.
    if (runs_on == backend::cuda && (is_sticky(e.code()) || cudaDeviceSynchronize() != cudaSuccess)) {
      die_context_lost(record, spec.name, e.what());
    }
    ++record.failed_cases;
    state.SkipWithError(e.what());
  } catch (const std::bad_alloc&) {
    state.SkipWithError("skipped: not enough host memory for this case");
  } catch (const std::exception& e) {
    ++record.failed_cases;
    state.SkipWithError(e.what());
  }
}

// One JSON line per repetition, flushed: the harness sums a case's lines into its cost, and a
// killed process keeps what it measured.
void record_cost(std::FILE* file, const std::string& case_name, std::chrono::steady_clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  std::fprintf(file, "%s\n", nlohmann::json{{"case", case_name}, {"wall_s", seconds}}.dump().c_str());
  std::fflush(file);
}

bool cuda_device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

device_info assumed_device(int index) {
  device_info d;
  d.index = index;
  d.uuid = "GPU-assumed-" + std::to_string(index);
  d.name = "assumed GPU";
  return d;
}

// Drops what the tier selection (hdb/sweep.hpp) and, with --verdict, the verdict selection
// (verdict_cases) do not measure here, and returns how many cases the tiers alone keep (what the
// run would measure without --verdict). Both are taken over every registered case, as the gates
// are, so a gate's "largest" is the same case either way; a tier selection naming a GPU that is
// not selected is a usage error, not a full run.
std::size_t keep_selected(std::vector<case_spec>& cases, const run_options& options, const std::vector<device_info>& selected,
                          const family_declaration& schema) {
  std::vector<int> indices;
  for (const auto& d : selected) indices.push_back(d.index);
  require_selected(options.sweep, indices);
  const std::size_t selected_devices = selected.size();
  std::vector<case_shape> shapes;
  std::vector<gate_candidate> candidates;
  for (const case_spec& c : cases) {
    shapes.push_back({&c.kind, &c.labels, &c.devices, !c.headline_metrics.empty()});
    candidates.push_back({c.kind, &c.labels, &c.devices, !c.skip_reason.empty()});
  }
  const std::vector<bool> in_sweep = cases_in_sweep(shapes, options.sweep, selected_devices, schema.checks);
  const std::vector<bool> in_verdict =
      options.verdict ? verdict_cases(schema, candidates) : std::vector<bool>(cases.size(), true);
  std::vector<case_spec> kept;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (in_sweep[i] && in_verdict[i]) kept.push_back(std::move(cases[i]));
  }
  cases = std::move(kept);
  return static_cast<std::size_t>(std::count(in_sweep.begin(), in_sweep.end(), true));
}

std::string describe_sweep(const sweep_selection& sweep, std::size_t kept, std::size_t registered) {
  if (!sweep.devices && !sweep.pairs) return "full";
  std::string text = "tiered: " + std::to_string(kept) + " of " + std::to_string(registered) + " cases; full sweep on GPUs ";
  text += sweep.devices ? join_indices(*sweep.devices) : "all";
  text += ", pairs ";
  if (!sweep.pairs) return text + "all";
  if (sweep.pairs->empty()) return text + "none";
  for (std::size_t i = 0; i < sweep.pairs->size(); ++i) {
    text += (i ? "," : "") + std::to_string((*sweep.pairs)[i].first) + ">" + std::to_string((*sweep.pairs)[i].second);
  }
  return text;
}

std::string flag_value(const std::vector<std::string>& args, const std::string& prefix) {
  for (const auto& a : args) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

// The selected devices, or one line on stderr and nullopt (no GPU, or an index it lacks).
std::optional<std::vector<int>> select_devices(const run_options& options, const std::string& program) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: no usable CUDA GPU: %s\n", program.c_str(),
                 status == cudaSuccess ? "no CUDA device present" : cudaGetErrorString(status));
    return std::nullopt;
  }
  try {
    return resolve_devices(options.devices, count);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return std::nullopt;
  }
}

// The run's own context: what was built, asked and selected. Both backends.
void add_context(const family_declaration& schema, const run_options& options, const family_env& env,
                 const std::string& placement_text) {
  benchmark::AddCustomContext("hdbench.family", schema.family);
  benchmark::AddCustomContext("hdbench.schema_version", "3");
  benchmark::AddCustomContext("hdbench.schema", schema.source.dump());  // one line, key order kept
  benchmark::AddCustomContext("hdbench.revision", build_info::git_revision);
  benchmark::AddCustomContext("hdbench.build_type", build_info::build_type);
  benchmark::AddCustomContext("hdbench.quick", options.quick ? "true" : "false");
  benchmark::AddCustomContext("hdbench.devices", join_indices(device_indices(env)));
  benchmark::AddCustomContext("numa.placement", placement_text);
}

// The node's and the measured GPUs' fingerprints (CUDA and nvidia-smi): the GPU backend only.
void add_fingerprint_context(const family_env& env) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& d : env.devices) gpus.push_back(read_gpu_fingerprint(d.index).facts);
  for (const auto& [key, value] : context_pairs(read_node_fingerprint(false).facts, gpus)) {
    benchmark::AddCustomContext(key, value);
  }
}

}  // namespace

std::vector<int> device_indices(const family_env& env) {
  std::vector<int> indices;
  for (const auto& d : env.devices) indices.push_back(d.index);
  return indices;
}

const device_info& family_env::device(int index) const {
  for (const auto& d : devices) {
    if (d.index == index) return d;
  }
  throw std::out_of_range("device " + std::to_string(index) + " was not selected (--devices)");
}

std::string format_label(const case_spec& spec, const family_env& env) {
  std::string label = "case=" + spec.kind;
  for (const auto& [key, value] : spec.labels) label += ";" + key + "=" + value;
  if (!spec.devices.empty()) {
    std::string uuids;
    for (int d : spec.devices) uuids += (uuids.empty() ? "" : ",") + env.device(d).uuid;
    label += ";device=" + join_indices(spec.devices) + ";gpu_uuid=" + uuids;
  }
  if (!spec.headline_metrics.empty()) {
    label += ";headline=";
    for (std::size_t i = 0; i < spec.headline_metrics.size(); ++i) label += (i ? "," : "") + spec.headline_metrics[i];
  }
  if (!spec.traffic.empty()) {
    label += ";traffic=";
    bool first = true;
    for (const auto& [metric, traffic_class] : spec.traffic) {
      label += (first ? "" : ",") + metric + ":" + traffic_class;
      first = false;
    }
  }
  return label;
}

void set_headlines(const family_declaration& schema, std::vector<case_spec>& cases) {
  std::vector<gate_candidate> candidates;
  for (const case_spec& c : cases) candidates.push_back({c.kind, &c.labels, &c.devices, !c.skip_reason.empty()});
  const std::vector<std::string> metrics = gated_metrics(schema, candidates);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].headline_metrics.clear();
    if (!metrics[i].empty()) cases[i].headline_metrics.push_back(metrics[i]);
  }
}

case_spec make_case(std::string_view family, std::string_view kind, label_list params, std::vector<int> devices) {
  case_spec spec;
  spec.name = std::string(family) + "/" + std::string(kind);
  for (const auto& [key, value] : params) {
    if (key == "size_bytes") spec.name += "/size:" + value;
    else if (all_digits(value)) spec.name += "/" + key + ":" + value;
    else spec.name += "/" + value;
  }
  if (!devices.empty()) spec.name += "/gpu:" + join_indices(devices);
  spec.kind = kind;
  spec.labels = std::move(params);
  spec.devices = std::move(devices);
  return spec;
}

namespace {

// What the start-up steps of family_main fill in and its cases use, until the process ends. The
// members are in the order family_main's locals had, so they go in the same order at exit (the
// GPU locks first).
struct run_state {
  family_env env;
  std::vector<case_spec> cases;
  run_record record;
  placement_state placement;
  // Held until the process ends: one measurement per GPU at a time, across processes. Taken
  // before any context exists, so free memory and the fingerprint are not read while another
  // run holds the GPU.
  std::optional<gpu_locks> locks;
};

// Step 1: the declaration, held to the contract and to the family's name; false after one line
// on stderr.
bool load_declaration(std::string_view schema_json, const family_spec& family, const std::string& program,
                      family_declaration& schema) {
  try {
    schema = parse_declaration(schema_json);
    require_documented(schema);
  } catch (const declaration_error& e) {
    std::fprintf(stderr, "%s: bad schema.json: %s\n", program.c_str(), e.what());
    return false;
  }
  if (schema.family != family.name) {
    std::fprintf(stderr, "%s: schema.json declares family '%s'\n", program.c_str(), schema.family.c_str());
    return false;
  }
  return true;
}

// Step 2: our flags, then Google Benchmark's, all checked before the GPU is touched. The exit code
// where the process ends here (--version, --help, a bad flag); nullopt with `options` set.
std::optional<int> parse_flags(int argc, char** argv, const family_spec& family, const family_declaration& schema,
                               const std::string& program, run_options& options) {
  try {
    options = parse_run_options(std::vector<std::string>(argv, argv + argc), family.flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  }
  if (options.version) {
    std::printf("%s %s (%s, %s)\n", program.c_str(), build_info::version, build_info::git_revision, build_info::build_type);
    return 0;
  }
  if (options.help) {
    std::printf("%s — %s\n\nUsage: %s [flags] [--benchmark_* flags]\n\n%s\nGoogle Benchmark flags:\n", program.c_str(),
                schema.summary.c_str(), program.c_str(), describe_flags(family.flags).c_str());
    std::fflush(stdout);
    char help_flag[] = "--help";
    char* gb_argv[] = {argv[0], help_flag, nullptr};
    int gb_argc = 2;
    benchmark::Initialize(&gb_argc, gb_argv);  // prints its flags and exits
    return 0;
  }
  // Google Benchmark keeps argv[0] (its context's "executable"): a string of options, which lives
  // as long as the process.
  std::vector<char*> gb_argv;
  for (auto& a : options.benchmark_args) gb_argv.push_back(a.data());
  int gb_argc = static_cast<int>(gb_argv.size());
  gb_argv.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_argv.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_argv.data())) return 2;
  return std::nullopt;
}

// Step 3, GPU backend, listing where there is no GPU (or --assume-gpus): names need no GPU, so a
// planner lists a bigger node's cases from a login node. Prints the names; the exit code.
int list_assumed_gpus(const run_options& options, const family_spec& family, const family_declaration& schema,
                      const std::string& program) {
  family_env env;
  std::vector<case_spec> cases;
  const int assumed = std::max(options.assume_gpus, 1);
  if (options.assume_gpus == 0) std::fprintf(stderr, "%s: no GPU here; listing the cases of one GPU\n", program.c_str());
  for (int d = 0; d < assumed; ++d) env.devices.push_back(assumed_device(d));
  case_registry registry(cases);
  family.register_cases(options, env, registry);
  set_headlines(schema, cases);
  static_cast<void>(keep_selected(cases, options, env.devices, schema));
  for (const case_spec& spec : cases) std::printf("%s\n", spec.name.c_str());
  return 0;
}

// Step 3, GPU backend: the selected GPUs, their locks (not when listing), a context on each, the
// spin gate, the NUMA placement beside the first, and (not when listing) the run's context with
// the fingerprints. The exit code where it cannot start; nullopt when started.
std::optional<int> start_gpus(const run_options& options, const family_declaration& schema, const std::string& program,
                              bool listing, run_state& run) {
  const auto devices = select_devices(options, program);
  if (!devices) return 2;
  if (!listing) {
    std::vector<gpu_lock_target> targets;
    for (int d : *devices) {
      cudaDeviceProp props{};
      HDB_CUDA_CALL(cudaGetDeviceProperties(&props, d));
      targets.push_back({d, format_uuid(props.uuid)});
    }
    run.locks.emplace(std::move(targets), options.lock_timeout, program, std::cerr);
  }
  for (int d : *devices) {
    run.env.devices.push_back(read_device_info(d));
    HDB_CUDA_CALL(cudaSetDevice(d));  // creates the device's context, every module loaded (family_main)
  }
  HDB_CUDA_CALL(cudaSetDevice(run.env.devices.front().index));
  run.env.gate = std::make_unique<spin_gate>(options.gate_timeout);

  std::string placement_text;
  for (const auto& d : run.env.devices) {
    const auto chosen = choose_numa_placement(options.numa, read_pci_numa_node("/sys", d.pci_bus_id), read_numa_nodes("/sys"));
    placement_text += (placement_text.empty() ? "" : " | ") + ("GPU " + std::to_string(d.index) + ": " + chosen.reason);
    run.placement.by_device.emplace(d.index, chosen);
  }
  placement_text += "; " + apply_numa_placement(run.placement.by_device.at(run.env.devices.front().index));
  run.placement.applied_for = run.env.devices.front().index;
  // Listing prints names only: skip the fingerprint, which loads the PCIe link and runs
  // nvidia-smi (the harness lists every family before running it).
  if (!listing) {
    add_context(schema, options, run.env, placement_text);
    add_fingerprint_context(run.env);
  }
  return std::nullopt;
}

// Step 3, CPU backend: the family's stand-in devices that --devices selects, and (not when
// listing) the run's context. No CUDA call, no lock, no fingerprint, no placement.
void start_cpu(const run_options& options, const family_spec& family, const family_declaration& schema, bool listing,
               run_state& run) {
  const std::vector<device_info> available = family.cpu_devices ? family.cpu_devices() : std::vector<device_info>{};
  std::vector<int> selected;
  for (std::size_t i = 0; i < available.size(); ++i) {
    if (available[i].index != static_cast<int>(i)) throw std::logic_error("cpu_devices must be indexed 0, 1, ... in order");
    selected.push_back(available[i].index);
  }
  if (!options.devices.all) {
    for (int index : options.devices.indices) {
      if (index >= static_cast<int>(available.size())) {
        throw usage_error("--devices=" + join_indices(options.devices.indices) + " but this CPU family has " +
                          std::to_string(available.size()) + " stand-in device" + (available.size() == 1 ? "" : "s"));
      }
    }
    selected = options.devices.indices;
  }
  for (int index : selected) run.env.devices.push_back(available[static_cast<std::size_t>(index)]);
  if (!listing) {
    add_context(schema, options, run.env, "not placed: a CPU family (backend::cpu) measures no GPU to place it beside");
    benchmark::AddCustomContext("hdbench.backend", "cpu");
  }
}

// Step 4: the family's cases, registered, made headlines by the declaration's gates, cut to the
// tier selection (and with --verdict to what the checks and gates select) and held to the
// declaration. The exit code when a case breaks it.
std::optional<int> register_checked(const run_options& options, const family_spec& family, const family_declaration& schema,
                                    const std::string& program, bool listing, run_state& run) {
  case_registry registry(run.cases);
  family.register_cases(options, run.env, registry);
  set_headlines(schema, run.cases);
  const std::size_t registered = run.cases.size();
  const std::size_t without_verdict = keep_selected(run.cases, options, run.env.devices, schema);
  if (!listing) {
    benchmark::AddCustomContext("hdbench.sweep", describe_sweep(options.sweep, without_verdict, registered));
    // A verdict run's report says how much it left out on purpose: against this count.
    benchmark::AddCustomContext("hdbench.verdict", options.verdict ? "true" : "false");
    benchmark::AddCustomContext("hdbench.cases_without_verdict", std::to_string(without_verdict));
  }
  for (const case_spec& spec : run.cases) {
    if (const auto problem = check_registration(schema, spec.kind, spec.labels)) {
      std::fprintf(stderr, "%s: case %s: %s in schema.json\n", program.c_str(), spec.name.c_str(), problem->c_str());
      return 2;
    }
  }
  return std::nullopt;
}

// Step 5, GPU backend, not when listing: last before measuring, so the clocks have no time to
// fall back: the first case of a fresh process must not run on a cold GPU.
void warm_up(const family_env& env) {
  for (const auto& report : warm_start(device_indices(env))) {
    for (const auto& [key, value] : warmup_context(report)) benchmark::AddCustomContext(key, value);
  }
}

// What a decision reads of a case, and how sure of it it must be: each gated headline's metric
// and each checked figure's, with a quarter of the tolerance that judges it.
std::vector<precision_target> decision_targets(const case_spec& spec, const family_declaration& schema) {
  std::vector<precision_target> targets;
  const auto add = [&](const std::string& metric, std::optional<double> tolerance) {
    if (!tolerance || !(*tolerance > 0)) return;
    const double half_width = *tolerance * stopping_policy::tolerance_fraction;
    for (auto& target : targets) {
      if (target.metric == metric) {
        target.relative_half_width = std::min(target.relative_half_width, half_width);
        return;
      }
    }
    targets.push_back({metric, half_width});
  };
  for (const auto& metric : spec.headline_metrics) add(metric, schema.tolerance(nullptr, metric));
  for (const auto& check : schema.checks) {
    if (selection_matches(check.case_kind, check.parameters, spec.kind,
                          [&](std::string_view name) { return label_value(spec.labels, name); })) {
      add(check.metric, schema.tolerance(&check, check.metric));
    }
  }
  return targets;
}

// Each case's stopping rule: the user's --benchmark_repetitions, the quick profile's and the
// fixed mode's counts, or the precision rule for what a decision reads.
repetition_stopper stopper_for(const case_spec& spec, const family_declaration& schema, const run_options& options) {
  if (options.user_repetitions) {
    const std::string given = flag_value(options.benchmark_args, "--benchmark_repetitions=");
    return repetition_stopper(std::max(1, std::atoi(given.c_str())));
  }
  const repetition_policy counts = repetitions_for(options.quick);
  const int fixed = spec.headline_metrics.empty() ? counts.regular : counts.headline;
  if (options.quick || options.stopping == stopping_mode::fixed) return repetition_stopper(fixed);
  auto targets = decision_targets(spec, schema);
  if (targets.empty()) return repetition_stopper(counts.regular);
  return repetition_stopper(std::move(targets), stopping_policy{});
}

std::map<std::string, double> counter_values(const benchmark::State& state) {
  std::map<std::string, double> values;
  for (const auto& [name, counter] : state.counters) values[name] = counter.value;
  return values;
}

// Spends a repetition the case does not need: entering the loop keeps Google Benchmark's
// iteration count equal across a case's repetitions, which its statistics require.
void skip_unneeded(benchmark::State& state) {
  for (auto _ : state) {
    state.SkipWithError(unneeded_repetition);
    break;
  }
}

// Step 6: every case as a Google Benchmark with its repetitions, guarded and costed, then the run
// (or the listing), streamed as JSON. The process's exit code.
int run_cases(const run_options& options, const family_declaration& schema, const std::string& program, bool listing,
              backend runs_on, run_state& run) {
  std::unique_ptr<std::FILE, file_closer> costs;
  if (!options.case_costs.empty() && !listing) {
    costs.reset(std::fopen(options.case_costs.c_str(), "a"));
    if (!costs) {
      std::fprintf(stderr, "%s: cannot write --case-costs=%s\n", program.c_str(), options.case_costs.c_str());
      return 2;
    }
  }
  std::vector<repetition_stopper> stoppers;
  stoppers.reserve(run.cases.size());
  for (const case_spec& spec : run.cases) stoppers.push_back(stopper_for(spec, schema, options));
  for (std::size_t i = 0; i < run.cases.size(); ++i) {
    const case_spec& spec = run.cases[i];
    repetition_stopper& stopper = stoppers[i];
    auto* b = benchmark::RegisterBenchmark(spec.name.c_str(), [&spec, &stopper, &schema, &run, &costs, runs_on](benchmark::State& state) {
      if (stopper.done()) return skip_unneeded(state);
      const auto started = std::chrono::steady_clock::now();
      const std::string label = format_label(spec, run.env);
      state.SetLabel(label);
      run_guarded(state, spec, schema, run.record, run.placement, runs_on);
      const auto took = std::chrono::steady_clock::now() - started;
      if (costs) record_cost(costs.get(), spec.name, took);
      if (state.error_occurred()) return stopper.stop_failed();
      stopper.add(counter_values(state), std::chrono::duration<double>(took).count());
      // The last repetition says how many the case took and why it stopped (results.csv).
      if (stopper.done()) {
        state.SetLabel(label + ";repetitions=" + std::to_string(stopper.taken()) + ";stopped_by=" +
                       std::string(to_string(*stopper.reason())));
      }
    });
    b->UseManualTime()->Iterations(spec.iterations)->Unit(benchmark::kMicrosecond);
    // Repetitions() in code would override the command line, so only inject when the user is silent.
    if (!options.user_repetitions) b->Repetitions(stopper.ceiling());
  }

  const std::string tabular = flag_value(options.benchmark_args, "--benchmark_counters_tabular=");
  const console_style console{isatty(STDOUT_FILENO) != 0, tabular == "true" || tabular == "1"};
  const auto display = display_reporter(flag_value(options.benchmark_args, "--benchmark_format="), console);
  // Google Benchmark refuses a file reporter without --benchmark_out.
  std::unique_ptr<benchmark::BenchmarkReporter> file;
  if (!flag_value(options.benchmark_args, "--benchmark_out=").empty()) {
    const std::string out_format = flag_value(options.benchmark_args, "--benchmark_out_format=");
    file = out_format.empty() || out_format == "json" ? std::make_unique<flushing_json_reporter>()
                                                      : display_reporter(out_format, {false, console.tabular});
  }
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::Shutdown();
  if (run.record.failed_cases > 0) {
    std::fprintf(stderr, "%s: %d case%s failed (see the error messages above)\n", program.c_str(), run.record.failed_cases,
                 run.record.failed_cases == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

}  // namespace

int family_main(int argc, char** argv, const family_spec& family, std::string_view schema_json) {
  // Every kernel module is loaded when a context is created, not at the kernel's first launch:
  // a module loaded lazily behind a held spin gate would wait for the gated device forever. The
  // driver reads this once, at the process's first CUDA call, so it is set before anything else
  // (before_cuda's workers included, which inherit it); a value the user set wins.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  const std::string program = "hdbench-" + family.name;
  family_declaration schema;
  if (!load_declaration(schema_json, family, program, schema)) return 2;
  run_options options;
  if (const auto exit_code = parse_flags(argc, argv, family, schema, program, options)) return *exit_code;

  if (family.before_cuda) {
    if (const auto exit_code = family.before_cuda(options, argc, argv)) return *exit_code;
  }

  run_state run;
  run.record.program = program;
  const bool listing = listing_only(options);
  const bool cpu = family.runs_on == backend::cpu;
  try {
    if (options.assume_gpus > 0 && !listing) {
      std::fprintf(stderr, "%s: --assume-gpus lists cases only; add --benchmark_list_tests\n", program.c_str());
      return 2;
    }
    if (cpu) {
      start_cpu(options, family, schema, listing, run);
    } else {
      if (listing && (options.assume_gpus > 0 || !cuda_device_present())) return list_assumed_gpus(options, family, schema, program);
      if (const auto exit_code = start_gpus(options, schema, program, listing, run)) return *exit_code;
    }
    if (const auto exit_code = register_checked(options, family, schema, program, listing, run)) return *exit_code;
    if (!listing && !cpu) warm_up(run.env);
  } catch (const gpu_busy_error& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: start-up failed: %s\n", program.c_str(), e.what());
    return 2;
  }
  return run_cases(options, schema, program, listing, family.runs_on, run);
}

bool listing_only(const run_options& options) {
  const auto& args = options.benchmark_args;
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" || a == "--benchmark_list_tests=1";
  });
}

}  // namespace hdb
