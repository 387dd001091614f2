#pragma once
// The shared main of every family binary. A family declares its parameters, metrics and case
// kinds in its schema.json and its flags and cases here; this layer parses flags, checks the GPU,
// places the thread on the GPU's NUMA node, records the run context, holds every case to the
// declaration, repeats each case (a fixed count, or until precise: hdb/util/stopping.hpp), guards
// every case, and streams JSON results so a killed process loses nothing it finished.
#include "hdb/devices.hpp"
#include "hdb/contract/declaration.hpp"  // the declaration, label_list, check_registration, check_outputs
#include "hdb/options.hpp"
#include "hdb/timing.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hdb {

// Thrown by a case that cannot run here (one GPU for a pair, not enough memory, ...). The case
// is reported as skipped with the reason; any other exception reports it as failed.
class skip_case : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct case_spec {
  std::string name;                        // Google Benchmark name
  label_list labels;                       // direction=..., size_bytes=... (case= and device labels are added)
  std::string kind;                        // the `case` label: bandwidth, latency, pipeline, ...
  std::vector<int> devices;                // CUDA devices it measures; devices.front() is current in the body
  // Gate `hdbench compare`, and run more repetitions. Set by the shared main from schema.json's
  // "gates" (set_headlines), never by a family.
  std::vector<std::string> headline_metrics;
  // Non-empty: registered only so the run reports why it cannot run here (one GPU for a pair):
  // reported as skipped with this reason, its body never runs, and it never gates.
  std::string skip_reason;
  // metric -> traffic class (the link its bytes cross, for % of peak); one of the classes the
  // schema allows for that metric. A bandwidth without a pick has no peak for this case.
  std::map<std::string, std::string> traffic;
  benchmark::IterationCount iterations = 1;   // fixed: no adaptive iteration count
  std::function<void(benchmark::State&)> body;
  // Instead of body, where what a case measures depends on whether it gates (overlap's gated
  // pipeline times its serial twin in every repetition): called with headline_metrics.
  std::function<void(benchmark::State&, const std::vector<std::string>& headline_metrics)> headline_aware_body;
};

// A case's name and labels from the same fields, so they can never disagree:
// name "<family>/<kind>/<v1>/<v2>/.../size:<bytes>/gpu:<0,1>" (values in the order given; the
// key is kept for size_bytes as "size:" and for every numeric value as "key:value"), labels
// "direction=...;size_bytes=..." in the same order. Body, headline and iterations stay empty.
[[nodiscard]] case_spec make_case(std::string_view family, std::string_view kind, label_list params,
                                  std::vector<int> devices);

// What every case of a run shares: the selected devices and one spin gate for all of them.
struct family_env {
  std::vector<device_info> devices;  // the selected devices, ascending index
  // One release flag in portable pinned memory: streams on every device wait on it, so one
  // release starts a batch spanning GPUs at once (the nvbandwidth latch). Empty for backend::cpu.
  std::unique_ptr<spin_gate> gate;

  // The record of CUDA device `index`; throws std::out_of_range when it was not selected.
  [[nodiscard]] const device_info& device(int index) const;
};

class case_registry {
 public:
  explicit case_registry(std::vector<case_spec>& cases) : cases_(cases) {}
  void add(case_spec spec) { cases_.push_back(std::move(spec)); }

 private:
  std::vector<case_spec>& cases_;
};

// What a family's cases run on. cuda: the node's GPUs (every bench family). cpu: the host alone
// (the stand-in family of the tests, tests/standin_family, which needs no GPU): family_main then
// makes no CUDA call (no device query, context, spin gate or warm-up), takes no GPU lock, reads no
// GPU or node fingerprint and places the thread nowhere; its devices are the family's stand-ins
// (family_spec::cpu_devices), --devices selecting among them, and env.gate stays empty.
enum class backend { cuda, cpu };

// Summary, parameters, metrics and the fit metric are the schema's (bench/<family>/schema.json).
struct family_spec {
  std::string name;  // "copy": binary hdbench-copy, context hdbench.family; the schema's "family"
  std::vector<flag_spec> flags;
  std::function<void(const run_options&, family_env&, case_registry&)> register_cases;
  // Optional. Runs after every flag is checked and before any CUDA call of this process: a family
  // that starts worker processes (one per GPU, or ranks under mpirun) decides here whether this
  // process is a worker. Returning an exit code ends the process with it (a worker, which writes
  // no JSON and takes no fingerprint); std::nullopt continues as the driver.
  std::function<std::optional<int>(const run_options&, int argc, char** argv)> before_cuda = {};
  backend runs_on = backend::cuda;
  // backend::cpu only: the devices its cases name (index ascending from 0, uuid, name), which
  // stand in for GPUs the family does not use; --assume-gpus changes nothing for such a family.
  std::function<std::vector<device_info>()> cpu_devices = {};
};

// The one place a case becomes a headline: each case's headline_metrics from the declaration's
// gates (the metric of the first gate selecting it, gated_metrics), after the family registered
// every case, so a gate's "largest" size is the run's.
void set_headlines(const family_declaration& schema, std::vector<case_spec>& cases);

// `schema_json` is the family's declaration, hdb::embedded_schema() in a family binary. A
// declaration that breaks the contract, or a case it does not declare, ends the process with 2.
int family_main(int argc, char** argv, const family_spec& family, std::string_view schema_json);

// The CUDA indices of env.devices, in order.
[[nodiscard]] std::vector<int> device_indices(const family_env& env);

// Whether Google Benchmark was asked only to list the cases: then nothing is measured, so no
// lock, fingerprint or topology read is worth its time.
[[nodiscard]] bool listing_only(const run_options& options);

// "case=bandwidth;direction=h2d;...;device=0;gpu_uuid=GPU-...;headline=bandwidth;
// traffic=bandwidth:pcie_per_direction" — the label format of docs/benchmark-output.md. The
// device labels come from `devices` and the env.
[[nodiscard]] std::string format_label(const case_spec& spec, const family_env& env);

}  // namespace hdb
