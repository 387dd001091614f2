// hdbench-allreduce on real GPUs (label gpu). The test process is the driver; its ranks are real
// hdbench-allreduce workers (the binary re-executed with --allreduce-worker), so this is the code
// path a run takes. Every collective, dtype and placement is verified element by element at odd
// sizes (one element, odd element counts) and timed graph-launched (the default); the graph path
// leaves results right and beats the host-launched loop on small messages; a killed worker fails
// its case and the next case runs; with one rank 1000 µs late every rank's time rises by 1000 µs.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "collective.hpp"
#include "driver.hpp"
#include "local_launcher.hpp"
#include "nccl_executor.hpp"
#include "plan.hpp"
#include "straggler.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace hdb::allreduce;

namespace {

struct real_workers {
  std::vector<int> devices;
  local_group* last = nullptr;

  collective_driver::group_factory factory() {
    return [this](const group_profile& profile) -> std::unique_ptr<rank_group> {
      worker_launch launch;
      launch.executable = HDB_ALLREDUCE_BINARY;
      launch.worker_flag = "--allreduce-worker";
      launch.devices = devices;
      if (profile.p2p_disabled) launch.environment = {{"NCCL_P2P_DISABLE", "1"}};
      auto group = std::make_unique<local_group>(launch);
      last = group.get();
      return group;
    };
  }
};

case_request make_request(collective op, data_type type, bool in_place, int ranks, std::uint64_t count,
                          launch_method launch = launch_method::graph) {
  case_request r;
  r.key = std::string(to_string(op)) + "/" + std::string(to_string(type)) + (in_place ? "/in" : "/out") + "/" +
          std::to_string(ranks) + "/" + std::to_string(count) + "/" + std::string(to_string(launch));
  r.shape.launch = launch;
  r.shape.op = op;
  r.shape.type = type;
  r.shape.in_place = in_place ? 1 : 0;
  r.shape.ranks = ranks;
  r.shape.count = count;
  r.shape.warmup = 1;
  r.shape.iterations = 3;
  return r;
}

}  // namespace

TEST_CASE("every collective, dtype and placement is right at odd sizes", "[gpu][allreduce]") {
  static_cast<void>(hdb_test::gpu_env());
  real_workers workers{hdb_test::test_devices()};
  if (workers.devices.size() > 2) workers.devices.resize(2);
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(60));
  for (int ranks = 1; ranks <= static_cast<int>(workers.devices.size()); ++ranks) {
    for (collective op : all_collectives()) {
      for (data_type type : {data_type::float32, data_type::bfloat16, data_type::float16}) {
        for (bool in_place : {false, true}) {
          // One element per rank, an odd count, and an odd count just past 1 MiB.
          for (std::uint64_t per_rank : {std::uint64_t{1}, std::uint64_t{7}, (std::uint64_t{1} << 18) + 3}) {
            const std::uint64_t count = traits(op).split_over_ranks ? per_rank * static_cast<std::uint64_t>(ranks) : per_rank;
            // In place on one rank NCCL does nothing (the plan leaves it out; a graph of it is
            // refused, tested below): its verification still runs, stream-launched.
            const launch_method launch = ranks == 1 && in_place ? launch_method::stream : launch_method::graph;
            const case_request request = make_request(op, type, in_place, ranks, count, launch);
            INFO(request.key);
            repetition_result result;
            REQUIRE_NOTHROW(result = driver.run(request));  // verification throws on a wrong value
            CHECK(result.wrong == 0);
            CHECK(result.time_us > 0);
          }
        }
      }
    }
  }
}

TEST_CASE("graph launches leave results right, a no-op batch is refused", "[gpu][allreduce]") {
  // One rank in this process: verify, time graph-launched batches, verify again (out of place, so
  // the output must still be exactly the expected sums). Multicast stays off here too, as the
  // binary forces it in every process it starts.
  static_cast<void>(hdb_test::gpu_env());
  for (const auto& [key, value] : forced_environment()) setenv(key.c_str(), value.c_str(), 1);
  const int device = hdb_test::test_devices().front();
  const std::unique_ptr<rank_executor> rank = make_nccl_executor(0, device);
  command cmd;
  cmd.ranks = 1;
  cmd.kind = command_kind::connect;
  cmd.id = make_nccl_unique_id();
  REQUIRE(rank->execute(cmd).status == reply_status::ok);
  cmd.op = collective::all_reduce;
  cmd.type = data_type::float32;
  cmd.count = (1u << 18) + 3;
  cmd.warmup = 1;
  cmd.iterations = 5;
  cmd.wait_limit_ms = 30000;
  cmd.launch = launch_method::graph;
  for (command_kind kind : {command_kind::prepare, command_kind::verify, command_kind::run, command_kind::run,
                            command_kind::verify}) {
    cmd.kind = kind;
    const rank_reply reply = rank->execute(cmd);
    INFO(to_string(kind) << ": " << reason_of(reply));
    REQUIRE(reply.status == reply_status::ok);
    CHECK(reply.wrong == 0);
    if (kind == command_kind::run) CHECK(reply.times_us[0] > 0);
  }
  // In place on one rank the captured batch is empty: the run fails with the reason rather than
  // report the events' own gap as a time.
  cmd.in_place = 1;
  cmd.kind = command_kind::prepare;
  REQUIRE(rank->execute(cmd).status == reply_status::ok);
  cmd.kind = command_kind::run;
  const rank_reply empty = rank->execute(cmd);
  CHECK(empty.status == reply_status::fail);
  CHECK(reason_of(empty).find("no device work") != std::string::npos);
  cmd.kind = command_kind::quit;
  static_cast<void>(rank->execute(cmd));
}

TEST_CASE("graph-launched small collectives are not set by the host's launch rate", "[gpu][allreduce]") {
  static_cast<void>(hdb_test::gpu_env());
  real_workers workers{hdb_test::test_devices()};
  if (workers.devices.size() > 2) workers.devices.resize(2);
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(60));
  for (int ranks = 1; ranks <= static_cast<int>(workers.devices.size()); ++ranks) {
    // 8 B of floats, 100 per batch as the plan does; the median of five repetitions each.
    const auto median_time = [&](launch_method launch) {
      case_request request = make_request(collective::all_reduce, data_type::float32, false, ranks, 2, launch);
      request.shape.iterations = 100;
      request.shape.warmup = 10;
      std::vector<double> times;
      for (int i = 0; i < 5; ++i) times.push_back(driver.run(request).time_us);
      std::sort(times.begin(), times.end());
      return times[2];
    };
    const double graph = median_time(launch_method::graph);
    const double stream = median_time(launch_method::stream);
    WARN("8 B all-reduce, " << ranks << " rank(s): graph-launched " << graph << " us, stream-launched " << stream
                            << " us per collective");
    CHECK(graph > 0);
    // The stream-launched loop pays one host enqueue per collective (~4-7 us on an H200 host);
    // the graph pays one launch per batch of 100. On one rank the device work is an 8-byte copy,
    // so the host sets the stream-launched figure; between GPUs NCCL's kernel may take about as
    // long as the enqueue, and the graph must at least not be slower (5 % for noise).
    if (ranks == 1) {
      CHECK(graph < stream);
    } else {
      CHECK(graph <= 1.05 * stream);
    }
  }
}

TEST_CASE("P2P-disabled workers verify too", "[gpu][allreduce]") {
  hdb_test::require_gpus(2);
  real_workers workers{hdb_test::test_devices()};
  workers.devices.resize(2);
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(60));
  case_request request = make_request(collective::all_reduce, data_type::float32, false, 2, (1u << 20) + 1);
  request.profile.p2p_disabled = true;
  CHECK(driver.run(request).time_us > 0);
}

TEST_CASE("the overlap protocol reports both phases", "[gpu][allreduce]") {
  static_cast<void>(hdb_test::gpu_env());
  real_workers workers{hdb_test::test_devices()};
  if (workers.devices.size() > 2) workers.devices.resize(2);
  const int ranks = static_cast<int>(workers.devices.size());
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(60));
  case_request request = make_request(collective::all_reduce, data_type::float32, false, ranks, 16u << 20);
  request.timed = command_kind::overlap;
  const repetition_result r = driver.run(request);
  for (double t : r.overlap_us) CHECK(t > 0);
  // Both at once never beats the longer of the two alone by more than noise.
  CHECK(r.overlap_us[2] >= 0.9 * std::max(r.overlap_us[0], r.overlap_us[1]));
}

TEST_CASE("one rank 1000 us late: every rank's time rises by the delay", "[gpu][allreduce][straggler]") {
  hdb_test::require_gpus(2);
  real_workers workers{hdb_test::test_devices()};
  workers.devices.resize(2);
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(60));
  // The binary's case: 64 MiB of floats, stream-launched, rank 1 late, the plan's batch shape.
  const std::size_t bytes = std::size_t{64} << 20;
  case_request request = make_request(collective::all_reduce, data_type::float32, false, 2, bytes / 4,
                                      launch_method::stream);
  request.timed = command_kind::straggler;
  request.shape.straggler_rank = 1;
  const batch_shape batch = batch_for(bytes);
  request.shape.warmup = batch.warmup;
  request.shape.iterations = batch.iterations;
  // Median over five repetitions of each rank's figures at one delay.
  const auto medians = [&](int delay_us) {
    request.shape.delay_ns = static_cast<std::uint64_t>(delay_us) * 1000;
    std::vector<std::vector<straggler_figures>> per_rank(2);
    for (int i = 0; i < 5; ++i) {
      const repetition_result r = driver.run(request);
      CHECK(r.wrong == 0);
      for (int rank = 0; rank < 2; ++rank) per_rank[static_cast<std::size_t>(rank)].push_back(straggler_row(r.rank_times_us, 1, rank));
    }
    std::vector<straggler_figures> out;
    for (auto& samples : per_rank) {
      std::sort(samples.begin(), samples.end(),
                [](const straggler_figures& a, const straggler_figures& b) { return a.rank_time_us < b.rank_time_us; });
      out.push_back(samples[2]);
    }
    return out;
  };
  const auto none = medians(0);
  const auto late = medians(1000);
  for (int rank = 0; rank < 2; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    const double rise = late[r].rank_time_us - none[r].rank_time_us;
    WARN("rank " << rank << ": " << none[r].rank_time_us << " us with no delay, " << late[r].rank_time_us
                 << " us with rank 1 1000 us late (rise " << rise << " us; in the collective "
                 << late[r].time_in_collective_us << " us; delay kernel " << late[r].delay_us << " us)");
    CHECK(none[r].rank_time_us > 10);  // NCCL's own time well above the smallest delay
    CHECK(rise >= 900);
    CHECK(rise <= 1100);
  }
  // The delay kernel waits what it was asked to, and the late rank then finds the others waiting:
  // its time inside the collective is near the no-delay time, theirs near the delay more.
  CHECK(late[1].delay_us >= 1000);
  CHECK(late[1].delay_us <= 1100);
  CHECK(late[1].time_in_collective_us < late[0].time_in_collective_us);
  CHECK(late[0].slowest_fastest > 2);
}

TEST_CASE("the binary writes a straggler row per rank and delay", "[gpu][allreduce][straggler]") {
  hdb_test::require_gpus(2);
  const std::string out = "allreduce_gpu_test_straggler.json";
  const std::string command = std::string(HDB_ALLREDUCE_BINARY) +
                              " --ranks=2 --sizes=8 --collectives=all_reduce --dtypes=float --placements=out_of_place"
                              " --interconnect=default --overlap-size=0 --straggler-delays=0,1000 --straggler-size=16M"
                              " --benchmark_repetitions=2 --benchmark_out_format=json --benchmark_out=" + out +
                              " > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  for (const char* row : {"straggler_rank=1;delay_us=0;rank=0", "straggler_rank=1;delay_us=0;rank=1",
                          "straggler_rank=1;delay_us=1000;rank=0", "straggler_rank=1;delay_us=1000;rank=1"}) {
    INFO(row);
    CHECK(text.str().find(row) != std::string::npos);
  }
  for (const char* metric : {"\"rank_time\"", "\"time_in_collective\"", "\"straggler_delay\"", "\"slowest_fastest\""}) {
    INFO(metric);
    CHECK(text.str().find(metric) != std::string::npos);
  }
  std::remove(out.c_str());
}

TEST_CASE("a killed worker fails its case with the reason and the next case runs", "[gpu][allreduce]") {
  hdb_test::require_gpus(2);
  real_workers workers{hdb_test::test_devices()};
  workers.devices.resize(2);
  collective_driver driver(workers.factory(), make_nccl_unique_id, std::chrono::seconds(30));
  const case_request request = make_request(collective::all_reduce, data_type::float32, false, 2, 1u << 20);
  REQUIRE(driver.run(request).time_us > 0);
  ::kill(workers.last->pids()[1], SIGKILL);
  try {
    static_cast<void>(driver.run(request));
    FAIL("expected the case to fail");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("rank 1") != std::string::npos);
  }
  CHECK(driver.run(make_request(collective::all_reduce, data_type::float32, false, 2, 1u << 20)).time_us > 0);
}

TEST_CASE("the binary runs a small sweep and writes busbw", "[gpu][allreduce]") {
  static_cast<void>(hdb_test::gpu_env());
  const std::string out = "allreduce_gpu_test_out.json";
  const std::string command = std::string(HDB_ALLREDUCE_BINARY) +
                              " --sizes=8,1M --collectives=all_reduce --dtypes=float --placements=out_of_place"
                              " --interconnect=default --overlap-size=0 --straggler-delays=none --benchmark_repetitions=2"
                              " --benchmark_out_format=json --benchmark_out=" + out + " > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  CHECK(text.str().find("\"algbw\"") != std::string::npos);
  CHECK(text.str().find("nccl.version") != std::string::npos);
  // The default (auto): 8 B graph-launched, 1 MiB host-launched, each case saying which.
  CHECK(text.str().find("size_bytes=8;launch=graph") != std::string::npos);
  CHECK(text.str().find("size_bytes=1048576;launch=stream") != std::string::npos);
  CHECK(text.str().find("\"hdbench.schema\"") != std::string::npos);  // the declaration travels with the output
  if (hdb_test::test_devices().size() >= 2) {
    CHECK(text.str().find("\"busbw\"") != std::string::npos);
    CHECK(text.str().find("ranks=2;") != std::string::npos);
    CHECK(text.str().find("traffic=busbw:nvlink_bus") != std::string::npos);
  }
  std::remove(out.c_str());
}

TEST_CASE("the binary times stream-launched on request and refuses an unknown launch method", "[gpu][allreduce]") {
  static_cast<void>(hdb_test::gpu_env());
  const std::string out = "allreduce_gpu_test_stream.json";
  const std::string base = std::string(HDB_ALLREDUCE_BINARY) +
                           " --sizes=8 --ranks=1 --collectives=all_reduce --dtypes=float --placements=out_of_place"
                           " --interconnect=default --overlap-size=0 --straggler-delays=none --benchmark_out_format=json"
                           " --benchmark_out=" + out;
  REQUIRE(std::system((base + " --launch=stream > /dev/null").c_str()) == 0);
  std::ifstream file(out);
  std::stringstream text;
  text << file.rdbuf();
  CHECK(text.str().find("size_bytes=8;launch=stream") != std::string::npos);
  CHECK(text.str().find("\"time\"") != std::string::npos);
  std::remove(out.c_str());
  const int refused = std::system((base + " --launch=host > /dev/null 2>&1").c_str());
  CHECK(WIFEXITED(refused));
  CHECK(WEXITSTATUS(refused) == 2);
}
