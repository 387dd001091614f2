// The reason of a family that crashed or exited non-zero names the cause: the last error line of
// its stderr, never Google Benchmark's informational banner and context lines.
#include "catch_compat.hpp"
#include "hdb/harness/data/family_status.hpp"
#include "hdb/harness/common/files.hpp"

#include <csignal>
#include <filesystem>

namespace {

std::string fixture_text(const char* name) {
  return hdb::read_text_file(std::filesystem::path(HDB_TEST_FIXTURES) / name);
}

hdb::family_status copy_status(hdb::family_state state, int cases, std::string tail) {
  hdb::family_status s;
  s.family = "copy";
  s.state = state;
  s.cases = cases;
  s.stderr_tail = std::move(tail);
  return s;
}

hdb::family_status crashed(int signal, std::string tail) {
  hdb::family_status s = copy_status(hdb::family_state::crashed, 3, std::move(tail));
  s.signal = signal;
  return s;
}

hdb::family_status exited(int code, std::string tail) {
  hdb::family_status s = copy_status(hdb::family_state::failed, 0, std::move(tail));
  s.exit_code = code;
  return s;
}

}  // namespace

TEST_CASE("kill -9 after the context: the reason is the signal, not a context line", "[failure_reason]") {
  CHECK(hdb::failure_reason(crashed(SIGKILL, fixture_text("killed_stderr.txt"))) ==
        "crashed (signal 9, SIGKILL) after 3 cases");
}

TEST_CASE("an uncaught exception: the what() line, not the warning before it", "[failure_reason]") {
  CHECK(hdb::failure_reason(crashed(SIGABRT, fixture_text("terminate_stderr.txt"))) ==
        "crashed (signal 6, SIGABRT) after 3 cases: what():  cudaMemcpyAsync(dst, src, bytes, kind, s) failed: an "
        "illegal memory access was encountered (bench/copy/copy.cpp:120)");
}

TEST_CASE("error_line picks the cause", "[failure_reason]") {
  SECTION("a lost context: the fatal line, not the explanation after it") {
    const std::string tail =
        "numa.placement: GPU's own NUMA node (auto); applied\n"
        "hdbench-copy: fatal: the CUDA context was lost in case copy/bandwidth/h2d: cudaErrorLaunchFailure\n"
        "hdbench-copy: every later case would fail; stopping. Cases finished before it are in the output.\n";
    CHECK(hdb::error_line(tail, true) ==
          "hdbench-copy: fatal: the CUDA context was lost in case copy/bandwidth/h2d: cudaErrorLaunchFailure");
  }
  SECTION("an assertion") {
    const std::string tail = "hdbench-copy: bench/copy/copy.cpp:42: void run(): Assertion `bytes > 0' failed.\n";
    CHECK(hdb::error_line(tail, false) == "hdbench-copy: bench/copy/copy.cpp:42: void run(): Assertion `bytes > 0' failed.");
  }
  SECTION("a warning only when nothing else looks like an error") {
    const std::string tail = "hdbench: warning: cudaFree(p) failed: unspecified launch failure\nprogress 3/4\n";
    CHECK(hdb::error_line(tail, false) == "hdbench: warning: cudaFree(p) failed: unspecified launch failure");
  }
  SECTION("a usage error without an error word: the last line, when the binary chose to exit") {
    const std::string tail = "hdbench-copy: --sizes: 'abc' is not a size (use e.g. 4KiB, 1MiB)\n";
    CHECK(hdb::error_line(tail, true) == "hdbench-copy: --sizes: 'abc' is not a size (use e.g. 4KiB, 1MiB)");
    CHECK(hdb::error_line(tail, false).empty());
  }
  SECTION("informational lines are never chosen, even with an error word in them") {
    CHECK(hdb::error_line(fixture_text("killed_stderr.txt"), true).empty());
  }
  SECTION("an empty tail") { CHECK(hdb::error_line("", true).empty()); }
  SECTION("a very long line is cut") {
    const auto line = hdb::error_line("error: " + std::string(500, 'x') + "\n", false);
    CHECK(line.size() == 203);
    CHECK(line.ends_with("..."));
  }
}

TEST_CASE("a non-zero exit names the binary's last word", "[failure_reason]") {
  CHECK(hdb::failure_reason(exited(2, "hdbench-copy: no usable CUDA GPU: no CUDA device present\n")) ==
        "exited with code 2 after 0 cases: hdbench-copy: no usable CUDA GPU: no CUDA device present");
  CHECK(hdb::failure_reason(exited(1, fixture_text("killed_stderr.txt"))) == "exited with code 1 after 0 cases");
}
