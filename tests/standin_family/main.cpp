// hdbench-standin: the binary of the stand-in family (tests/standin_family), in the place of a
// bench/<family>/main.cpp. Nothing is measured and no GPU is needed: it writes the JSON a Google
// Benchmark program with hdbench's shared main writes (context with `hdbench.schema` holding its
// schema.json unchanged, one entry per repetition, then Google Benchmark's aggregates, flushed
// after every case), with deterministic numbers, so the harness, the report, compare and the
// plots can be tested end to end on a family they have never heard of.
//
// Flags: --benchmark_list_tests, --benchmark_out=FILE, --benchmark_out_format=json,
// --benchmark_repetitions=N (default 5), --slowdown=PERCENT (every case takes that much longer:
// the planted regression of the compare step; the neutral lanes_used doubles with it, a change
// compare must not call a regression), --quick (accepted, changes nothing). Any other
// --benchmark_* flag is ignored; any other flag is an error (exit 2), as in a real family.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "standin_schema.hpp"  // generated: hdb_standin::schema_text

namespace {

struct triad_case {
  std::string access;
  int lanes;
  long long size_bytes;
};

std::vector<triad_case> cases() {
  std::vector<triad_case> out;
  for (const char* access : {"linear", "strided"}) {
    for (int lanes : {4, 8}) {
      for (long long size : {1LL << 20, 1LL << 30}) out.push_back({access, lanes, size});
    }
  }
  return out;
}

std::string name_of(const triad_case& c) {
  return "standin/triad/access:" + c.access + "/lanes:" + std::to_string(c.lanes) + "/size_bytes:" +
         std::to_string(c.size_bytes) + "/manual_time";
}

// The two GPUs of the stand-in probe (probe.cpp) run every case together.
std::string label_of(const triad_case& c) {
  return "case=triad;access=" + c.access + ";lanes=" + std::to_string(c.lanes) + ";size_bytes=" +
         std::to_string(c.size_bytes) +
         ";device=0,1;gpu_uuid=GPU-standin-0,GPU-standin-1;headline=triad_bandwidth;traffic=triad_bandwidth:standin_triad_link";
}

// GB/s of the median repetition: 8.4 GB/s for linear, 8 lanes, 1 GiB, which is 80 % of the
// standin_triad_link peak on the probe's GPUs (3 x 8.4 / 31.5 GB/s, GPU 1's Gen4 x16 link).
double base_bandwidth(const triad_case& c) {
  return 8.4 * (c.access == "linear" ? 1.0 : 0.5) * (c.lanes == 8 ? 1.0 : 0.75) * (c.size_bytes >= (1LL << 30) ? 1.0 : 0.5);
}

std::string json_escape(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", ch);
          out += buffer;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

struct options {
  bool list = false;
  std::string out_path;
  std::string costs_path;
  int repetitions = 5;
  double slowdown_percent = 0;
};

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value_of = [&](std::string_view prefix) { return std::string(arg.substr(prefix.size())); };
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true") {
      o.list = true;
    } else if (arg.starts_with("--benchmark_out=")) {
      o.out_path = value_of("--benchmark_out=");
    } else if (arg.starts_with("--benchmark_repetitions=")) {
      o.repetitions = std::atoi(value_of("--benchmark_repetitions=").c_str());
      if (o.repetitions < 1) return false;
    } else if (arg.starts_with("--case-costs=")) {
      o.costs_path = value_of("--case-costs=");
    } else if (arg.starts_with("--sweep-devices=") || arg.starts_with("--sweep-pairs=")) {
      // accepted: every stand-in case spans both of its GPUs, which a tiered run always measures
    } else if (arg.starts_with("--slowdown=")) {
      o.slowdown_percent = std::atof(value_of("--slowdown=").c_str());
    } else if (arg == "--quick" || arg.starts_with("--benchmark_")) {
      // accepted: the stand-in has one sweep and no Google Benchmark underneath
    } else {
      std::fprintf(stderr, "hdbench-standin: unknown flag %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

void write_entry(std::FILE* out, const triad_case& c, int repetitions, int index, const char* run_type,
                 const char* aggregate, double bandwidth, double time_us, double lanes, bool first) {
  const std::string name = name_of(c);
  const std::string full = aggregate == nullptr ? name : name + "_" + aggregate;
  std::fprintf(out,
               "%s    {\"name\": \"%s\", \"family_index\": 0, \"per_family_instance_index\": 0, \"run_name\": \"%s\", "
               "\"run_type\": \"%s\", \"repetitions\": %d, ",
               first ? "" : ",\n", full.c_str(), name.c_str(), run_type, repetitions);
  if (aggregate == nullptr) {
    std::fprintf(out, "\"repetition_index\": %d, ", index);
  } else {
    std::fprintf(out, "\"aggregate_name\": \"%s\", \"aggregate_unit\": \"%s\", ", aggregate,
                 std::string_view(aggregate) == "cv" ? "percentage" : "time");
  }
  std::fprintf(out,
               "\"threads\": 1, \"iterations\": 1, \"real_time\": %.9g, \"cpu_time\": %.9g, \"time_unit\": \"us\", "
               "\"triad_bandwidth\": %.9g, \"triad_time\": %.9g, \"lanes_used\": %.9g, \"label\": \"%s\"}",
               time_us, time_us, bandwidth, time_us, lanes, label_of(c).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  const auto all = cases();
  if (o.list) {
    for (const auto& c : all) std::printf("%s\n", name_of(c).c_str());
    return 0;
  }
  if (o.out_path.empty()) {
    std::fprintf(stderr, "hdbench-standin: needs --benchmark_out=FILE\n");
    return 2;
  }
  std::FILE* out = std::fopen(o.out_path.c_str(), "w");
  if (out == nullptr) return 2;
  std::fprintf(out,
               "{\n  \"context\": {\"date\": \"2026-12-01T00:00:00+00:00\", \"host_name\": \"standin\", "
               "\"executable\": \"hdbench-standin\", \"num_cpus\": 2, \"mhz_per_cpu\": 1000, "
               "\"cpu_scaling_enabled\": false, \"library_build_type\": \"release\", "
               "\"hdbench.family\": \"standin\", \"hdbench.schema_version\": \"3\", \"hdbench.schema\": \"%s\"},\n"
               "  \"benchmarks\": [\n",
               json_escape(hdb_standin::schema_text).c_str());
  const double slower = 1 + o.slowdown_percent / 100;
  const double lanes_factor = o.slowdown_percent > 0 ? 2 : 1;
  std::FILE* costs = o.costs_path.empty() ? nullptr : std::fopen(o.costs_path.c_str(), "a");
  bool first = true;
  for (const auto& c : all) {
    const auto started = std::chrono::steady_clock::now();
    // Repetitions spread +-0.2 % around the base, symmetrically, so the median is the base.
    std::vector<double> bandwidths;
    for (int r = 0; r < o.repetitions; ++r) {
      const double spread = 1 + 0.002 * (r - (o.repetitions - 1) / 2.0);
      bandwidths.push_back(base_bandwidth(c) * spread / slower);
    }
    for (int r = 0; r < o.repetitions; ++r) {
      const double time_us = static_cast<double>(c.size_bytes) / (bandwidths[r] * 1e3);
      write_entry(out, c, o.repetitions, r, "iteration", nullptr, bandwidths[r], time_us, c.lanes * lanes_factor, first);
      first = false;
    }
    if (o.repetitions > 1) {
      const double median = base_bandwidth(c) / slower;
      const double time_us = static_cast<double>(c.size_bytes) / (median * 1e3);
      write_entry(out, c, o.repetitions, 0, "aggregate", "mean", median, time_us, c.lanes * lanes_factor, false);
      write_entry(out, c, o.repetitions, 0, "aggregate", "median", median, time_us, c.lanes * lanes_factor, false);
    }
    std::fflush(out);
    if (costs) {
      std::fprintf(costs, "{\"case\": \"%s\", \"wall_s\": %.9f}\n", name_of(c).c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      std::fflush(costs);
    }
  }
  if (costs) std::fclose(costs);
  std::fputs("\n  ]\n}\n", out);
  std::fclose(out);
  return 0;
}
