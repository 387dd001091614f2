// A rank's side of every case.
//
// Timed (run), on this rank's communication stream, without a host wait in between:
// - launch=graph (as nccl-tests -G; by default below --graph-below): the `iterations`
//   collectives are captured once per case into a CUDA graph (on the first run, outside the
//   events). Each run launches the graph
//   once as the warm-up, records the start event, launches it again and records the stop event.
//   The warm-up keeps the stream busy while the host records and launches, so the events hold
//   device work only: one host call per batch instead of one per collective, and the host's
//   launch rate (which wanders between machines) no longer sets small-message times.
// - launch=stream: `warmup` collectives, the start event, `iterations` collectives and the stop
//   event, one host call each. At small sizes this is the rate a loop of host-launched
//   collectives sustains, host enqueue included (nccl-tests without -G).
// Either way the warm-up ends at nearly the same moment on every rank (a collective cannot finish
// before its peers join), so the start events line up across ranks without a barrier. Not behind
// a spin gate: NCCL's enqueue can wait for room in its work queue, which a held stream never
// frees. Reported: this rank's (stop - start) / iterations; the driver keeps the slowest rank.
// Straggler (all-reduce, stream-launched, every rank): `warmup` collectives line the ranks up, then
// the start event, then `iterations` times: on the late rank only, a delay kernel that spins on
// %globaltimer for delay_ns (between two events of its own), then the collective; the stop event.
// The late rank's start event is recorded before its first delay, when it "arrived", so each
// rank's (stop - start) / iterations is the time the job spent per collective on that rank, the
// wait for the late rank included; the late rank also reports its delay kernel's own time, so the
// report can subtract it. The wait is device work in stream order: the host never sleeps while a
// timed region is open, and the host enqueues the whole batch long before the device gets there.
// Excluded: communicator creation, allocation, the input fill, the verification collective (same
// calls, arguments and buffers as the timed ones, launched on the stream) and the graph capture.
// Bytes: the message size of collective_traits (nccl-tests' definition), not what each link carries.
//
// While waiting, the rank polls the event and ncclCommGetAsyncError; an asynchronous error or a
// wait past the command's limit aborts the communicator (ncclCommAbort) and fails the case, so a
// dead peer never leaves this rank hanging.
#include "nccl_executor.hpp"

#include "allreduce_kernels.hpp"
#include "collective.hpp"
#include "value_pattern.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/util/units.hpp"
#include "hdb/sizes.hpp"
#include "hdb/stream.hpp"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace hdb::allreduce {
namespace {

static_assert(sizeof(ncclUniqueId) == unique_id_bytes);

using clock = std::chrono::steady_clock;

class nccl_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class case_skipped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void nccl_check(ncclResult_t result, const char* call, ncclComm_t comm = nullptr) {
  if (result == ncclSuccess) return;
  std::string text = std::string(call) + " failed: " + ncclGetErrorString(result);
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0') text += " (" + std::string(last) + ")";
  throw nccl_failure(text);
}

ncclDataType_t nccl_type(data_type type) {
  switch (type) {
    case data_type::float32: return ncclFloat32;
    case data_type::bfloat16: return ncclBfloat16;
    case data_type::float16: return ncclFloat16;
  }
  return ncclFloat32;
}

// Owns a communicator; a communicator that saw an error is aborted, never destroyed (destroy
// would wait for the operations that will never finish).
class communicator {
 public:
  communicator(int ranks, const unique_id& id, int rank) {
    ncclUniqueId nccl_id;
    std::memcpy(nccl_id.internal, id.data(), id.size());
    nccl_check(ncclCommInitRank(&comm_, ranks, nccl_id, rank), "ncclCommInitRank");
  }
  ~communicator() {
    if (comm_ == nullptr) return;
    if (healthy_) {
      static_cast<void>(ncclCommDestroy(comm_));
    } else {
      static_cast<void>(ncclCommAbort(comm_));
    }
  }
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  [[nodiscard]] ncclComm_t get() const noexcept { return comm_; }
  void mark_broken() noexcept { healthy_ = false; }

 private:
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
};

// The current case on this rank: its buffers and where input and output live in them.
struct case_state {
  command shape;
  std::uint64_t send_count = 0;
  std::uint64_t recv_count = 0;
  std::size_t element = 4;
  std::optional<device_buffer> first;   // the send buffer, or the only buffer in place
  std::optional<device_buffer> second;  // the receive buffer (out of place only)
  // Overlap case only: the compute kernel's output and its calibrated length.
  std::optional<device_buffer> sink;
  int compute_blocks = 0;
  std::uint32_t compute_rounds = 0;
  // Straggler case, late rank only: a start and a stop event around each delay kernel of a batch.
  std::vector<event> delay_marks;
  // launch=graph: the captured batch. Last member, so it is destroyed before the buffers it uses.
  std::optional<graph_exec_handle> timed_graph;

  [[nodiscard]] char* base() const { return static_cast<char*>(first->data()); }
  // NCCL's in-place conventions: reduce-scatter writes block r of its input, all-gather reads
  // block r of its output.
  [[nodiscard]] void* input(int rank) const {
    if (second || shape.op != collective::all_gather) return base();
    return base() + static_cast<std::size_t>(rank) * send_count * element;
  }
  [[nodiscard]] void* output(int rank) const {
    if (second) return second->data();
    if (shape.op != collective::reduce_scatter) return base();
    return base() + static_cast<std::size_t>(rank) * recv_count * element;
  }
};

class nccl_executor final : public rank_executor {
 public:
  nccl_executor(int rank, int device)
      : rank_(rank), device_(device), comm_stream_(device), compute_stream_(device), start_(device), stop_(device),
        compute_start_(device), compute_stop_(device) {
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  }

  rank_reply execute(const command& cmd) override {
    rank_reply reply;
    reply.rank = rank_;
    reply.device = device_;
    try {
      HDB_CUDA_CALL(cudaSetDevice(device_));
      dispatch(cmd, reply);
    } catch (const case_skipped& e) {
      reply.status = reply_status::skip;
      set_reason(reply, e.what());
    } catch (const cuda_error& e) {
      const bool memory = e.code() == cudaErrorMemoryAllocation;
      reply.status = memory && cmd.kind == command_kind::prepare ? reply_status::skip : reply_status::fail;
      set_reason(reply, (memory ? "not enough device memory: " : "") + std::string(e.what()));
      forget_broken(cmd);
    } catch (const std::exception& e) {
      reply.status = reply_status::fail;
      set_reason(reply, e.what());
      forget_broken(cmd);
    }
    return reply;
  }

 private:
  void dispatch(const command& cmd, rank_reply& reply) {
    const bool takes_part = rank_ < cmd.ranks;
    switch (cmd.kind) {
      case command_kind::connect:
        if (!takes_part) break;
        // A graph must never outlive its communicator: NCCL's destroy waits for it forever.
        case_.reset();
        comms_.erase(cmd.ranks);
        comms_.emplace(cmd.ranks, std::make_unique<communicator>(cmd.ranks, cmd.id, rank_));
        reply.token = fingerprint(cmd.id);
        return;
      case command_kind::prepare:
        case_.reset();
        if (!takes_part) break;
        prepare(cmd);
        return;
      case command_kind::verify:
        if (!takes_part) break;
        verify(cmd, reply);
        return;
      case command_kind::run:
        if (!takes_part) break;
        reply.times_us[0] =
            (cmd.launch == launch_method::graph ? timed_graph_batch(cmd) : timed_batch(cmd)) * 1e3 / cmd.iterations;
        return;
      case command_kind::overlap:
        if (!takes_part) break;
        overlap(cmd, reply);
        return;
      case command_kind::straggler:
        if (!takes_part) break;
        straggler(cmd, reply);
        return;
      case command_kind::release:
        case_.reset();
        return;
      case command_kind::reset:
        case_.reset();
        for (auto& [ranks, comm] : comms_) comm->mark_broken();
        comms_.clear();
        // A rank whose context is gone cannot serve another case: say so, so its group is replaced.
        HDB_CUDA_CALL(cudaDeviceSynchronize());
        return;
      case command_kind::quit:
        case_.reset();
        comms_.clear();
        return;
    }
    reply.status = reply_status::idle;
  }

  // A collective that failed leaves its communicator in an unknown state: abort it now rather
  // than at the driver's reset. Other commands never touch a communicator.
  void forget_broken(const command& cmd) {
    const bool collective_ran =
        cmd.kind == command_kind::verify || cmd.kind == command_kind::run || cmd.kind == command_kind::overlap ||
        cmd.kind == command_kind::straggler;
    if (!collective_ran) return;
    const auto it = comms_.find(cmd.ranks);
    if (it == comms_.end()) return;
    // ncclCommAbort, like ncclCommDestroy, waits until every graph holding the communicator's
    // collectives is destroyed: the graph goes first. The buffers stay until the reset, after the
    // abort has stopped any kernel still using them (freeing them now could wait on such a kernel).
    if (case_) case_->timed_graph.reset();
    it->second->mark_broken();
    comms_.erase(it);
  }

  communicator& comm_for(int ranks) {
    const auto it = comms_.find(ranks);
    if (it == comms_.end()) throw std::logic_error("no communicator of " + std::to_string(ranks) + " ranks");
    return *it->second;
  }

  case_state& current() {
    if (!case_) throw std::logic_error("no case prepared on this rank");
    return *case_;
  }

  void prepare(const command& cmd) {
    const collective_traits& t = traits(cmd.op);
    case_state c;
    c.shape = cmd;
    c.send_count = t.send_count(cmd.count, cmd.ranks);
    c.recv_count = t.recv_count(cmd.count, cmd.ranks);
    c.element = element_bytes(cmd.type);
    const std::size_t send_bytes = c.send_count * c.element;
    const std::size_t recv_bytes = c.recv_count * c.element;
    const std::size_t needed = cmd.in_place != 0 ? std::max(send_bytes, recv_bytes) : send_bytes + recv_bytes;
    std::size_t free = 0;
    std::size_t total = 0;
    HDB_CUDA_CALL(cudaMemGetInfo(&free, &total));
    // Headroom for NCCL's own buffers and the driver's allocations.
    if (needed > free / 10 * 9) {
      throw case_skipped("needs " + format_size(needed) + " of device memory, " + format_size(free) + " free");
    }
    c.first.emplace(device_, cmd.in_place != 0 ? std::max(send_bytes, recv_bytes) : send_bytes);
    if (cmd.in_place == 0) c.second.emplace(device_, recv_bytes);
    case_ = std::move(c);
    fill();
  }

  void fill() {
    const case_state& c = current();
    kernels::fill_input(c.input(rank_), c.shape.type, c.send_count, rank_, pattern_modulus(c.shape.type, c.shape.ranks),
                        comm_stream_.get());
    comm_stream_.synchronize();
  }

  void enqueue(const case_state& c, ncclComm_t comm, cudaStream_t on) const {
    const ncclDataType_t type = nccl_type(c.shape.type);
    switch (c.shape.op) {
      case collective::all_reduce:
        nccl_check(ncclAllReduce(c.input(rank_), c.output(rank_), c.send_count, type, ncclSum, comm, on), "ncclAllReduce", comm);
        break;
      case collective::reduce_scatter:
        nccl_check(ncclReduceScatter(c.input(rank_), c.output(rank_), c.recv_count, type, ncclSum, comm, on),
                   "ncclReduceScatter", comm);
        break;
      case collective::all_gather:
        nccl_check(ncclAllGather(c.input(rank_), c.output(rank_), c.send_count, type, comm, on), "ncclAllGather", comm);
        break;
    }
  }

  // Waits for `done` while watching the communicator; aborts it on an asynchronous error or after
  // the command's limit.
  void wait_for(const event& done, communicator& comm, std::int64_t limit_ms) const {
    const auto deadline = clock::now() + std::chrono::milliseconds(limit_ms);
    while (true) {
      const cudaError_t state = cudaEventQuery(done.get());
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) {
        comm.mark_broken();
        HDB_CUDA_CALL(state);
      }
      ncclResult_t async = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(comm.get(), &async), "ncclCommGetAsyncError", comm.get());
      if (async != ncclSuccess) {
        comm.mark_broken();
        nccl_check(async, "asynchronous NCCL error; communicator aborted:", comm.get());
      }
      if (clock::now() > deadline) {
        comm.mark_broken();
        throw nccl_failure("the collectives did not complete within " + std::to_string(limit_ms) +
                           " ms (a peer is gone or stuck); communicator aborted");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void verify(const command& cmd, rank_reply& reply) {
    case_state& c = current();
    communicator& comm = comm_for(cmd.ranks);
    enqueue(c, comm.get(), comm_stream_.get());
    stop_.record(comm_stream_.get());
    wait_for(stop_, comm, cmd.wait_limit_ms);
    const auto check = kernels::check_output(c.output(rank_), c.shape.type, c.shape.op, rank_, cmd.ranks, c.send_count,
                                             c.recv_count, pattern_modulus(c.shape.type, cmd.ranks), comm_stream_.get());
    reply.wrong = check.wrong;
    reply.first_wrong = check.first_wrong;
    if (c.shape.in_place != 0) fill();  // the timed runs start from the pattern again
  }

  // ms of `iterations` collectives after `warmup` untimed ones, one host call each (launch=stream,
  // and the overlap protocol).
  double timed_batch(const command& cmd) {
    const case_state& c = current();
    communicator& comm = comm_for(cmd.ranks);
    for (int i = 0; i < cmd.warmup; ++i) enqueue(c, comm.get(), comm_stream_.get());
    start_.record(comm_stream_.get());
    for (int i = 0; i < cmd.iterations; ++i) enqueue(c, comm.get(), comm_stream_.get());
    stop_.record(comm_stream_.get());
    wait_for(stop_, comm, cmd.wait_limit_ms);
    return elapsed_ms(start_, stop_);
  }

  // The case's batch as one executable graph, captured on its first run: the same `iterations`
  // calls with the same arguments and buffers as the stream-launched batch. Every rank of the
  // communicator captures at the same command, as NCCL requires (whether a collective is captured
  // must be the same on all its ranks). Thread-local capture: NCCL's own threads may call CUDA
  // meanwhile without invalidating it.
  const graph_exec_handle& timed_graph(case_state& c, communicator& comm, const command& cmd) {
    if (c.timed_graph) return *c.timed_graph;
    const graph_handle graph = capture_graph(comm_stream_.get(), [&] {
      for (int i = 0; i < cmd.iterations; ++i) enqueue(c, comm.get(), comm_stream_.get());
    });
    std::size_t nodes = 0;
    HDB_CUDA_CALL(cudaGraphGetNodes(graph.get(), nullptr, &nodes));
    // NCCL enqueues nothing for a no-op (one rank in place, which the plan leaves out): the events
    // would time their own gap.
    if (nodes == 0) throw std::logic_error("the captured batch holds no device work: nothing to time");
    c.timed_graph.emplace(instantiate(graph));
    return *c.timed_graph;
  }

  // ms of the batch launched as one graph. The warm-up is one launch of the same graph: it lines
  // the ranks up like the warm-up collectives, and it runs for a whole batch (100 collectives at
  // small sizes, ~512 MiB of messages at large ones) while the host records the start event and
  // launches again, so the start event waits behind queued work and the timed region holds no
  // host time.
  double timed_graph_batch(const command& cmd) {
    case_state& c = current();
    communicator& comm = comm_for(cmd.ranks);
    const graph_exec_handle& exec = timed_graph(c, comm, cmd);
    HDB_CUDA_CALL(cudaGraphLaunch(exec.get(), comm_stream_.get()));
    start_.record(comm_stream_.get());
    HDB_CUDA_CALL(cudaGraphLaunch(exec.get(), comm_stream_.get()));
    stop_.record(comm_stream_.get());
    wait_for(stop_, comm, cmd.wait_limit_ms);
    return elapsed_ms(start_, stop_);
  }

  double timed_compute(const case_state& c) {
    compute_start_.record(compute_stream_.get());
    kernels::busy_compute(static_cast<float*>(c.sink->data()), c.compute_blocks, c.compute_rounds, compute_stream_.get());
    compute_stop_.record(compute_stream_.get());
    compute_stop_.synchronize();
    return elapsed_ms(compute_start_, compute_stop_);
  }

  // First call of a case: size the compute kernel so that alone it takes as long as the
  // communication alone (the point where overlap can hide the most).
  void calibrate(const command& cmd, case_state& c) {
    c.compute_blocks = sm_count_ * 32;  // short blocks, several waves: NCCL's blocks get SMs as they retire
    c.sink.emplace(device_, static_cast<std::size_t>(c.compute_blocks) * kernels::busy_threads_per_block * sizeof(float));
    const double comm_ms = timed_batch(cmd);
    c.compute_rounds = 4096;
    static_cast<void>(timed_compute(c));  // first launch: clocks up
    const double probe_ms = timed_compute(c);
    c.compute_rounds = static_cast<std::uint32_t>(std::clamp(4096.0 * comm_ms / std::max(probe_ms, 1e-3), 1.0, 4e9));
  }

  void overlap(const command& cmd, rank_reply& reply) {
    case_state& c = current();
    if (!c.sink) calibrate(cmd, c);
    communicator& comm = comm_for(cmd.ranks);
    reply.times_us[0] = timed_batch(cmd) * 1e3;
    reply.times_us[1] = timed_compute(c) * 1e3;
    // Both at once: warm-up collectives line the ranks up, then the compute kernel and the timed
    // collectives start from the same event on their two streams.
    for (int i = 0; i < cmd.warmup; ++i) enqueue(c, comm.get(), comm_stream_.get());
    start_.record(comm_stream_.get());
    HDB_CUDA_CALL(cudaStreamWaitEvent(compute_stream_.get(), start_.get(), 0));
    kernels::busy_compute(static_cast<float*>(c.sink->data()), c.compute_blocks, c.compute_rounds, compute_stream_.get());
    compute_stop_.record(compute_stream_.get());
    for (int i = 0; i < cmd.iterations; ++i) enqueue(c, comm.get(), comm_stream_.get());
    stop_.record(comm_stream_.get());
    wait_for(stop_, comm, cmd.wait_limit_ms);
    compute_stop_.synchronize();
    const double comm_end = elapsed_ms(start_, stop_) * 1e3;
    const double compute_end = elapsed_ms(start_, compute_stop_) * 1e3;
    reply.times_us[2] = std::max(comm_end, compute_end);
    reply.times_us[3] = comm_end;
    reply.times_us[4] = compute_end;
  }

  // One repetition of the straggler case (the file comment says what the events bracket).
  void straggler(const command& cmd, rank_reply& reply) {
    case_state& c = current();
    communicator& comm = comm_for(cmd.ranks);
    const bool late = rank_ == cmd.straggler_rank;
    const auto marks = static_cast<std::size_t>(2 * cmd.iterations);
    if (late && c.delay_marks.size() != marks) {
      c.delay_marks.clear();
      for (std::size_t i = 0; i < marks; ++i) c.delay_marks.emplace_back(device_);
    }
    for (int i = 0; i < cmd.warmup; ++i) enqueue(c, comm.get(), comm_stream_.get());
    start_.record(comm_stream_.get());
    for (std::size_t i = 0; i < static_cast<std::size_t>(cmd.iterations); ++i) {
      if (late) {
        c.delay_marks[2 * i].record(comm_stream_.get());
        kernels::spin_for(cmd.delay_ns, comm_stream_.get());
        c.delay_marks[2 * i + 1].record(comm_stream_.get());
      }
      enqueue(c, comm.get(), comm_stream_.get());
    }
    stop_.record(comm_stream_.get());
    wait_for(stop_, comm, cmd.wait_limit_ms);
    reply.times_us[0] = elapsed_ms(start_, stop_) * 1e3 / cmd.iterations;
    if (late) {
      double delay_ms = 0;
      for (std::size_t i = 0; i < marks; i += 2) delay_ms += elapsed_ms(c.delay_marks[i], c.delay_marks[i + 1]);
      reply.times_us[1] = delay_ms * 1e3 / cmd.iterations;
    }
  }

  int rank_;
  int device_;
  int sm_count_ = 0;
  stream comm_stream_;
  stream compute_stream_;
  event start_;
  event stop_;
  event compute_start_;
  event compute_stop_;
  std::map<int, std::unique_ptr<communicator>> comms_;  // by rank count
  std::optional<case_state> case_;
};

}  // namespace

std::unique_ptr<rank_executor> make_nccl_executor(int rank, int device) {
  return std::make_unique<nccl_executor>(rank, device);
}

unique_id make_nccl_unique_id() {
  ncclUniqueId nccl_id;
  nccl_check(ncclGetUniqueId(&nccl_id), "ncclGetUniqueId");
  unique_id id;
  std::memcpy(id.data(), nccl_id.internal, id.size());
  return id;
}

std::string nccl_version() {
  int version = 0;
  nccl_check(ncclGetVersion(&version), "ncclGetVersion");
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
}

}  // namespace hdb::allreduce
