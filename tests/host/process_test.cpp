// The one child-with-deadline (hdb/util/process.hpp) on /bin/sh and sleep: exit code, signal,
// a kill at the deadline (of the process group too), the output cap, the environment, standard
// streams, a program that cannot start, and the fd owner.
#include "catch_compat.hpp"
#include "hdb/util/process.hpp"
#include "test_helpers.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

namespace {

using namespace std::chrono_literals;
using hdb_test::contains;

hdb::child_spec shell(const std::string& script) {
  hdb::child_spec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.timeout = 20s;
  return spec;
}

// Gone, or a zombie waiting for init: either way no longer running.
bool ended(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (text.empty() || (paren != std::string::npos && text.substr(paren + 2, 1) == "Z")) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

TEST_CASE("a child's exit code and captured output", "[host][process]") {
  const auto r = hdb::run_with_deadline(shell("echo hello; exit 3"));
  CHECK(r.end == hdb::child_end::exited);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.signal);
  CHECK_FALSE(r.succeeded());
  CHECK(r.output == "hello\n");
  CHECK(r.describe() == "exited with status 3");
  CHECK(hdb::run_with_deadline(shell("exit 0")).succeeded());
}

TEST_CASE("a child killed by a signal", "[host][process]") {
  const auto r = hdb::run_with_deadline(shell("kill -9 $$"));
  CHECK(r.end == hdb::child_end::signalled);
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(r.exit_code);
  CHECK(contains(r.describe(), "was killed by signal 9"));
}

TEST_CASE("the deadline kills a sleep 30 and what it started", "[host][process]") {
  // Killed at once at `timeout`; returns well before the sleep would have ended.
  const auto killed_at = [](const std::string& script, std::chrono::milliseconds timeout) {
    auto spec = shell(script);
    spec.timeout = timeout;
    spec.kill_grace = 0s;
    const auto start = std::chrono::steady_clock::now();
    auto r = hdb::run_with_deadline(spec);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    CHECK(r.end == hdb::child_end::timed_out);
    CHECK(r.elapsed_s >= std::chrono::duration<double>(timeout).count());
    return r;
  };
  SECTION("SIGKILL at once") {
    const auto r = killed_at("sleep 30", 300ms);
    CHECK(r.signal == SIGKILL);
    CHECK(contains(r.describe(), "timed out after"));
  }
  SECTION("SIGTERM first, which ends a sleep within the grace") {
    hdb::child_spec spec;
    spec.argv = {"/bin/sleep", "30"};
    spec.timeout = 300ms;
    spec.kill_grace = 5s;
    const auto r = hdb::run_with_deadline(spec);
    CHECK(r.end == hdb::child_end::timed_out);
    CHECK(r.signal == SIGTERM);
    CHECK(r.elapsed_s < 4);
  }
  SECTION("a grandchild holding the pipe neither delays the return nor survives") {
    const auto r = killed_at("sleep 30 & echo $!; wait", 500ms);
    const pid_t grandchild = std::stoi(r.output);
    CHECK(ended(grandchild));
  }
}

TEST_CASE("cancel ends the child like a deadline", "[host][process]") {
  volatile std::sig_atomic_t cancel = 0;
  auto spec = shell("sleep 30");
  spec.cancel = &cancel;
  int ticks = 0;
  const auto r = hdb::run_with_deadline(spec, [&] {
    if (++ticks == 2) cancel = 1;
  });
  CHECK(r.end == hdb::child_end::cancelled);
  CHECK(ticks >= 2);
  CHECK(r.elapsed_s < 5);
}

TEST_CASE("captured output stops at the limit, the child is never blocked", "[host][process]") {
  auto spec = shell("head -c 1000000 /dev/zero; echo done >&2");
  spec.output_limit = 1000;
  spec.stderr_to = hdb::child_stream::capture;
  const auto r = hdb::run_with_deadline(spec);
  CHECK(r.succeeded());
  CHECK(r.output.size() == 1000);
  CHECK(r.output_truncated);
  CHECK(r.error_output == "done\n");
}

TEST_CASE("stdout and stderr to files, stderr discarded by default", "[host][process]") {
  hdb_test::temp_dir dir;
  auto spec = shell("echo out; echo err >&2");
  spec.stdout_path = dir.path() / "out.log";
  auto r = hdb::run_with_deadline(spec);
  CHECK(r.succeeded());
  CHECK(r.output.empty());
  CHECK(r.error_output.empty());
  std::ifstream out(spec.stdout_path);
  std::string line;
  std::getline(out, line);
  CHECK(line == "out");

  spec.stdout_path.clear();
  spec.stderr_path = dir.path() / "err.log";
  r = hdb::run_with_deadline(spec);
  CHECK(r.output == "out\n");
  std::ifstream err(spec.stderr_path);
  std::getline(err, line);
  CHECK(line == "err");
}

TEST_CASE("the environment: this process's, or the one given", "[host][process]") {
  ::setenv("HDB_PROCESS_TEST", "parent", 1);
  CHECK(hdb::run_with_deadline(shell("echo \"$HDB_PROCESS_TEST\"")).output == "parent\n");
  auto spec = shell("echo \"$HDB_PROCESS_TEST,$NCCL_NVLS_ENABLE\"");
  spec.environment = hdb::environment_with({{"NCCL_NVLS_ENABLE", "1"}, {"NCCL_NVLS_ENABLE", "0"}});
  CHECK(hdb::run_with_deadline(spec).output == "parent,0\n");
  spec.environment = std::vector<std::string>{"NCCL_NVLS_ENABLE=0"};
  CHECK(hdb::run_with_deadline(spec).output == ",0\n");
  ::unsetenv("HDB_PROCESS_TEST");

  const auto env = hdb::environment_with({{"HDB_A", "1"}, {"HDB_A", "2"}});
  CHECK(std::count(env.begin(), env.end(), "HDB_A=2") == 1);
  CHECK(std::count(env.begin(), env.end(), "HDB_A=1") == 0);
}

TEST_CASE("a program that cannot start", "[host][process]") {
  hdb::child_spec spec;
  spec.argv = {"/nonexistent/hdbench-program"};
  const auto r = hdb::run_with_deadline(spec);
  CHECK(r.end == hdb::child_end::not_started);
  CHECK(r.start_error == "/nonexistent/hdbench-program: No such file or directory");
  CHECK(r.describe() == "did not start: /nonexistent/hdbench-program: No such file or directory");

  // start_child leaves it to the reaper, as a shell would: status 127.
  spec.stdout_to = hdb::child_stream::discard;
  const pid_t pid = hdb::start_child(spec);
  const auto status = hdb::reap_within(pid, 10s);
  REQUIRE(status);
  CHECK(hdb::describe_wait_status(*status) == "exited with status 127");
}

TEST_CASE("start_child: kept descriptors, stdout to stderr, reaping", "[host][process]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  hdb::unique_fd read_end(fds[0]), write_end(fds[1]);
  auto spec = shell("echo kept >&" + std::to_string(write_end.get()) + "; sleep 30");
  spec.keep_fds = {write_end.get()};
  spec.stdout_to = hdb::child_stream::to_stderr;
  spec.die_with_parent = true;
  const pid_t pid = hdb::start_child(spec);
  write_end.reset();
  char text[5] = {};
  CHECK(::read(read_end.get(), text, 4) == 4);
  CHECK(std::string(text) == "kept");
  CHECK_FALSE(hdb::reap_within(pid, 50ms));
  ::kill(-pid, SIGKILL);  // it leads its own group: the sleep goes too
  const auto status = hdb::reap_within(pid, 10s);
  REQUIRE(status);
  CHECK(contains(hdb::describe_wait_status(*status), "was killed by signal 9"));

  spec.stdout_to = hdb::child_stream::capture;
  CHECK_THROWS_AS(hdb::start_child(spec), std::invalid_argument);
}

TEST_CASE("unique_fd closes once and moves", "[host][process]") {
  hdb::unique_fd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int fd = a.get();
  REQUIRE(fd >= 0);
  hdb::unique_fd b(std::move(a));
  CHECK_FALSE(a);
  CHECK(b.get() == fd);
  hdb::unique_fd c;
  c = std::move(b);
  CHECK(::fcntl(fd, F_GETFD) != -1);
  c.reset();
  CHECK(::fcntl(fd, F_GETFD) == -1);
  hdb::unique_fd d(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int kept = d.release();
  CHECK(::fcntl(kept, F_GETFD) != -1);
  ::close(kept);
}

TEST_CASE("errno_text names what failed and errno in words", "[host][process]") {
  REQUIRE(::open("/hdbench-no-such-dir/file", O_RDONLY | O_CLOEXEC) == -1);
  CHECK(hdb::errno_text("cannot open /hdbench-no-such-dir/file") ==
        "cannot open /hdbench-no-such-dir/file: " + std::string(std::strerror(ENOENT)));
}

TEST_CASE("find_in_path finds executables only", "[host][process]") {
  CHECK(hdb::find_in_path("sh"));
  CHECK_FALSE(hdb::find_in_path("hdbench-no-such-program"));
}
