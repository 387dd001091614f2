// hdbench-test-faulty: a family whose cases succeed, skip, fail, break the declaration and then
// corrupt the CUDA context, so a GPU test can hold the shared main to its contract
// (docs/benchmark-output.md): finished cases stay in the streamed JSON, a skip and a failure are
// told apart, a counter the schema does not declare fails its case, a label value it does not
// declare stops the binary at registration (--bad-label), and a sticky error ends the process
// with exit code 3 before any later case runs.
#include "hdb/cuda_check.hpp"
#include "hdb/embedded_schema.hpp"
#include "hdb/family.hpp"

#include <stdexcept>

void write_through_null_pointer(cudaStream_t stream);  // faulty_kernel.cu

namespace {

void register_cases(const hdb::run_options& options, hdb::family_env& env, hdb::case_registry& registry) {
  const auto add = [&registry, &env](const char* name, hdb::label_list labels, std::function<void(benchmark::State&)> body) {
    hdb::case_spec spec = hdb::make_case("faulty", name, std::move(labels), {env.devices.front().index});
    spec.body = std::move(body);
    registry.add(std::move(spec));
  };
  const auto succeed = [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(1e-6);
    state.counters["constant"] = 1;
  };
  add("ok", {{"variant", options.value("bad-label").empty() ? "declared" : "undeclared"}}, succeed);
  add("skips", {}, [](benchmark::State&) { throw hdb::skip_case("not on this node"); });
  add("fails", {}, [](benchmark::State&) { throw std::runtime_error("3 bytes differ from the pattern"); });
  add("undeclared", {}, [](benchmark::State& state) {
    for (auto _ : state) state.SetIterationTime(1e-6);
    state.counters["constant"] = 1;
    state.counters["stray"] = 2;
  });
  add("faults", {}, [](benchmark::State&) {
    write_through_null_pointer(nullptr);
    HDB_CUDA_CALL(cudaDeviceSynchronize());
  });
  add("after", {}, succeed);
}

}  // namespace

int main(int argc, char** argv) {
  return hdb::family_main(argc, argv,
                          {"test-faulty", {{"bad-label", "", "", "non-empty: label case ok with an undeclared value"}},
                           register_cases, {}},
                          hdb::embedded_schema());
}
