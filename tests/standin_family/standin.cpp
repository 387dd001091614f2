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
// Failures as real runs have them (a GPU family's crash, hang or failed kernel), in the case
// check's own check grades (strided, 8 lanes, 4 MiB), the last of a default run:
// --plant=crash: the process aborts there (SIGABRT), after every other case was written;
//   hang: that case never returns, so the harness's timeout ends the family;
//   failed_cases: the strided 4-lane cases fail (an exception), the others run and the binary exits 1.
// --memory=SIZE: a case whose three arrays need more than SIZE is registered skipped "for memory",
//   as a GPU family skips a size its GPU cannot hold, so --verdict must gate the largest that fits.
// --bandwidth=GBPS: every repetition reports that triad bandwidth and runs no triad, so a test can
//   hold a verdict or a stopping rule to exact numbers on a loaded machine; with
//   --spread=PERCENT the repetitions alternate that far above and below it (+, -, +, ...), and
//   --slowdown (or --slow-while) divides it by 1 + PERCENT/100.
// --repetition-seconds=S: every repetition lasts at least S seconds (the host sleeps in it): the
//   stopping rule's time ceiling, in seconds, reached after a known count.
#include "standin.hpp"

#include "hdb/sizes.hpp"
#include "hdb/util/units.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
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

double parse_non_negative(const std::string& flag, const std::string& text, const char* what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value >= 0)) {
    throw usage_error("bad value for --" + flag + ": '" + text + "' (" + what + ")");
  }
  return value;
}

double parse_slowdown(const std::string& text) { return parse_non_negative("slowdown", text, "a percentage >= 0"); }

constexpr std::array<std::string_view, 6> plants = {"undeclared_counter", "undeclared_traffic", "undeclared_parameter",
                                                    "crash", "hang", "failed_cases"};

// The planted changes of one run, read once from the flags.
struct planted_changes {
  std::string plant;
  std::optional<std::size_t> memory;  // bytes the three arrays of a case may take
  double bandwidth = 0;               // GB/s reported instead of measured; 0: measured
  double spread = 0;                  // fraction above and below `bandwidth`
  double repetition_seconds = 0;
};

planted_changes read_planted(const run_options& options) {
  planted_changes p;
  p.plant = options.value("plant");
  if (const auto& memory = options.value("memory"); !memory.empty()) p.memory = parse_size(memory);
  p.bandwidth = parse_non_negative("bandwidth", options.value("bandwidth"), "GB/s >= 0");
  p.spread = parse_non_negative("spread", options.value("spread"), "a percentage >= 0") / 100;
  p.repetition_seconds = parse_non_negative("repetition-seconds", options.value("repetition-seconds"), "seconds >= 0");
  return p;
}

// The case the declaration's check grades (schema.json, "checks").
bool checked_case(std::string_view access, int lanes, std::size_t bytes) {
  return access == "strided" && lanes == 8 && bytes == std::size_t{4} << 20;
}

// What the planted failure does to this case when it runs; returns normally where it plants none.
void planted_failure(const std::string& plant, std::string_view access, int lanes, std::size_t bytes) {
  if (plant == "failed_cases" && access == "strided" && lanes == 4) {
    throw std::runtime_error("planted failure of the strided 4-lane cases (--plant=failed_cases)");
  }
  if (!checked_case(access, lanes, bytes)) return;
  if (plant == "crash") std::abort();
  if (plant == "hang") {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
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
  const planted_changes planted = read_planted(options);
  const std::string& plant = planted.plant;
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
        if (planted.memory && 3 * bytes > *planted.memory) {
          spec.skip_reason = "not enough memory: its three arrays need " + format_size(3 * bytes) + ", " +
                             format_size(*planted.memory) + " free (--memory)";
        }
        auto repetition = std::make_shared<int>(0);
        spec.body = [work, bytes, stride, access, lanes, ran_lanes, slowdown, planted, repetition, transient,
                     slow_while](benchmark::State& state) {
          if (transient && slowdown > 0) {
            std::error_code ignored;  // gone already: an earlier case of this run removed it
            std::filesystem::remove(slow_while, ignored);
          }
          planted_failure(planted.plant, access, lanes, bytes);
          const std::size_t n = bytes / sizeof(double);
          if (planted.bandwidth == 0) work->ensure(n);
          double fastest = 0;  // of the iteration (one: family_main fixes the count)
          for (auto _ : state) {
            if (planted.repetition_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(planted.repetition_seconds));
            if (planted.bandwidth > 0) {
              const double side = (*repetition)++ % 2 == 0 ? 1 : -1;
              fastest = static_cast<double>(bytes) * (1 + slowdown) / (planted.bandwidth * (1 + side * planted.spread) * 1e9);
            } else {
              triad_pass(work->a.data(), work->b.data(), work->c.data(), scale, n, stride, ran_lanes);  // warm-up
              std::fill(work->a.begin(), work->a.begin() + static_cast<std::ptrdiff_t>(n), 0.0);  // the check sees the timed passes
              fastest = timed_pass(*work, n, stride, ran_lanes, slowdown);
              for (int p = 1; p < passes; ++p) fastest = std::min(fastest, timed_pass(*work, n, stride, ran_lanes, slowdown));
            }
            state.SetIterationTime(fastest);
          }
          const std::size_t wrong = planted.bandwidth > 0 ? n : first_wrong(work->a.data(), work->b.data(), work->c.data(), scale, n);
          if (wrong != n) {
            throw std::runtime_error("triad output element " + std::to_string(wrong) + " is " + std::to_string(work->a[wrong]) +
                                     ", not b + s * c");
          }
          state.counters["triad_bandwidth"] = static_cast<double>(bytes) / fastest / 1e9;
          state.counters["triad_time"] = fastest * 1e6;
          state.counters["lanes_used"] = ran_lanes;
          if (planted.plant == "undeclared_counter") state.counters["standin_undeclared"] = 1;
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
        "planted declaration break or failure (tests): undeclared_counter, undeclared_traffic, undeclared_parameter, "
        "crash, hang or failed_cases",
        [](const std::string& flag, const std::string& value) {
          if (!value.empty() && std::find(plants.begin(), plants.end(), value) == plants.end()) {
            throw usage_error("bad value for --" + flag + ": '" + value + "'");
          }
        }},
       {"memory", "", "", "planted memory limit (tests): a case whose three arrays need more is skipped for memory",
        [](const std::string&, const std::string& value) {
          if (!value.empty()) static_cast<void>(parse_size(value));
        }},
       {"bandwidth", "0", "", "planted (tests): every repetition reports this triad bandwidth in GB/s (0: measured)",
        [](const std::string& flag, const std::string& value) { static_cast<void>(parse_non_negative(flag, value, "GB/s >= 0")); }},
       {"spread", "0", "", "planted (tests): with --bandwidth, repetitions alternate PERCENT above and below it",
        [](const std::string& flag, const std::string& value) {
          static_cast<void>(parse_non_negative(flag, value, "a percentage >= 0"));
        }},
       {"repetition-seconds", "0", "", "planted (tests): every repetition lasts at least this many seconds",
        [](const std::string& flag, const std::string& value) { static_cast<void>(parse_non_negative(flag, value, "seconds >= 0")); }}},
      register_cases,
  };
  spec.runs_on = backend::cpu;
  spec.cpu_devices = standin_devices;
  return spec;
}

}  // namespace hdb::standin
