// A stand-in for an hdbench-<family> binary, so `hdbench run` can be tested without a GPU.
// Built once per behaviour (HDB_STANDIN_MODE): it honours --benchmark_list_tests and
// --benchmark_out=FILE like a Google Benchmark program, writes JSON with its declaration in the
// context (hdbench.schema) and flushes after every case, then behaves well, aborts, hangs or
// writes garbage.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

enum class mode { good, crash, hang, garbage };
constexpr mode behaviour = mode::HDB_STANDIN_MODE;
constexpr int case_count = 3;
constexpr int repetitions = 3;

#define HDB_STRINGIFY(x) #x
#define HDB_NAME_OF(x) HDB_STRINGIFY(x)

// The stand-in's declaration (named after its mode, as the manifest names it), as a family's
// schema.json, escaped once more for the JSON string.
std::string schema() {
  return std::string(R"({\"family\": \")") + HDB_NAME_OF(HDB_STANDIN_MODE) +
         R"(\", \"summary\": \"a stand-in for the run tests\", )"
         R"(\"parameters\": {\"direction\": {\"type\": \"text\"}, \"host_kind\": {\"type\": \"text\"}, )"
         R"(\"size_bytes\": {\"type\": \"int\"}}, )"
         R"(\"metrics\": {\"bandwidth\": {\"unit\": \"GB/s\", \"better\": \"higher\", \"traffic\": [\"pcie_per_direction\"]}}, )"
         R"(\"cases\": {\"bandwidth\": {\"parameters\": [\"direction\", \"host_kind\", \"size_bytes\"], )"
         R"(\"metrics\": [\"bandwidth\"], \"headlines\": [\"bandwidth\"]}}})";
}

std::string case_name(int c) { return "standin/bandwidth/" + std::to_string(1024 << (4 * c)) + "/manual_time"; }

void write_case(std::FILE* out, int c, bool first) {
  for (int r = 0; r < repetitions; ++r) {
    const double bandwidth = 10.0 * (c + 1) + 0.01 * r;
    std::fprintf(out,
                 "%s    {\"name\": \"%s\", \"run_name\": \"%s\", \"run_type\": \"iteration\", \"repetitions\": %d, "
                 "\"repetition_index\": %d, \"iterations\": 1, \"real_time\": 1.0, \"cpu_time\": 1.0, "
                 "\"time_unit\": \"us\", \"bandwidth\": %.2f, "
                 "\"label\": \"case=bandwidth;direction=h2d;host_kind=pinned;size_bytes=%d;headline=bandwidth\"}",
                 first && r == 0 ? "" : ",\n", case_name(c).c_str(), case_name(c).c_str(), repetitions, r, bandwidth,
                 1024 << (4 * c));
  }
  std::fflush(out);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--benchmark_list_tests") {
      for (int c = 0; c < case_count; ++c) std::printf("%s\n", case_name(c).c_str());
      return 0;
    }
    if (arg.starts_with("--benchmark_out=")) out_path = std::string(arg.substr(16));
  }
  if (out_path.empty()) return 2;
  std::FILE* out = std::fopen(out_path.c_str(), "w");
  if (out == nullptr) return 2;
  if (behaviour == mode::garbage) {
    std::fputs("Segmentation fault? no: \x01\x02 this is not JSON {{{ [", out);
    std::fclose(out);
    return 0;
  }
  std::fprintf(out, "{\n  \"context\": {\"hdbench.family\": \"standin\", \"hdbench.schema_version\": \"3\", "
                    "\"hdbench.schema\": \"%s\"},\n  \"benchmarks\": [\n", schema().c_str());
  for (int c = 0; c < case_count; ++c) {
    write_case(out, c, c == 0);
    std::fprintf(stderr, "standin: case %d done\n", c);
    if (behaviour == mode::crash && c == 1) std::abort();
    if (behaviour == mode::hang && c == 0) {
      for (;;) ::pause();
    }
  }
  std::fputs("\n  ]\n}\n", out);
  std::fclose(out);
  return 0;
}
