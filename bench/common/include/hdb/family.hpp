#pragma once
// The shared main of every family binary. A family declares its flags, metrics and cases; this
// layer parses flags, checks the GPU, places the thread on the GPU's NUMA node, records the run
// context, injects default repetitions, guards every case, and streams JSON results so a killed
// process loses nothing it finished.
#include "hdb/options.hpp"
#include "hdb/timing.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hdb {

// Thrown by a case that cannot run here (one GPU for a pair, not enough memory, ...). The case
// is reported as skipped with the reason; any other exception reports it as failed.
class skip_case : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct metric_spec {
  std::string name;
  std::string unit;
  std::string better;  // "higher" or "lower"
  std::string description;
};

struct case_spec {
  std::string name;                                          // Google Benchmark name
  std::vector<std::pair<std::string, std::string>> labels;  // case=..., direction=..., size_bytes=...
  std::vector<std::string> headline_metrics;                 // gate `hdbench compare`; more repetitions
  benchmark::IterationCount iterations = 1;                  // fixed: no adaptive iteration count
  std::function<void(benchmark::State&)> body;
};

// What every case of a run shares: the device, its properties and one spin gate.
struct family_env {
  int device = 0;
  int sm_count = 0;
  std::size_t free_device_memory = 0;  // at start-up, before any case allocated
  std::unique_ptr<spin_gate> gate;
};

class case_registry {
 public:
  explicit case_registry(std::vector<case_spec>& cases) : cases_(cases) {}
  void add(case_spec spec) { cases_.push_back(std::move(spec)); }

 private:
  std::vector<case_spec>& cases_;
};

struct family_spec {
  std::string name;     // "copy": binary hdbench-copy, context hdbench.family
  std::string summary;  // one paragraph for --help
  std::vector<flag_spec> flags;
  std::vector<metric_spec> metrics;
  std::string fit_metric;  // per-operation time to fit with t = alpha + n/beta, or empty
  std::function<void(const run_options&, family_env&, case_registry&)> register_cases;
};

int family_main(int argc, char** argv, const family_spec& family);

// Repetition defaults injected when the user did not pass --benchmark_repetitions.
struct repetition_policy {
  int regular = 5;
  int headline = 10;
};
[[nodiscard]] repetition_policy repetitions_for(bool quick) noexcept;

// "case=bandwidth;direction=h2d;...;headline=bandwidth" — the label format of docs/benchmark-output.md.
[[nodiscard]] std::string format_label(const case_spec& spec);

}  // namespace hdb
