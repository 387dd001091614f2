// hdbench-standin: the stand-in family of the tests (tests/standin_family), built like a bench
// family on the shared main with its CPU backend (backend::cpu), so registration, the
// declaration's checks, the harness, the report rules, compare and the plots run end to end on a
// machine without a GPU. It is in no manifest a node's run reads (docs/adding-a-family.md).
//
// Timed: a STREAM-style triad a[i] = b[i] + s * c[i] over three host arrays of doubles, one pass
// at a time by the host's steady clock; a repetition times `passes` passes and reports the fastest,
// as STREAM does (the pass the rest of a shared machine disturbed least: a CI host runs other
// builds and, in the fleet test, four stand-in nodes at once on its cores). `access` linear walks
// the arrays in order; strided walks them in 8 interleaved sweeps (elements 0, 8, 16, ..., then 1,
// 9, ...: the same elements, one 64-byte cache line apart, so each sweep uses one double of every
// line). `lanes` is the number of independent elements per iteration of the loop.
// Excluded: allocation, first touch and filling of the arrays, one warm-up pass per repetition,
// clearing the output before the timed passes, and checking every output element after them (a
// wrong element fails the case).
// Bytes: triad_bandwidth = output bytes (size_bytes) / time of one pass, GB = 1e9 B; memory moves
// 3 bytes per output byte (two read, one written), the traffic class's factor of 3. The cases name
// every selected stand-in device (GPU-standin-0 and -1, the two GPUs the stand-in probe reports),
// so % of peak takes the slower one's link (combine: min); the devices themselves do nothing.
//
// Planted changes, for the tests:
// --slowdown=PERCENT: every timed pass lasts that much longer (the host spins inside the timed
//   region after the triad): the regression `hdbench compare` must call SLOWER. The loop then also
//   runs with twice the lanes, so the neutral lanes_used doubles: a change compare must not judge,
//   and one the family's report rules flag (report.cpp).
// --slow-while=FILE: --slowdown applies only while FILE exists, and the run that measures removes it:
//   a transient, slow on the run's first try and not on its confirmation (hdbench run --confirm).
// --plant=undeclared_counter | undeclared_traffic: every case also sets a counter, or picks a
//   traffic class for a metric, that schema.json does not declare, which family_main must turn
//   into a failed case (check_declared); undeclared_parameter: every case carries a label
//   parameter the declaration lacks, which family_main must refuse before measuring.
#include "standin.hpp"

#include "hdb/sizes.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::standin {
namespace {

using steady = std::chrono::steady_clock;

constexpr std::size_t strided_sweeps = 8;
constexpr int passes = 7;
constexpr double scale = 3.0;

template <int Lanes>
void triad_lanes(double* a, const double* b, const double* c, double s, std::size_t n, std::size_t stride) {
  const std::size_t step = stride * Lanes;
  for (std::size_t first = 0; first < stride; ++first) {
    std::size_t i = first;
    for (; i + (Lanes - 1) * stride < n; i += step) {
      for (int k = 0; k < Lanes; ++k) {
        const std::size_t j = i + static_cast<std::size_t>(k) * stride;
        a[j] = b[j] + s * c[j];
      }
    }
    for (; i < n; i += stride) a[i] = b[i] + s * c[i];
  }
}

// The three arrays, shared by every case and kept across repetitions: allocated and filled once
// for the largest size asked so far, outside any timed region.
struct workspace {
  std::vector<double> a, b, c;

  void ensure(std::size_t n) {
    if (a.size() >= n) return;
    a.assign(n, 0.0);
    b.resize(n);
    c.assign(n, 2.0);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<double>(i % 1024);  // exact in a double, as is b + 3 * 2
  }
};

double parse_slowdown(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value >= 0)) {
    throw usage_error("bad value for --slowdown: '" + text + "' (a percentage >= 0)");
  }
  return value;
}

// One timed pass, lasting (1 + slowdown) times the triad's own time at least.
double timed_pass(workspace& w, std::size_t n, std::size_t stride, int lanes, double slowdown) {
  const auto started = steady::now();
  triad_pass(w.a.data(), w.b.data(), w.c.data(), scale, n, stride, lanes);
  if (slowdown > 0) {
    const auto until = started + std::chrono::duration_cast<steady::duration>((steady::now() - started) * (1 + slowdown));
    while (steady::now() < until) {
    }
  }
  return std::chrono::duration<double>(steady::now() - started).count();
}

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  const auto sizes = parse_size_list(options.value("sizes"));
  for (const std::size_t bytes : sizes) {
    if (bytes % sizeof(double) != 0) throw usage_error("--sizes: " + std::to_string(bytes) + " is not a whole number of doubles");
  }
  const std::string slow_while = options.value("slow-while");
  const bool transient = !slow_while.empty();
  const double slowdown = transient && !std::filesystem::exists(slow_while) ? 0 : parse_slowdown(options.value("slowdown")) / 100;
  const std::string plant = options.value("plant");
  auto work = std::make_shared<workspace>();
  for (const char* access : {"linear", "strided"}) {
    for (const int lanes : {4, 8}) {
      for (const std::size_t bytes : sizes) {
        label_list params = {{"access", access}, {"lanes", std::to_string(lanes)}, {"size_bytes", std::to_string(bytes)}};
        if (plant == "undeclared_parameter") params.emplace_back("standin_knob", "1");
        case_spec spec = make_case("standin", "triad", std::move(params), device_indices(env));
        spec.traffic["triad_bandwidth"] = "standin_triad_link";
        if (plant == "undeclared_traffic") spec.traffic["triad_time"] = "standin_triad_link";
        const std::size_t stride = std::string_view(access) == "strided" ? strided_sweeps : 1;
        const int ran_lanes = slowdown > 0 ? 2 * lanes : lanes;
        spec.body = [work, bytes, stride, ran_lanes, slowdown, plant, transient, slow_while](benchmark::State& state) {
          if (transient && slowdown > 0) {
            std::error_code ignored;  // gone already: an earlier case of this run removed it
            std::filesystem::remove(slow_while, ignored);
          }
          const std::size_t n = bytes / sizeof(double);
          work->ensure(n);
          double fastest = 0;  // of the iteration (one: family_main fixes the count)
          for (auto _ : state) {
            triad_pass(work->a.data(), work->b.data(), work->c.data(), scale, n, stride, ran_lanes);  // warm-up
            std::fill(work->a.begin(), work->a.begin() + static_cast<std::ptrdiff_t>(n), 0.0);  // the check sees the timed passes
            fastest = timed_pass(*work, n, stride, ran_lanes, slowdown);
            for (int p = 1; p < passes; ++p) fastest = std::min(fastest, timed_pass(*work, n, stride, ran_lanes, slowdown));
            state.SetIterationTime(fastest);
          }
          if (const std::size_t wrong = first_wrong(work->a.data(), work->b.data(), work->c.data(), scale, n); wrong != n) {
            throw std::runtime_error("triad output element " + std::to_string(wrong) + " is " + std::to_string(work->a[wrong]) +
                                     ", not b + s * c");
          }
          state.counters["triad_bandwidth"] = static_cast<double>(bytes) / fastest / 1e9;
          state.counters["triad_time"] = fastest * 1e6;
          state.counters["lanes_used"] = ran_lanes;
          if (plant == "undeclared_counter") state.counters["standin_undeclared"] = 1;
        };
        registry.add(std::move(spec));
      }
    }
  }
}

// The two GPUs of the stand-in probe (probe/probe.cpp), by index and UUID; nothing runs on them.
std::vector<device_info> standin_devices() {
  std::vector<device_info> devices;
  for (int index : {0, 1}) {
    device_info d;
    d.index = index;
    d.uuid = "GPU-standin-" + std::to_string(index);
    d.name = "stand-in device (the CPU backend measures the host)";
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace

void triad_pass(double* a, const double* b, const double* c, double s, std::size_t n, std::size_t stride, int lanes) {
  switch (lanes) {
    case 4: triad_lanes<4>(a, b, c, s, n, stride); break;
    case 8: triad_lanes<8>(a, b, c, s, n, stride); break;
    case 16: triad_lanes<16>(a, b, c, s, n, stride); break;
    default: throw std::invalid_argument("triad_pass: lanes must be 4, 8 or 16, not " + std::to_string(lanes));
  }
}

std::size_t first_wrong(const double* a, const double* b, const double* c, double s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i] + s * c[i]) return i;
  }
  return n;
}

family_spec family() {
  family_spec spec{
      "standin",
      {{"sizes", "64K,512K,4M", "", "triad output array sizes (K,M,G binary; whole doubles)", flag_checks::size_list},
       {"slowdown", "0", "", "planted regression: every timed pass lasts PERCENT longer, with twice the lanes (tests)",
        [](const std::string&, const std::string& value) { static_cast<void>(parse_slowdown(value)); }},
       {"slow-while", "", "",
        "planted transient (tests): --slowdown applies only while this file exists, and the first run that measures "
        "removes it, so that hdbench run's confirmation measures the node at its usual speed",
        {}},
       {"plant", "", "",
        "planted declaration break (tests): undeclared_counter, undeclared_traffic or undeclared_parameter",
        [](const std::string& flag, const std::string& value) {
          if (!value.empty() && value != "undeclared_counter" && value != "undeclared_traffic" && value != "undeclared_parameter") {
            throw usage_error("bad value for --" + flag + ": '" + value + "'");
          }
        }}},
      register_cases,
  };
  spec.runs_on = backend::cpu;
  spec.cpu_devices = standin_devices;
  return spec;
}

}  // namespace hdb::standin
