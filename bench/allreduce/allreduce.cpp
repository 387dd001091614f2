// hdbench-allreduce: NCCL all-reduce (sum), reduce-scatter and all-gather, one rank per GPU, each
// rank its own process.
//
// Process model. Locally, the driver (this process: it runs Google Benchmark and writes the JSON)
// starts one worker per GPU by re-executing itself with --allreduce-worker before it needs them;
// under mpirun/srun (built with MPI) rank 0 is the driver and also a rank. Either way the driver
// sends each case's commands to every rank and reduces their replies (driver.hpp); the transport
// is the only difference (local_launcher.hpp, mpi_transport.hpp).
// Timed: on every rank, CUDA events around a batch of collectives after a warm-up, the batch
// captured once per case into a CUDA graph and launched with one call (launch=graph: by default
// below --graph-below) or one host call per collective (launch=stream: from there; see
// nccl_executor.cpp); the case's time is the slowest rank's. Google Benchmark runs one iteration per repetition and every rank
// the same fixed batch: an adaptive count would deadlock ranks.
// The straggler case: one rank (the last) enters each all-reduce d µs late by a delay kernel on its
// own stream; every rank's time runs from its own start event (before the delay on the late rank)
// to the batch's end, one case (a row) per rank and delay (straggler.hpp, nccl_executor.cpp).
// Excluded: worker start-up, communicator creation, allocation, fill and verification.
// Bytes: nccl-tests' message size S (collective.hpp); algbw = S / time, busbw = algbw x bus factor.
#include "allreduce.hpp"

#include "collective.hpp"
#include "driver.hpp"
#include "local_launcher.hpp"
#include "nccl_executor.hpp"
#include "plan.hpp"
#include "straggler.hpp"

#if defined(HDB_WITH_MPI)
#include "mpi_transport.hpp"
#endif

#include "hdb/cuda_check.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/sizes.hpp"
#include "hdb/host_placement.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

extern char** environ;

namespace hdb::allreduce {
namespace {

constexpr const char* worker_flag = "allreduce-worker";

enum class launch_mode { local, mpi };

template <class T, class Parse>
std::vector<T> parse_list(const std::string& flag, const std::string& text, Parse parse) {
  std::vector<T> out;
  for (const std::string& item : split_list(text)) {
    const std::optional<T> value = parse(item);
    if (!value) throw usage_error("bad value for --" + flag + ": '" + item + "'");
    if (std::find(out.begin(), out.end(), *value) == out.end()) out.push_back(*value);
  }
  return out;
}

std::optional<placement> parse_placement(const std::string& text) {
  if (text == "out_of_place") return placement::out_of_place;
  if (text == "in_place") return placement::in_place;
  return std::nullopt;
}

std::optional<interconnect> parse_interconnect(const std::string& text) {
  if (text == "default") return interconnect::default_transports;
  if (text == "p2p_disabled") return interconnect::p2p_disabled;
  return std::nullopt;
}

// --launch: nullopt for auto.
std::optional<launch_method> parse_launch(const std::string& flag, const std::string& text) {
  if (text == "auto") return std::nullopt;
  const std::optional<launch_method> method = parse_launch_method(text);
  if (!method) throw usage_error("bad value for --" + flag + ": '" + text + "' (auto, graph or stream)");
  return method;
}

std::vector<collective> parse_collectives(const std::string& flag, const std::string& text) {
  return parse_list<collective>(flag, text, [](const std::string& s) { return parse_collective(s); });
}
std::vector<data_type> parse_types(const std::string& flag, const std::string& text) {
  return parse_list<data_type>(flag, text, [](const std::string& s) { return parse_data_type(s); });
}
std::vector<placement> parse_placements(const std::string& flag, const std::string& text) {
  return parse_list<placement>(flag, text, parse_placement);
}
std::vector<interconnect> parse_interconnects(const std::string& flag, const std::string& text) {
  return parse_list<interconnect>(flag, text, parse_interconnect);
}

std::size_t parse_graph_below(const std::string& flag, const std::string& text) {
  try {
    return parse_size(text);
  } catch (const usage_error& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
}

std::size_t parse_overlap_size(const std::string& flag, const std::string& text) {
  if (text == "0") return 0;
  try {
    return parse_size(text);
  } catch (const usage_error& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
}

std::size_t parse_straggler_size(const std::string& flag, const std::string& text) {
  std::size_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const usage_error& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
  // Unlike --overlap-size, 0 does not turn the case off (--straggler-delays=none does).
  if (bytes == 0) throw usage_error("bad value for --" + flag + ": '" + text + "' (a message size above 0, e.g. 64M)");
  return bytes;
}

std::string_view kind_name(case_kind kind) {
  switch (kind) {
    case case_kind::collective: return "collective";
    case case_kind::overlap: return "overlap";
    case case_kind::straggler: return "straggler";
  }
  return "collective";
}

int parse_seconds(const std::string& flag, const std::string& text) {
  const std::vector<int> values = parse_positive_int_list(flag, text);
  if (values.size() != 1) throw usage_error("bad value for --" + flag + ": '" + text + "' (one whole number of seconds)");
  return values.front();
}

#if defined(HDB_WITH_MPI)
// Rank 0 when it has no GPU work to do: it only takes part in the conversation.
class idle_rank final : public rank_executor {
 public:
  rank_reply execute(const command&) override {
    rank_reply reply;
    reply.rank = 0;
    reply.status = reply_status::idle;
    return reply;
  }
};
#endif

class session : public std::enable_shared_from_this<session> {
 public:
  ~session() {
    driver_.reset();  // releases the case, ends local workers
#if defined(HDB_WITH_MPI)
    if (mpi_ && !mpi_->broken()) {
      // Rank 0 may never have needed its own executor (listing, a usage error): the others still
      // wait for their quit.
      if (!own_) own_ = std::make_unique<idle_rank>();
      command quit;
      quit.kind = command_kind::quit;
      try {
        static_cast<void>(mpi_group(*mpi_, *own_).exchange(quit, watchdog_));
      } catch (const std::exception& e) {  // a destructor must not throw: that would terminate
        std::fprintf(stderr, "hdbench-allreduce: %s\n", e.what());
      }
    }
    own_.reset();
    mpi_.reset();
#endif
  }

  std::optional<int> before_cuda(const run_options& options, int argc, char** argv) {
    // NCCL, NVSHMEM and PyTorch read these at start-up: set before anything initialises, and
    // inherited by every worker (which force-sets them again).
    for (const auto& [key, value] : forced_environment()) setenv(key.c_str(), value.c_str(), 1);
    watchdog_ = std::chrono::seconds(parse_seconds("watchdog-s", options.value("watchdog-s")));
    if (const std::string& worker = options.value(worker_flag); !worker.empty()) {
      return serve_local_worker(parse_worker_identity(worker_flag, worker), options);
    }
    const std::string& launcher = options.value("launcher");
#if defined(HDB_WITH_MPI)
    if (launcher == "mpi" || (launcher == "auto" && launched_by_mpi())) {
      mpi_ = std::make_unique<mpi_world>(&argc, &argv);
      mode_ = launch_mode::mpi;
      if (mpi_->rank() == 0) return std::nullopt;
      const int code = serve_mpi_rank(options);
      mpi_.reset();
      return code;
    }
#else
    static_cast<void>(argc);
    static_cast<void>(argv);
    if (launcher == "mpi" || (launcher == "auto" && std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr)) {
      std::fprintf(stderr,
                   "hdbench-allreduce: started for MPI but built without it (configure with -DHDB_WITH_MPI=ON); "
                   "on one node run it directly: it starts one process per GPU itself\n");
      return 2;
    }
#endif
    return std::nullopt;
  }

  void register_cases(const run_options& options, family_env& env, case_registry& registry) {
    record_context();
    std::vector<int> devices;
    for (const device_info& d : env.devices) devices.push_back(d.index);
    const int available = mode_ == launch_mode::local ? static_cast<int>(devices.size()) : mpi_size();

    plan_options plan;
    plan.sizes = parse_size_list(options.value("sizes"));
    plan.ranks = parse_ranks(options.value("ranks"), available);
    plan.available_ranks = available;
    plan.collectives = parse_collectives("collectives", options.value("collectives"));
    plan.types = parse_types("dtypes", options.value("dtypes"));
    plan.placements = parse_placements("placements", options.value("placements"));
    plan.interconnects = parse_interconnects("interconnect", options.value("interconnect"));
    plan.overlap_bytes = parse_overlap_size("overlap-size", options.value("overlap-size"));
    plan.launch = parse_launch("launch", options.value("launch"));
    plan.graph_below = parse_graph_below("graph-below", options.value("graph-below"));
    plan.straggler_delays_us = parse_straggler_delays("straggler-delays", options.value("straggler-delays"));
    plan.straggler_bytes = parse_straggler_size("straggler-size", options.value("straggler-size"));
    const std::vector<planned_case> cases = plan_cases(plan);

    int workers = 1;
    for (const planned_case& c : cases) {
      if (c.skip_reason.empty()) workers = std::max(workers, c.ranks);
    }
    worker_arguments_ = {"--numa=" + options.value("numa")};
    worker_devices_.assign(devices.begin(), devices.begin() + std::min<std::ptrdiff_t>(workers, std::ssize(devices)));
    own_device_ = devices.front();

    for (const planned_case& c : cases) registry.add(make_spec(c, devices));
  }

 private:
  // A rank's host thread and memory belong on its GPU's NUMA node (NCCL's host-staged transports
  // and proxy thread run from there), as the shared main does for the driver.
  static void place_near(int device, const run_options& options) {
    char bus_id[32] = {};
    HDB_CUDA_CALL(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device));
    static_cast<void>(apply_numa_placement(
        choose_numa_placement(options.numa, read_pci_numa_node("/sys", bus_id), read_numa_nodes("/sys"))));
  }

  static int serve_local_worker(const worker_identity& identity, const run_options& options) {
    try {
      place_near(identity.device, options);
      const std::unique_ptr<rank_executor> executor = make_nccl_executor(identity.rank, identity.device);
      fd_channel channel(identity.fd);
      return serve(channel, *executor);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hdbench-allreduce worker (rank %d, GPU %d): %s\n", identity.rank, identity.device, e.what());
      return 1;
    }
  }

#if defined(HDB_WITH_MPI)
  int serve_mpi_rank(const run_options& options) {
    try {
      int count = 0;
      HDB_CUDA_CALL(cudaGetDeviceCount(&count));
      const std::vector<int> devices = resolve_devices(options.devices, count);
      if (mpi_->local_rank() >= std::ssize(devices)) {
        throw std::runtime_error("node " + mpi_->host() + " has " + std::to_string(devices.size()) +
                                 " selected GPUs, too few for local rank " + std::to_string(mpi_->local_rank()));
      }
      const int device = devices[static_cast<std::size_t>(mpi_->local_rank())];
      place_near(device, options);
      const auto executor = make_nccl_executor(mpi_->rank(), device);
      mpi_channel channel;
      return serve(channel, *executor);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hdbench-allreduce rank %d: %s\n", mpi_->rank(), e.what());
      mpi_->mark_broken();  // the job cannot run without this rank: end it, not just this process
      return 2;
    }
  }
  int mpi_size() const { return mpi_->size(); }
#else
  static int mpi_size() { return 1; }
#endif

  static void record_context() {
    benchmark::AddCustomContext("nccl.version", nccl_version());
    // Every NCCL_* variable the ranks start with (forced ones included), for meta.json.
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("NCCL_", 0) != 0) continue;
      const std::size_t eq = entry.find('=');
      benchmark::AddCustomContext("nccl.env." + entry.substr(0, eq), eq == std::string::npos ? "" : entry.substr(eq + 1));
    }
    for (const auto& [key, value] : forced_environment()) {
      if (key.rfind("NCCL_", 0) != 0) benchmark::AddCustomContext("env." + key, value);
    }
  }

  collective_driver& driver() {
    if (!driver_) {
      // A plain pointer: driver_ (and the factory it keeps) dies with this session. A shared_ptr
      // here made a cycle, so the session was never destroyed: no MPI_Finalize under mpirun, and
      // local workers were never told to quit (only killed when the driver exited).
      session* const self = this;
      collective_driver::group_factory make_group;
#if defined(HDB_WITH_MPI)
      if (mode_ == launch_mode::mpi) {
        if (!own_) own_ = make_nccl_executor(0, own_device_);
        make_group = [self](const group_profile&) -> std::unique_ptr<rank_group> {
          return std::make_unique<mpi_group>(*self->mpi_, *self->own_);
        };
      }
#endif
      if (!make_group) {
        make_group = [self](const group_profile& profile) -> std::unique_ptr<rank_group> {
          worker_launch launch;
          launch.executable = "/proc/self/exe";
          launch.worker_flag = std::string("--") + worker_flag;
          launch.arguments = self->worker_arguments_;
          launch.devices = self->worker_devices_;
          if (profile.p2p_disabled) launch.environment = {{"NCCL_P2P_DISABLE", "1"}};
          return std::make_unique<local_group>(launch);
        };
      }
      driver_ = std::make_unique<collective_driver>(std::move(make_group), make_nccl_unique_id, watchdog_);
    }
    return *driver_;
  }

  case_spec make_spec(const planned_case& c, const std::vector<int>& devices) {
    label_list params = {{"api", std::string(traits(c.op).name)},
                         {"dtype", std::string(to_string(c.type))},
                         {"placement", std::string(to_string(c.where))},
                         {"interconnect", std::string(to_string(c.via))},
                         {"ranks", std::to_string(c.ranks)},
                         {"size_bytes", std::to_string(c.bytes)},
                         {"launch", std::string(to_string(c.launch))}};
    if (c.kind == case_kind::straggler) {
      params.emplace_back("straggler_rank", std::to_string(c.straggler_rank));
      params.emplace_back("delay_us", std::to_string(c.delay_us));
      params.emplace_back("rank", std::to_string(c.rank));
    }
    // The GPUs of this node the case measures (under MPI, rank 0's). A straggler row is one rank's
    // time but lists every GPU of the collective, as the other multi-rank cases do: its `rank`
    // column says whose time it is (locally rank r drives the r-th GPU of the list), and a
    // whole-node case is what the tiers (--sweep-devices) keep.
    const std::size_t local = mode_ == launch_mode::local ? std::clamp<std::size_t>(c.ranks, 1, devices.size()) : 1;
    case_spec spec = make_case("allreduce", kind_name(c.kind), std::move(params),
                               std::vector<int>(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(local)));
    // What bounds the bytes: between GPUs, the slowest GPU's NVLinks, or with P2P disabled its
    // PCIe link (every byte goes through host memory); on one GPU an out-of-place all-reduce is a
    // device copy, each byte read and written in HBM.
    if (c.kind == case_kind::collective && c.ranks > 1) {
      spec.traffic = {{"busbw", c.via == interconnect::default_transports ? "nvlink_bus" : "pcie_per_direction_per_gpu"}};
    } else if (c.kind == case_kind::collective && c.op == collective::all_reduce && c.where == placement::out_of_place) {
      spec.traffic = {{"algbw", "hbm_read_write"}};
    }
    spec.iterations = 1;

    case_request request;
    // Every straggler case of a run shares one set of buffers (set up and verified once): they
    // differ only in the delay and in whose time they report.
    request.key = c.kind == case_kind::straggler
                      ? "straggler/" + std::to_string(c.ranks) + "/" + std::to_string(c.count)
                      : spec.name;
    request.profile.p2p_disabled = c.via == interconnect::p2p_disabled;
    request.shape.op = c.op;
    request.shape.type = c.type;
    request.shape.in_place = c.where == placement::in_place ? 1 : 0;
    request.shape.ranks = c.ranks;
    request.shape.count = c.count;
    request.shape.launch = c.launch;
    const batch_shape batch = batch_for(c.bytes);
    request.shape.warmup = batch.warmup;
    request.shape.iterations = batch.iterations;
    request.timed = c.kind == case_kind::overlap     ? command_kind::overlap
                    : c.kind == case_kind::straggler ? command_kind::straggler
                                                     : command_kind::run;
    request.shape.straggler_rank = c.kind == case_kind::straggler ? c.straggler_rank : -1;
    request.shape.delay_ns = static_cast<std::uint64_t>(c.delay_us) * 1000;

    spec.skip_reason = c.skip_reason;
    if (spec.skip_reason.empty() && mode_ == launch_mode::mpi && request.profile.p2p_disabled) {
      spec.skip_reason = "NCCL reads NCCL_P2P_DISABLE when a process starts; under MPI run a second job with "
                         "NCCL_P2P_DISABLE=1 exported to compare";
    }
    spec.body = [self = shared_from_this(), request, planned = c](benchmark::State& state) {
      const repetition_result r = self->driver().run(request);
      switch (planned.kind) {
        case case_kind::collective: report_collective(state, planned, r); break;
        case case_kind::overlap: report_overlap(state, r); break;
        case case_kind::straggler: report_straggler(state, planned, r); break;
      }
    };
    return spec;
  }

  static void report_collective(benchmark::State& state, const planned_case& c, const repetition_result& r) {
    for (auto _ : state) state.SetIterationTime(r.time_us * 1e-6);
    state.counters["time"] = r.time_us;
    state.counters["algbw"] = algbw_gbps(c.bytes, r.time_us * 1e-6);
    // One rank moves nothing over a bus (factor 0): no busbw rather than a zero nobody measured.
    if (c.ranks > 1) state.counters["busbw"] = busbw_gbps(c.op, c.ranks, c.bytes, r.time_us * 1e-6);
    state.counters["wrong_values"] = static_cast<double>(r.wrong);
  }

  static void report_overlap(benchmark::State& state, const repetition_result& r) {
    const double comm = r.overlap_us[0];
    const double compute = r.overlap_us[1];
    const double both = r.overlap_us[2];
    for (auto _ : state) state.SetIterationTime(both * 1e-6);
    state.counters["comm_time"] = comm;
    state.counters["compute_time"] = compute;
    state.counters["overlapped_time"] = both;
    state.counters["comm_slowdown"] = r.overlap_us[3] / comm;
    state.counters["compute_slowdown"] = r.overlap_us[4] / compute;
    state.counters["comm_hidden"] = (comm + compute - both) / comm;
    state.counters["wrong_values"] = static_cast<double>(r.wrong);
  }

  // One rank's row: its own time (the Google Benchmark time too), the late rank's measured delay,
  // and the spread of the time inside the collective over all ranks of this repetition.
  static void report_straggler(benchmark::State& state, const planned_case& c, const repetition_result& r) {
    const straggler_figures f = straggler_row(r.rank_times_us, c.straggler_rank, c.rank);
    for (auto _ : state) state.SetIterationTime(f.rank_time_us * 1e-6);
    state.counters["rank_time"] = f.rank_time_us;
    state.counters["time_in_collective"] = f.time_in_collective_us;
    state.counters["straggler_delay"] = f.delay_us;
    state.counters["slowest_fastest"] = f.slowest_fastest;
    state.counters["wrong_values"] = static_cast<double>(r.wrong);
  }

  launch_mode mode_ = launch_mode::local;
  std::chrono::milliseconds watchdog_{60000};
  std::vector<int> worker_devices_;
  std::vector<std::string> worker_arguments_;  // the driver's flags the workers honour
  int own_device_ = 0;
#if defined(HDB_WITH_MPI)
  std::unique_ptr<mpi_world> mpi_;
  std::unique_ptr<rank_executor> own_;
#endif
  std::unique_ptr<collective_driver> driver_;
};

void check_choice(const std::string& flag, const std::string& value, std::initializer_list<const char*> choices) {
  for (const char* c : choices) {
    if (value == c) return;
  }
  std::string list;
  for (const char* c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  throw usage_error("bad value for --" + flag + ": '" + value + "' (one of " + list + ")");
}

std::vector<flag_spec> flags() {
  return {
      {"sizes", "8:4G:x2", "8:1G:x8",
       "message sizes S (nccl-tests' definition); the all-reduce float out-of-place sweep gets every size, every "
       "variation every fourth and the largest",
       flag_checks::size_list},
      {"ranks", "all", "",
       "rank counts n (one process per GPU): a list like 1,2,4, or all = 1,2,4,... up to the GPUs (n=2 always listed)",
       [](const std::string& flag, const std::string& value) {
         if (value != "all") flag_checks::positive_int_list(flag, value);
       }},
      {"collectives", "all_reduce,reduce_scatter,all_gather", "", "collectives to measure",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_collectives(flag, value)); }},
      {"dtypes", "float,bfloat16,half", "", "element types",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_types(flag, value)); }},
      {"placements", "out_of_place,in_place", "", "buffer placements",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_placements(flag, value)); }},
      {"interconnect", "default,p2p_disabled", "",
       "default transports, and all-reduce with NCCL_P2P_DISABLE=1 in fresh workers (traffic through host memory)",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_interconnects(flag, value)); }},
      {"overlap-size", "256M", "64M",
       "all-reduce size of the communication/compute overlap case (largest n); 0 = no overlap case",
       [](const std::string& flag, const std::string& value) {
         static_cast<void>(parse_overlap_size(flag, value));
       }},
      {"straggler-delays", "0,10,100,1000", "0,1000",
       "the straggler case (all-reduce, largest n): how many us late the last rank enters every collective, "
       "by a delay kernel on its stream; one row per rank and delay; none = no straggler case",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_straggler_delays(flag, value)); }},
      {"straggler-size", "64M", "",
       "all-reduce size of the straggler case: NCCL's own time (~200 us on two H200s) well above 10 us, the "
       "1000 us delay still plain",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_straggler_size(flag, value)); }},
      {"launch", "auto", "",
       "how each rank issues the timed batch: graph = captured once per case into a CUDA graph and launched with "
       "one call (nccl-tests -G; small-message times free of host launch cost), stream = one host call per "
       "collective (the rate a host loop sustains), auto = graph below --graph-below, stream from there (under "
       "capture NCCL's large one-rank copy runs 35 % slower); the overlap and straggler cases are always "
       "stream-launched",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_launch(flag, value)); }},
      {"graph-below", "1M", "", "with --launch=auto: messages smaller than this are graph-launched",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_graph_below(flag, value)); }},
      {"watchdog-s", "60", "",
       "seconds a rank may take to answer one command before the case fails and the workers are restarted",
       [](const std::string& flag, const std::string& value) { static_cast<void>(parse_seconds(flag, value)); }},
      {"launcher", "auto", "",
       "auto (MPI when started by mpirun/srun and built with MPI, else local), local (one process per GPU, "
       "started here) or mpi",
       [](const std::string& flag, const std::string& value) { check_choice(flag, value, {"auto", "local", "mpi"}); }},
      {worker_flag, "", "", "internal: marks a worker process started by the driver (FD,RANK,WORLD,DEVICE)",
       [](const std::string& flag, const std::string& value) {
         if (!value.empty()) static_cast<void>(parse_worker_identity(flag, value));
       }},
  };
}

}  // namespace

family_spec family() {
  auto state = std::make_shared<session>();
  family_spec spec;
  spec.name = "allreduce";
  spec.flags = flags();
  spec.before_cuda = [state](const run_options& options, int argc, char** argv) {
    return state->before_cuda(options, argc, argv);
  };
  spec.register_cases = [state](const run_options& options, family_env& env, case_registry& registry) {
    state->register_cases(options, env, registry);
  };
  return spec;
}

}  // namespace hdb::allreduce
