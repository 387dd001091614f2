// The local launcher and the driver, with stand-in workers (no GPU): the unique id reaches every
// rank, replies come back in rank order, the multicast-off variables are forced into every worker,
// one rank's skip stops all before a collective, and a worker that dies or hangs fails its case
// with a reason within the watchdog time while the next case gets a fresh group. The straggler
// command carries its late rank and delay to the right worker, and every rank's time comes back,
// the wait for the late rank included (the stand-in ends the collective at the last arrival + cost).
#include "catch_compat.hpp"

#include "driver.hpp"
#include "local_launcher.hpp"
#include "standin_executor.hpp"
#include "straggler.hpp"

#include "hdb/family.hpp"
#include "hdb/sizes.hpp"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <signal.h>
#include <string>

using namespace hdb::allreduce;

namespace {

worker_launch standin_launch(int workers, const std::string& mode) {
  worker_launch launch;
  launch.executable = HDB_ALLREDUCE_STANDIN;
  launch.arguments = {"--mode=" + mode};
  launch.worker_flag = "--allreduce-worker";
  for (int r = 0; r < workers; ++r) launch.devices.push_back(r);
  return launch;
}

unique_id test_id(unsigned char seed) {
  unique_id id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(seed + i * 7);
  return id;
}

command connect_command(int ranks, const unique_id& id) {
  command cmd;
  cmd.kind = command_kind::connect;
  cmd.ranks = ranks;
  cmd.id = id;
  return cmd;
}

case_request request(const std::string& key, int ranks) {
  case_request r;
  r.key = key;
  r.shape.ranks = ranks;
  r.shape.count = 1024;
  r.shape.warmup = 1;
  r.shape.iterations = 2;
  return r;
}

struct counted_factory {
  std::string mode;
  int workers;
  std::shared_ptr<int> started = std::make_shared<int>(0);
  std::shared_ptr<std::string> p2p_seen = std::make_shared<std::string>();

  collective_driver::group_factory get() const {
    return [*this](const group_profile& profile) -> std::unique_ptr<rank_group> {
      ++*started;
      worker_launch launch = standin_launch(workers, mode);
      if (profile.p2p_disabled) launch.environment = {{"NCCL_P2P_DISABLE", "1"}};
      return std::make_unique<local_group>(launch);
    };
  }

  // Every group this driver starts gets the same unique id: the stand-in workers need no NCCL.
  collective_driver make_driver(std::chrono::seconds watchdog = std::chrono::seconds(10)) const {
    return collective_driver(get(), [] { return test_id(5); }, watchdog);
  }
};

// The message of the failure a two-rank case ends with (a failure, not a skip).
std::string failure_of(collective_driver& driver) {
  try {
    static_cast<void>(driver.run(request("a", 2)));
  } catch (const hdb::skip_case&) {
    FAIL("a failure, not a skip, was expected");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  FAIL("expected a failure");
  return "";
}

}  // namespace

TEST_CASE("every worker gets the same unique id and answers in rank order", "[allreduce][launcher]") {
  local_group group(standin_launch(3, "normal"));
  REQUIRE(group.size() == 3);
  const unique_id id = test_id(11);
  const auto replies = group.exchange(connect_command(3, id), std::chrono::seconds(10));
  REQUIRE(replies.size() == 3);
  for (int r = 0; r < 3; ++r) {
    CHECK(replies[static_cast<std::size_t>(r)].rank == r);
    CHECK(replies[static_cast<std::size_t>(r)].status == reply_status::ok);
    CHECK(replies[static_cast<std::size_t>(r)].token == fingerprint(id));
  }
  // A communicator of 2 among 3 workers: rank 2 sits it out.
  const auto two = group.exchange(connect_command(2, test_id(12)), std::chrono::seconds(10));
  CHECK(two[2].status == reply_status::idle);
  CHECK(two[1].token == fingerprint(test_id(12)));
}

TEST_CASE("workers run with the multicast-off variables forced, and the profile's environment", "[allreduce][launcher]") {
  // Even a parent that asks for multicast cannot pass it on.
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  worker_launch launch = standin_launch(2, "normal");
  launch.environment = {{"NCCL_P2P_DISABLE", "1"}};
  local_group group(launch);
  unsetenv("NCCL_NVLS_ENABLE");
  const auto replies = group.exchange(connect_command(2, test_id(1)), std::chrono::seconds(10));
  for (const rank_reply& r : replies) {
    const std::string env = reason_of(r);
    CHECK(env.find("NCCL_NVLS_ENABLE=0") != std::string::npos);
    CHECK(env.find("TORCH_SYMM_MEM_DISABLE_MULTICAST=1") != std::string::npos);
    CHECK(env.find("NVSHMEM_DISABLE_NVLS=1") != std::string::npos);
    CHECK(env.find("NCCL_P2P_DISABLE=1") != std::string::npos);
  }
}

TEST_CASE("the driver reduces a repetition to the slowest rank", "[allreduce][launcher]") {
  counted_factory factory{"normal", 3};
  collective_driver driver = factory.make_driver();
  CHECK(driver.run(request("a", 3)).time_us == 12.0);  // ranks answer 10, 11, 12
  CHECK(driver.run(request("a", 2)).time_us == 11.0);
  CHECK(driver.run(request("b", 1)).time_us == 10.0);
  CHECK(*factory.started == 1);  // one group serves every rank count
  CHECK_THROWS_AS(driver.run(request("c", 4)), hdb::skip_case);
}

TEST_CASE("the launch method reaches every rank with each run", "[allreduce][launcher]") {
  counted_factory factory{"normal", 2};
  collective_driver driver = factory.make_driver();
  case_request graph = request("a", 2);
  CHECK(graph.shape.launch == launch_method::graph);  // the protocol's default is the binary's
  CHECK(driver.run(graph).time_us == 11.0);
  case_request stream = request("b", 2);
  stream.shape.launch = launch_method::stream;
  CHECK(driver.run(stream).time_us == 21.0);  // both ranks answered as stream-launched
}

namespace {
case_request straggler_request(int ranks, int late_rank, std::uint64_t delay_us) {
  case_request r = request("straggler", ranks);
  r.timed = command_kind::straggler;
  r.shape.straggler_rank = late_rank;
  r.shape.delay_ns = delay_us * 1000;
  return r;
}
}  // namespace

TEST_CASE("the straggler's rank and delay reach the right worker, every rank's time includes the wait",
          "[allreduce][launcher][straggler]") {
  counted_factory factory{"normal", 3};
  collective_driver driver = factory.make_driver();
  const repetition_result none = driver.run(straggler_request(3, 2, 0));
  const repetition_result late = driver.run(straggler_request(3, 2, 1000));
  REQUIRE(none.rank_times_us.size() == 3);
  REQUIRE(late.rank_times_us.size() == 3);
  for (std::size_t r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK(none.rank_times_us[r][0] == hdb_test::straggler_cost_us);
    // Every rank, the late one from its own start (before its delay) and the others waiting for it.
    CHECK(late.rank_times_us[r][0] == 1000 + hdb_test::straggler_cost_us);
    CHECK(late.rank_times_us[r][0] - none.rank_times_us[r][0] == 1000);
    // Only the late rank ran the delay.
    CHECK(late.rank_times_us[r][1] == (r == 2 ? 1000 : 0));
  }
  CHECK(late.time_us == 1000 + hdb_test::straggler_cost_us);  // the slowest rank, as for every case
  // Another late rank in the same case: the command, not the worker, says who is late.
  const repetition_result other = driver.run(straggler_request(3, 1, 10));
  CHECK(other.rank_times_us[1][1] == 10);
  CHECK(other.rank_times_us[2][1] == 0);
  CHECK(*factory.started == 1);
  // Ranks beyond n take no part and report nothing.
  const repetition_result two = driver.run(straggler_request(2, 1, 100));
  CHECK(two.rank_times_us.size() == 2);
}

TEST_CASE("the straggler figures of a stand-in repetition", "[allreduce][launcher][straggler]") {
  counted_factory factory{"normal", 2};
  collective_driver driver = factory.make_driver();
  const repetition_result r = driver.run(straggler_request(2, 1, 1000));
  const straggler_figures punctual = straggler_row(r.rank_times_us, 1, 0);
  const straggler_figures late = straggler_row(r.rank_times_us, 1, 1);
  CHECK(punctual.rank_time_us == 1100);
  CHECK(late.rank_time_us == 1100);
  CHECK(punctual.time_in_collective_us == 1100);  // waited inside the collective
  CHECK(late.time_in_collective_us == 100);       // arrived last: the collective's own cost
  CHECK(late.delay_us == 1000);
  CHECK(punctual.slowest_fastest == 11.0);
}

TEST_CASE("a worker that dies in the straggler case fails it, naming the rank", "[allreduce][launcher][straggler]") {
  counted_factory factory{"die_on_run", 2};
  collective_driver driver = factory.make_driver();
  try {
    static_cast<void>(driver.run(straggler_request(2, 1, 10)));
    FAIL("expected a failure");
  } catch (const hdb::skip_case&) {
    FAIL("a failure, not a skip, was expected");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("died during 'straggler'") != std::string::npos);
  }
}

TEST_CASE("a different environment profile starts a fresh group", "[allreduce][launcher]") {
  counted_factory factory{"normal", 2};
  collective_driver driver = factory.make_driver();
  static_cast<void>(driver.run(request("a", 2)));
  case_request p2p = request("b", 2);
  p2p.profile.p2p_disabled = true;
  static_cast<void>(driver.run(p2p));
  static_cast<void>(driver.run(p2p));
  CHECK(*factory.started == 2);
}

TEST_CASE("one rank's skip stops every rank before the collective", "[allreduce][launcher]") {
  counted_factory factory{"skip_on_prepare", 2};
  collective_driver driver = factory.make_driver();
  try {
    static_cast<void>(driver.run(request("a", 2)));
    FAIL("expected a skip");
  } catch (const hdb::skip_case& e) {
    CHECK(std::string(e.what()).find("rank 1 (GPU 1): needs 8 GiB") != std::string::npos);
  }
  // The group is still usable: rank 0 alone runs.
  CHECK(driver.run(request("b", 1)).time_us == 10.0);
  CHECK(*factory.started == 1);
}

TEST_CASE("wrong values fail the case with the count", "[allreduce][launcher]") {
  counted_factory factory{"wrong_on_verify", 2};
  collective_driver driver = factory.make_driver();
  const std::string what = failure_of(driver);
  CHECK(what.find("3 wrong values") != std::string::npos);
  CHECK(what.find("first at element 17") != std::string::npos);
}

TEST_CASE("a worker that dies fails the case with its signal, and the next case restarts the group", "[allreduce][launcher]") {
  counted_factory factory{"die_on_run", 2};
  collective_driver driver = factory.make_driver();
  const std::string what = failure_of(driver);
  CHECK(what.find("rank 1 (GPU 1, pid ") != std::string::npos);
  CHECK(what.find("died during 'run'") != std::string::npos);
  CHECK(what.find("signal 9") != std::string::npos);
  CHECK(driver.run(request("b", 1)).time_us == 10.0);  // rank 0 alone never reaches rank 1's fault
  CHECK(*factory.started == 2);
}

TEST_CASE("a worker that hangs fails the case within the watchdog time", "[allreduce][launcher]") {
  counted_factory factory{"hang_on_run", 2};
  collective_driver driver = factory.make_driver(std::chrono::seconds(1));
  const auto start = std::chrono::steady_clock::now();
  const std::string what = failure_of(driver);
  CHECK(what.find("rank 1 (GPU 1, pid ") != std::string::npos);
  CHECK(what.find("did not answer 'run' within 1 s (watchdog)") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(driver.run(request("b", 1)).time_us == 10.0);
  CHECK(*factory.started == 2);
}

TEST_CASE("the worker flag round-trips and refuses malformed values", "[allreduce][launcher]") {
  const worker_identity id{7, 1, 2, 3};
  const worker_identity back = parse_worker_identity("allreduce-worker", format_worker_identity(id));
  CHECK(back.fd == 7);
  CHECK(back.rank == 1);
  CHECK(back.world == 2);
  CHECK(back.device == 3);
  CHECK_THROWS_AS(parse_worker_identity("allreduce-worker", "7,1,2"), hdb::usage_error);
  CHECK_THROWS_AS(parse_worker_identity("allreduce-worker", "7,2,2,0"), hdb::usage_error);
  CHECK_THROWS_AS(parse_worker_identity("allreduce-worker", "a,b,c,d"), hdb::usage_error);
}

TEST_CASE("a worker program that cannot start is reported, not waited for", "[allreduce][launcher]") {
  worker_launch launch = standin_launch(1, "normal");
  launch.executable = "/nonexistent/hdbench-worker";
  local_group group(launch);
  try {
    static_cast<void>(group.exchange(connect_command(1, test_id(1)), std::chrono::seconds(10)));
    FAIL("expected rank_lost");
  } catch (const rank_lost& e) {
    CHECK(std::string(e.what()).find("exited with status 127") != std::string::npos);
  }
}
