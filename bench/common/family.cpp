#include "hdb/family.hpp"

#include "hdb/build_info.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/fingerprint.hpp"
#include "hdb/kernels.hpp"
#include "hdb/sizes.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>

namespace hdb {
namespace {

// Flushes after every reported case: a crash or kill later keeps every finished case on disk
// (the file is then a valid JSON prefix, which the harness reads tolerantly).
class flushing_json_reporter : public benchmark::JSONReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    JSONReporter::ReportRuns(runs);
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

void run_guarded(benchmark::State& state, const case_spec& spec, run_record& record) {
  state.SetLabel(format_label(spec));
  try {
    spec.body(state);
  } catch (const skip_case& e) {
    state.SkipWithError(("skipped: " + std::string(e.what())).c_str());
  } catch (const cuda_error& e) {
    if (e.code() == cudaErrorMemoryAllocation) {
      state.SkipWithError(("skipped: not enough memory: " + std::string(e.what())).c_str());
      return;
    }
    // A sticky error also poisons every later call; check the device is still usable.
    if (is_sticky(e.code()) || cudaDeviceSynchronize() != cudaSuccess) die_context_lost(record, spec.name, e.what());
    ++record.failed_cases;
    state.SkipWithError(e.what());
  } catch (const std::bad_alloc&) {
    state.SkipWithError("skipped: not enough host memory for this case");
  } catch (const std::exception& e) {
    ++record.failed_cases;
    state.SkipWithError(e.what());
  }
}

std::string flag_value(const std::vector<std::string>& args, const std::string& prefix) {
  for (const auto& a : args) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

bool listing_only(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" || a == "--benchmark_list_tests=1";
  });
}

nlohmann::json metrics_json(const family_spec& family) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& m : family.metrics) {
    metrics[m.name] = {{"unit", m.unit}, {"better", m.better}, {"description", m.description}};
  }
  return metrics;
}

int select_device(const run_options& options, const std::string& program) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: no usable CUDA GPU: %s\n", program.c_str(),
                 status == cudaSuccess ? "no CUDA device present" : cudaGetErrorString(status));
    return -1;
  }
  if (options.device >= count) {
    std::fprintf(stderr, "%s: --device=%d but this node has %d CUDA device%s (0..%d)\n", program.c_str(),
                 options.device, count, count == 1 ? "" : "s", count - 1);
    return -1;
  }
  return options.device;
}

void add_context(const family_spec& family, const run_options& options, const family_env& env,
                 const std::string& placement_text) {
  benchmark::AddCustomContext("hdbench.family", family.name);
  benchmark::AddCustomContext("hdbench.schema_version", "1");
  benchmark::AddCustomContext("hdbench.metrics", metrics_json(family).dump());
  if (!family.fit_metric.empty()) benchmark::AddCustomContext("hdbench.fit_metric", family.fit_metric);
  benchmark::AddCustomContext("hdbench.revision", build_info::git_revision);
  benchmark::AddCustomContext("hdbench.build_type", build_info::build_type);
  benchmark::AddCustomContext("hdbench.quick", options.quick ? "true" : "false");
  benchmark::AddCustomContext("numa.placement", placement_text);
  const auto node = read_node_fingerprint(false).facts;
  const auto gpu = read_gpu_fingerprint(env.device).facts;
  for (const auto& [key, value] : context_pairs(node, gpu)) benchmark::AddCustomContext(key, value);
}

}  // namespace

repetition_policy repetitions_for(bool quick) noexcept { return quick ? repetition_policy{3, 5} : repetition_policy{}; }

std::string format_label(const case_spec& spec) {
  std::string label;
  for (const auto& [key, value] : spec.labels) label += (label.empty() ? "" : ";") + key + "=" + value;
  if (!spec.headline_metrics.empty()) {
    label += ";headline=";
    for (std::size_t i = 0; i < spec.headline_metrics.size(); ++i) label += (i ? "," : "") + spec.headline_metrics[i];
  }
  return label;
}

int family_main(int argc, char** argv, const family_spec& family) {
  const std::string program = "hdbench-" + family.name;
  run_options options;
  try {
    options = parse_run_options(std::vector<std::string>(argv, argv + argc), family.flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  }
  if (options.help) {
    std::printf("%s — %s\n\nUsage: %s [flags] [--benchmark_* flags]\n\n%s\nGoogle Benchmark flags:\n", program.c_str(),
                family.summary.c_str(), program.c_str(), describe_flags(family.flags).c_str());
    std::fflush(stdout);
    char help_flag[] = "--help";
    char* gb_argv[] = {argv[0], help_flag, nullptr};
    int gb_argc = 2;
    benchmark::Initialize(&gb_argc, gb_argv);  // prints its flags and exits
    return 0;
  }

  family_env env;
  std::vector<case_spec> cases;
  run_record record{program, 0};
  try {
    env.device = select_device(options, program);
    if (env.device < 0) return 2;
    HDB_CUDA_CALL(cudaSetDevice(env.device));
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&env.sm_count, cudaDevAttrMultiProcessorCount, env.device));
    std::size_t total = 0;
    HDB_CUDA_CALL(cudaMemGetInfo(&env.free_device_memory, &total));
    kernels::preload();
    env.gate = std::make_unique<spin_gate>(options.gate_timeout);

    char bus_id[32] = {};
    HDB_CUDA_CALL(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), env.device));
    const auto placement = choose_numa_placement(options.numa, read_pci_numa_node("/sys", bus_id), read_numa_nodes("/sys"));
    const std::string applied = apply_numa_placement(placement);
    // Listing prints names only: skip the fingerprint, which loads the PCIe link and runs
    // nvidia-smi (the harness lists every family before running it).
    if (!listing_only(options.benchmark_args)) add_context(family, options, env, placement.reason + "; " + applied);

    case_registry registry(cases);
    family.register_cases(options, env, registry);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: start-up failed: %s\n", program.c_str(), e.what());
    return 2;
  }

  const repetition_policy repetitions = repetitions_for(options.quick);
  for (const case_spec& spec : cases) {
    auto* b = benchmark::RegisterBenchmark(spec.name.c_str(), [&spec, &record](benchmark::State& state) {
      run_guarded(state, spec, record);
    });
    b->UseManualTime()->Iterations(spec.iterations)->Unit(benchmark::kMicrosecond);
    // Repetitions() in code would override the command line, so only inject when the user is silent.
    if (!options.user_repetitions) b->Repetitions(spec.headline_metrics.empty() ? repetitions.regular : repetitions.headline);
  }

  std::vector<char*> gb_argv;
  for (auto& a : options.benchmark_args) gb_argv.push_back(a.data());
  int gb_argc = static_cast<int>(gb_argv.size());
  gb_argv.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_argv.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_argv.data())) return 2;

  const std::string out_format = flag_value(options.benchmark_args, "--benchmark_out_format=");
  const bool stream_json = !flag_value(options.benchmark_args, "--benchmark_out=").empty() &&
                           (out_format.empty() || out_format == "json");
  flushing_json_reporter json_reporter;
  benchmark::RunSpecifiedBenchmarks(nullptr, stream_json ? &json_reporter : nullptr);
  benchmark::Shutdown();
  if (record.failed_cases > 0) {
    std::fprintf(stderr, "%s: %d case%s failed (see the error messages above)\n", program.c_str(), record.failed_cases,
                 record.failed_cases == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

}  // namespace hdb
