// One measurement per GPU at a time: the per-GPU lock in one process, and across processes with
// a stand-in binary (lock_standin.cpp) that takes the lock and holds it. Two stand-ins on one GPU
// never hold it at the same time: the second waits (one line on stderr) or, with timeout 0,
// refuses at once with exit code 2 and a message naming the holder.
#include "catch_compat.hpp"
#include "hdb/gpu_lock.hpp"
#include "test_helpers.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using hdb_test::contains;
using hdb_test::temp_dir;

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One lock-standin process, its stdout and stderr in files of `dir`.
class standin {
 public:
  standin(const fs::path& dir, const std::string& name, long timeout_s, long hold_ms, std::vector<std::string> uuids)
      : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
    std::vector<std::string> args = {HDB_LOCK_STANDIN, "--dir=" + dir.string(), "--timeout-s=" + std::to_string(timeout_s),
                                     "--hold-ms=" + std::to_string(hold_ms)};
    args.insert(args.end(), uuids.begin(), uuids.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  }
  standin(const standin&) = delete;
  standin& operator=(const standin&) = delete;
  ~standin() {
    if (!exit_code_) static_cast<void>(wait());
  }

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] int wait() {
    if (!exit_code_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return *exit_code_;
  }
  [[nodiscard]] std::string out() const { return read_all(out_); }
  [[nodiscard]] std::string err() const { return read_all(err_); }
  // CLOCK_MONOTONIC ns of "acquired"/"released" (0 when not printed).
  [[nodiscard]] long long stamp(const std::string& word) const {
    const auto text = out();
    const auto at = text.find(word + " ");
    return at == std::string::npos ? 0 : std::stoll(text.substr(at + word.size() + 1));
  }
  // Waits until the stand-in holds its locks.
  void wait_acquired() const {
    for (int i = 0; i < 200 && stamp("acquired") == 0; ++i) std::this_thread::sleep_for(10ms);
    if (stamp("acquired") == 0) throw std::runtime_error("the stand-in never took its lock: " + err());
  }

 private:
  fs::path out_;
  fs::path err_;
  pid_t pid_ = 0;
  std::optional<int> exit_code_;
};

// The held intervals of stand-ins that shared a GPU do not overlap.
void check_disjoint(const std::vector<const standin*>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const auto a0 = runs[i]->stamp("acquired"), a1 = runs[i]->stamp("released");
      const auto b0 = runs[j]->stamp("acquired"), b1 = runs[j]->stamp("released");
      REQUIRE(a0 > 0);
      REQUIRE(b0 > 0);
      CHECK((a1 <= b0 || b1 <= a0));
    }
  }
}

}  // namespace

TEST_CASE("lock files are named by UUID and live in a directory every user shares", "[lock]") {
  CHECK(hdb::gpu_lock_path("/run/lock", "GPU-5a1b2c3d-0000-1111-2222-333344445555") ==
        "/run/lock/hdbench-gpu-GPU-5a1b2c3d-0000-1111-2222-333344445555.lock");
  CHECK(hdb::gpu_lock_path("/tmp", "MIG-GPU-5a1b/1/0") == "/tmp/hdbench-gpu-MIG-GPU-5a1b_1_0.lock");
  CHECK_THROWS_AS(hdb::gpu_lock_path("/tmp", ""), std::invalid_argument);
  const auto dir = hdb::default_gpu_lock_dir();
  CHECK((dir == "/run/lock" || dir == "/tmp"));
}

TEST_CASE("GPUs are locked in UUID order, once each, and the holder is recorded", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  const hdb::gpu_locks locks({{1, "GPU-b"}, {0, "GPU-a"}, {2, "GPU-b"}}, 0s, "hdbench-copy", log, dir.path());
  CHECK(locks.uuids() == std::vector<std::string>{"GPU-a", "GPU-b"});
  CHECK(read_all(hdb::gpu_lock_path(dir.path(), "GPU-a")) == std::to_string(::getpid()) + " hdbench-copy\n");
  CHECK(log.str().empty());
}

TEST_CASE("a busy GPU: timeout 0 refuses at once, naming the holder", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  std::optional<hdb::gpu_locks> first;
  first.emplace(std::vector<hdb::gpu_lock_target>{{0, "GPU-a"}}, 0s, "hdbench-copy", log, dir.path());
  try {
    const hdb::gpu_locks second({{0, "GPU-a"}}, 0s, "hdbench-sync", log, dir.path());
    FAIL("the second lock was granted");
  } catch (const hdb::gpu_busy_error& e) {
    CHECK(contains(e.what(), "GPU 0 (GPU-a) is being measured by pid " + std::to_string(::getpid()) +
                                 " (hdbench-copy); not waiting (lock timeout 0 s)"));
  }
  CHECK(log.str().empty());
  first.reset();
  const hdb::gpu_locks third({{0, "GPU-a"}}, 0s, "hdbench-sync", log, dir.path());
  CHECK(third.uuids().size() == 1);
}

TEST_CASE("a busy GPU: the waiter says so once and gives up at the timeout", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  const hdb::gpu_locks first({{0, "GPU-a"}}, 0s, "hdbench-copy", log, dir.path());
  const auto started = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(hdb::gpu_locks({{0, "GPU-a"}}, 1s, "hdbench-sync", log, dir.path()), hdb::gpu_busy_error);
  CHECK(std::chrono::steady_clock::now() - started >= 1s);
  CHECK(log.str() == "hdbench-sync: GPU 0 (GPU-a) is being measured by pid " + std::to_string(::getpid()) +
                         " (hdbench-copy); waiting up to 1 s\n");
}

TEST_CASE("a refused set releases what it already locked", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  const hdb::gpu_locks holder({{1, "GPU-b"}}, 0s, "hdbench-copy", log, dir.path());
  CHECK_THROWS_AS(hdb::gpu_locks({{0, "GPU-a"}, {1, "GPU-b"}}, 0s, "hdbench-p2p", log, dir.path()), hdb::gpu_busy_error);
  const hdb::gpu_locks single({{0, "GPU-a"}}, 0s, "hdbench-sync", log, dir.path());
  CHECK(single.uuids() == std::vector<std::string>{"GPU-a"});
}

TEST_CASE("moving the locks keeps them held", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  hdb::gpu_locks first({{0, "GPU-a"}}, 0s, "hdbench-copy", log, dir.path());
  const hdb::gpu_locks moved(std::move(first));
  CHECK(moved.uuids() == std::vector<std::string>{"GPU-a"});
  CHECK_THROWS_AS(hdb::gpu_locks({{0, "GPU-a"}}, 0s, "hdbench-sync", log, dir.path()), hdb::gpu_busy_error);
}

TEST_CASE("an unrecorded holder is 'another process'", "[lock]") {
  const temp_dir dir;
  std::ostringstream log;
  const hdb::gpu_locks holder({{0, "GPU-a"}}, 0s, "hdbench-copy", log, dir.path());
  std::ofstream(hdb::gpu_lock_path(dir.path(), "GPU-a"), std::ios::trunc).flush();
  try {
    const hdb::gpu_locks second({{0, "GPU-a"}}, 0s, "hdbench-sync", log, dir.path());
    FAIL("the second lock was granted");
  } catch (const hdb::gpu_busy_error& e) {
    CHECK(contains(e.what(), "GPU 0 (GPU-a) is being measured by another process; not waiting"));
  }
}

TEST_CASE("two processes on one GPU never hold it at the same time: the second waits", "[lock][process]") {
  const temp_dir dir;
  standin first(dir.path(), "first", 30, 800, {"GPU-x"});
  standin second(dir.path(), "second", 30, 800, {"GPU-x"});
  CHECK(first.wait() == 0);
  CHECK(second.wait() == 0);
  check_disjoint({&first, &second});
  // Exactly one of them waited, and said for whom.
  const bool second_waited = first.stamp("acquired") < second.stamp("acquired");
  const auto& waiter = second_waited ? second : first;
  const auto& holder = second_waited ? first : second;
  CHECK(waiter.err() == "lock-standin: GPU 0 (GPU-x) is being measured by pid " + std::to_string(holder.pid()) +
                            " (lock-standin); waiting up to 30 s\n");
  CHECK(holder.err().empty());
}

TEST_CASE("a 2-GPU run and 1-GPU runs in any order: no deadlock, no overlap", "[lock][process]") {
  const temp_dir dir;
  standin pair(dir.path(), "pair", 30, 400, {"GPU-x", "GPU-y"});
  standin reversed(dir.path(), "reversed", 30, 400, {"GPU-y", "GPU-x"});
  standin single(dir.path(), "single", 30, 400, {"GPU-y"});
  CHECK(pair.wait() == 0);
  CHECK(reversed.wait() == 0);
  CHECK(single.wait() == 0);
  check_disjoint({&pair, &reversed, &single});
}

TEST_CASE("with timeout 0 the second process refuses at once: exit 2 and the holder named", "[lock][process]") {
  const temp_dir dir;
  standin holder(dir.path(), "holder", 30, 1500, {"GPU-x"});
  holder.wait_acquired();
  const auto started = std::chrono::steady_clock::now();
  standin refused(dir.path(), "refused", 0, 0, {"GPU-x"});
  CHECK(refused.wait() == 2);
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(refused.stamp("acquired") == 0);
  CHECK(contains(refused.err(), "lock-standin: GPU 0 (GPU-x) is being measured by pid " + std::to_string(holder.pid()) +
                                    " (lock-standin); not waiting (lock timeout 0 s)"));
  CHECK(holder.wait() == 0);
}

TEST_CASE("a holder killed with SIGKILL leaves the GPU free", "[lock][process]") {
  const temp_dir dir;
  standin holder(dir.path(), "holder", 30, 60000, {"GPU-x"});
  holder.wait_acquired();
  ::kill(holder.pid(), SIGKILL);
  CHECK(holder.wait() == 128 + SIGKILL);
  standin next(dir.path(), "next", 0, 0, {"GPU-x"});
  CHECK(next.wait() == 0);
}
