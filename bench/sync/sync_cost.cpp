#include "sync_cost.hpp"

#include "sync.hpp"
#include "sync_kernels.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/util/process.hpp"
#include "hdb/util/stats.hpp"
#include "hdb/stream.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace hdb::sync {

std::string_view to_string(sync_call call) {
  switch (call) {
    case sync_call::device_sync: return "cudaDeviceSynchronize";
    case sync_call::stream_sync: return "cudaStreamSynchronize";
    case sync_call::event_sync: return "cudaEventSynchronize";
    case sync_call::event_query: return "cudaEventQuery";
  }
  return "?";
}

spread time_sync_calls(sync_call call, work_state state, int calls) {
  const stream s;
  const event done(s.device(), cudaEventDisableTiming);
  device::empty(s.get());
  HDB_CUDA_CALL(cudaEventRecord(done.get(), s.get()));
  s.synchronize();
  if (state == work_state::retired) HDB_CUDA_CALL(cudaDeviceSynchronize());
  const auto once = [&] {
    switch (call) {
      case sync_call::device_sync: HDB_CUDA_CALL(cudaDeviceSynchronize()); break;
      case sync_call::stream_sync: HDB_CUDA_CALL(cudaStreamSynchronize(s.get())); break;
      case sync_call::event_sync: HDB_CUDA_CALL(cudaEventSynchronize(done.get())); break;
      case sync_call::event_query: HDB_CUDA_CALL(cudaEventQuery(done.get())); break;  // finished: cudaSuccess
    }
  };
  for (int i = 0; i < 100; ++i) once();
  std::vector<double> us(static_cast<std::size_t>(calls));
  for (double& u : us) {
    const std::int64_t start = host_now_ns();
    once();
    u = static_cast<double>(host_now_ns() - start) / 1e3;
  }
  return summarize(us);
}

int bare_child_main(int device, int calls) {
  try {
    HDB_CUDA_CALL(cudaSetDevice(device));
    nlohmann::json report = nlohmann::json::object();
    for (const sync_call call : all_sync_calls) {
      report[std::string(to_string(call))] = time_sync_calls(call, work_state::completed, calls).median;
    }
    std::printf("%s\n", report.dump().c_str());
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hdbench-sync --%s: %s\n", std::string(bare_child_flag).c_str(), e.what());
    return 1;
  }
}

namespace {

nlohmann::json run_bare_child(const std::string& executable, int device, int calls) {
  child_spec spec;
  spec.argv = {executable, "--" + std::string(bare_child_flag) + "=all", "--devices=" + std::to_string(device),
               "--sync-calls=" + std::to_string(calls),
               // The parent already placed itself; the child inherits its CPU and memory affinity.
               "--numa=none"};
  spec.stderr_to = child_stream::inherit;
  spec.die_with_parent = true;
  spec.timeout = std::chrono::seconds(60);
  spec.kill_grace = std::chrono::seconds(0);
  const child_result result = run_with_deadline(spec);
  const std::string what = "bare sync-cost child (" + spec.argv[1] + ")";
  if (!result.succeeded()) throw std::runtime_error(what + " failed (" + result.describe() + ")");
  try {
    return nlohmann::json::parse(result.output);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(what + ": malformed report: " + e.what());
  }
}

}  // namespace

bare_figures bare_call_times(const std::string& executable, int device, int calls) {
  std::map<sync_call, std::vector<double>> per_call;
  for (int p = 0; p < bare_processes; ++p) {
    const nlohmann::json report = run_bare_child(executable, device, calls);
    for (const sync_call call : all_sync_calls) {
      const auto found = report.find(std::string(to_string(call)));
      if (found == report.end() || !found->is_number()) {
        throw std::runtime_error("bare sync-cost child: no figure for " + std::string(to_string(call)));
      }
      per_call[call].push_back(found->get<double>());
    }
  }
  bare_figures figures;
  for (const auto& [call, values] : per_call) {
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    figures[call] = {median(values), *low, *high};
  }
  return figures;
}

}  // namespace hdb::sync
