// hdbench-copy: host<->device and device<->device copies.
//
// Timed: device time of copies from CUDA events. Copies that can be queued (async copies of
// pinned, write-combined or registered memory, device-to-device copies, SM-kernel copies) run
// as a batch behind the spin gate, so enqueue cost is never timed. Copies that block the host
// (pageable memory, plain cudaMemcpy) cannot be queued: each call is bracketed by its own event
// pair, which then includes the host-side staging the call performs. Host-observed time (call
// to completion, what a user's loop pays) is timed separately with the host clock.
// Excluded: allocation, pinning, pattern fill and verification (all outside the timed region).
// Bytes: bandwidth = bytes of one copy / time of one copy, GB = 1e9 B; bidirectional counts
// both directions; device-to-device counts each byte once (read + write traffic is 2x).
//
// host_memcpy is not a GPU operation: the CPU's own memcpy between two pageable buffers of each
// size the pageable copies move, on each thread count of --memcpy-threads (1 and 8; each thread a
// slice of whole pages), timed with the host's steady clock around a batch of copies, on the CPUs
// the pageable copies of that GPU run on. It is there to hold the pageable copies, which the driver stages
// through a pinned buffer with the CPU, against what the CPU copies alone: no GPU, event or
// driver call is in it. Excluded: allocation, the pattern fill, the first copy (which faults the
// destination's pages in and is verified against the pattern) and the threads' start.
#include "copy.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/family.hpp"
#include "hdb/util/units.hpp"
#include "hdb/host_parallel.hpp"
#include "hdb/host_pattern.hpp"
#include "hdb/kernels.hpp"
#include "hdb/measure.hpp"
#include "hdb/sizes.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace hdb::copy {

std::string_view to_string(direction d) {
  switch (d) {
    case direction::h2d: return "h2d";
    case direction::d2h: return "d2h";
    case direction::d2d: return "d2d";
    case direction::bidir: return "bidir";
  }
  return "?";
}

std::string_view to_string(copy_api api) {
  switch (api) {
    case copy_api::async: return "async";
    case copy_api::sync: return "sync";
    case copy_api::kernel: return "kernel";
  }
  return "?";
}

std::vector<copy_path> bandwidth_paths() {
  std::vector<copy_path> paths;
  for (direction dir : {direction::h2d, direction::d2h}) {
    for (host_kind host : {host_kind::pageable, host_kind::pinned, host_kind::write_combined, host_kind::registered}) {
      for (copy_api api : {copy_api::async, copy_api::sync}) paths.push_back({dir, host, api});
    }
    paths.push_back({dir, host_kind::mapped, copy_api::kernel});  // zero-copy: SMs touch host memory in place
  }
  // Both directions at once on two streams; pageable copies block the host, so they cannot overlap.
  for (host_kind host : {host_kind::pinned, host_kind::write_combined, host_kind::registered}) {
    paths.push_back({direction::bidir, host, copy_api::async});
  }
  paths.push_back({direction::d2d, host_kind::pinned, copy_api::async});   // copy engine
  paths.push_back({direction::d2d, host_kind::pinned, copy_api::kernel});  // SM loads/stores
  return paths;
}

std::vector<copy_path> latency_paths() {
  std::vector<copy_path> paths;
  for (direction dir : {direction::h2d, direction::d2h}) {
    for (host_kind host : {host_kind::pinned, host_kind::pageable}) paths.push_back({dir, host, copy_api::async});
  }
  return paths;
}

namespace {
std::variant<device_buffer, host_buffer> allocate_endpoint(bool on_device, host_kind kind, std::size_t bytes, int device) {
  if (on_device) return device_buffer(device, bytes);
  return host_buffer(kind, bytes);
}
}  // namespace

endpoint::endpoint(bool on_device, host_kind kind, std::size_t bytes, int device)
    : memory_(allocate_endpoint(on_device, kind, bytes, device)) {}

void* endpoint::data() const {
  return std::visit([](const auto& m) { return m.data(); }, memory_);
}

std::size_t endpoint::size() const {
  return std::visit([](const auto& m) { return m.size(); }, memory_);
}

void* endpoint::device_view() const {
  if (const auto* d = std::get_if<device_buffer>(&memory_)) return d->data();
  const auto& h = std::get<host_buffer>(memory_);
  return device_accessible(h.kind()) ? h.device_ptr() : nullptr;
}

void endpoint::fill(std::uint32_t seed, cudaStream_t s) const {
  if (void* view = device_view()) {
    kernels::fill_pattern(view, size(), seed, s);
    HDB_CUDA_CALL(cudaStreamSynchronize(s));
  } else {
    fill_pattern_host(data(), size(), seed);
  }
}

void endpoint::clear(cudaStream_t s) const {
  if (std::holds_alternative<device_buffer>(memory_)) {
    HDB_CUDA_CALL(cudaMemsetAsync(data(), 0, size(), s));
    HDB_CUDA_CALL(cudaStreamSynchronize(s));
  } else {
    std::memset(data(), 0, size());
  }
}

kernels::pattern_mismatch endpoint::verify(std::uint32_t seed, cudaStream_t s) const {
  if (void* view = device_view()) return kernels::verify_pattern(view, size(), seed, s);
  return verify_pattern_host(data(), size(), seed);
}

namespace {
std::uint32_t seed_for(std::size_t transfer_index) { return 0x5EED0 + static_cast<std::uint32_t>(transfer_index); }
}  // namespace

copy_fixture::copy_fixture(const copy_path& path, std::size_t bytes, const std::vector<const device_info*>& devices)
    : path_(path), bytes_(bytes) {
  for (const device_info* device : devices) {
    const int d = device->index;
    const auto add = [&](bool src_on_device, bool dst_on_device) {
      transfers_.push_back(
          {endpoint(src_on_device, path.host, bytes, d), endpoint(dst_on_device, path.host, bytes, d), stream(d)});
      sm_counts_.push_back(device->sm_count);
    };
    switch (path.dir) {
      case direction::h2d: add(false, true); break;
      case direction::d2h: add(true, false); break;
      case direction::d2d: add(true, true); break;
      case direction::bidir: add(false, true); add(true, false); break;
    }
  }
  for (const transfer& t : transfers_) streams_.push_back(path.api == copy_api::sync ? cudaStreamLegacy : t.on.get());
  verify_once();
}

void copy_fixture::issue() const {
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    const transfer& t = transfers_[i];
    switch (path_.api) {
      case copy_api::async:
        HDB_CUDA_CALL(cudaMemcpyAsync(t.dst.data(), t.src.data(), bytes_, cudaMemcpyDefault, t.on.get()));
        break;
      case copy_api::sync:
        HDB_CUDA_CALL(cudaMemcpy(t.dst.data(), t.src.data(), bytes_, cudaMemcpyDefault));
        break;
      case copy_api::kernel:
        // A few blocks per SM keep enough loads in flight to saturate HBM or the PCIe link.
        kernels::sm_copy(t.dst.device_view(), t.src.device_view(), bytes_, sm_counts_[i] * 8, t.on.get());
        break;
    }
  }
}

void copy_fixture::synchronize() const {
  for (cudaStream_t s : streams_) HDB_CUDA_CALL(cudaStreamSynchronize(s));
}

bool copy_fixture::queueable() const {
  return path_.api != copy_api::sync && (path_.dir == direction::d2d || device_accessible(path_.host));
}

void copy_fixture::verify_once() const {
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    const device_scope on(transfers_[i].on.device());
    transfers_[i].src.fill(seed_for(i), transfers_[i].on.get());
    transfers_[i].dst.clear(transfers_[i].on.get());
  }
  issue();
  synchronize();
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    const device_scope on(transfers_[i].on.device());
    const auto bad = transfers_[i].dst.verify(seed_for(i), transfers_[i].on.get());
    if (bad.count != 0) {
      throw std::runtime_error("verification failed: " + std::to_string(bad.count) + " of " + std::to_string(bytes_) +
                               " bytes differ from the pattern after one copy (first at byte " +
                               std::to_string(bad.first_index) + ")");
    }
  }
}

namespace {

using copy_cache = fixture_cache<copy_fixture>;

struct counter_names {
  const char* device_time;  // per copy, device clock
  const char* host_time;    // per copy, call to completion
  bool bandwidth;
};

void measure_copies(benchmark::State& state, const copy_fixture& fx, const copy_path& path, std::size_t bytes,
                    const counter_names& names, spin_gate& gate) {
  const timed_operation op{fx.streams(), fx.queueable(),
                           [&fx](std::size_t n) {
                             for (std::size_t i = 0; i < n; ++i) fx.issue();
                           },
                           [&fx] { fx.synchronize(); }};
  const loop_result r = run_timed_loop(state, op, ops_per_batch(bytes), gate);
  // A bidirectional "copy" is a pair moving 2 x bytes: its times get their own names so the
  // per-copy alpha-beta fit (bytes moved = size_bytes) never mixes the two.
  const bool pair = path.dir == direction::bidir;
  const bool several_gpus = !pair && fx.transfer_count() > 1;
  state.counters[pair ? "time_per_pair" : several_gpus ? "time_per_round" : names.device_time] = r.device_us_per_op;
  state.counters[pair ? "host_time_per_pair" : several_gpus ? "host_time_per_round" : names.host_time] = r.host_median_us;
  if (!names.bandwidth) return;
  const auto gbps = [&](double us) { return gb_per_s(static_cast<double>(bytes), us); };
  state.counters["bandwidth"] = gbps(r.device_us_per_op) * static_cast<double>(fx.transfer_count());
  if (pair) {
    state.counters["bandwidth_h2d"] = gbps(r.stream_us_per_op[0]);
    state.counters["bandwidth_d2h"] = gbps(r.stream_us_per_op[1]);
  }
  if (several_gpus) {
    state.counters["bandwidth_slowest"] = gbps(*std::max_element(r.stream_us_per_op.begin(), r.stream_us_per_op.end()));
  }
}

std::size_t device_bytes_needed(const copy_path& path, std::size_t bytes) {
  switch (path.dir) {
    case direction::d2d: return 2 * bytes;
    case direction::bidir: return 2 * bytes;
    default: return bytes;
  }
}

label_list path_params(const copy_path& path, std::size_t bytes) {
  return {{"direction", std::string(to_string(path.dir))},
          {"host_kind", path.dir == direction::d2d ? "device" : std::string(to_string(path.host))},
          {"api", std::string(to_string(path.api))},
          {"size_bytes", std::to_string(bytes)},
          {"streams", std::to_string(path.dir == direction::bidir ? 2 : 1)}};
}

std::vector<const device_info*> records_of(const family_env& env, const std::vector<int>& devices) {
  std::vector<const device_info*> records;
  for (int d : devices) records.push_back(&env.device(d));
  return records;
}

// The link each bandwidth's bytes cross (schema.json's traffic classes): one direction of PCIe,
// both at once, or HBM read and written for a device-to-device copy; on several GPUs at once the
// total against every GPU's link and the slowest GPU against one.
std::map<std::string, std::string> traffic_of(const copy_path& path, std::size_t gpus) {
  if (path.dir == direction::d2d) return {{"bandwidth", "hbm_read_write"}};
  if (path.dir == direction::bidir) {
    return {{"bandwidth", "pcie_both_directions"}, {"bandwidth_h2d", "pcie_per_direction"}, {"bandwidth_d2h", "pcie_per_direction"}};
  }
  if (gpus > 1) return {{"bandwidth", "pcie_per_direction"}, {"bandwidth_slowest", "pcie_per_direction_per_gpu"}};
  return {{"bandwidth", "pcie_per_direction"}};
}

case_spec copy_case(const char* case_kind, const copy_path& path, std::size_t bytes, const counter_names& names,
                    std::vector<int> devices, family_env& env, const std::shared_ptr<copy_cache>& cache) {
  case_spec spec = make_case("copy", case_kind, path_params(path, bytes), std::move(devices));
  if (names.bandwidth) spec.traffic = traffic_of(path, spec.devices.size());
  spec.iterations = batches_per_repetition(bytes);
  spec.body = [path, bytes, names, &env, cache, key = spec.name, devices = spec.devices](benchmark::State& state) {
    const auto records = records_of(env, devices);
    for (const device_info* d : records) require_device_memory(device_bytes_needed(path, bytes), *d);
    const copy_fixture& fx = cache->get(key, path, bytes, records);
    measure_copies(state, fx, path, bytes, names, *env.gate);
  };
  return spec;
}

void register_copy_cases(const char* case_kind, const std::vector<copy_path>& paths, const std::vector<std::size_t>& sizes,
                         const counter_names& names, family_env& env, const std::shared_ptr<copy_cache>& cache,
                         case_registry& registry) {
  for (const device_info& device : env.devices) {
    for (const copy_path& path : paths) {
      for (std::size_t bytes : sizes) {
        registry.add(copy_case(case_kind, path, bytes, names, {device.index}, env, cache));
      }
    }
  }
}

// Every selected GPU copying to or from pinned host memory at once: GPUs behind one root complex
// or CPU socket share its bandwidth, which no single-GPU case can show.
void register_all_gpu_cases(const std::vector<std::size_t>& sizes, family_env& env, const std::shared_ptr<copy_cache>& cache,
                            case_registry& registry) {
  if (env.devices.size() < 2) return;
  for (direction dir : {direction::h2d, direction::d2h}) {
    const copy_path path{dir, host_kind::pinned, copy_api::async};
    registry.add(copy_case("bandwidth_all_gpus", path, sizes.back(), {"time_per_copy", "host_time_per_copy", true},
                           device_indices(env), env, cache));
  }
}

// --- the cost of getting memory -------------------------------------------------------------

enum class alloc_api { malloc_host, host_register, device_malloc, pool_malloc };

struct alloc_timing {
  double acquire_us;
  double release_us;
};

cudaMemPool_t create_caching_pool(int device) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  HDB_CUDA_CALL(cudaMemPoolCreate(&pool, &props));
  // Never hand freed memory back to the driver: a freed block is reused by the next request,
  // which is what a framework's caching allocator does.
  std::uint64_t keep_everything = UINT64_MAX;
  HDB_CUDA_CALL(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  return pool;
}

// std::free as a deleter type (decltype(&std::free) would carry its attributes into a template
// argument, which g++ 13 warns about).
struct free_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

// What the stream-ordered allocator needs: its own pool and a stream. Empty for the others.
struct allocator_context {
  explicit allocator_context(alloc_api api) {
    if (api != alloc_api::pool_malloc) return;
    int device = 0;
    HDB_CUDA_CALL(cudaGetDevice(&device));
    pool = unique_handle<cudaMemPool_t, cudaMemPoolDestroy>(create_caching_pool(device));
    on = std::make_unique<stream>(device);
  }
  unique_handle<cudaMemPool_t, cudaMemPoolDestroy> pool;
  std::unique_ptr<stream> on;
};

alloc_timing time_allocation(alloc_api api, std::size_t bytes, const allocator_context& context) {
  void* p = nullptr;
  alloc_timing t{};
  switch (api) {
    case alloc_api::malloc_host:
      t.acquire_us = host_time_us([&] { HDB_CUDA_CALL(cudaMallocHost(&p, bytes)); });
      t.release_us = host_time_us([&] { HDB_CUDA_CALL(cudaFreeHost(p)); });
      break;
    case alloc_api::device_malloc:
      t.acquire_us = host_time_us([&] { HDB_CUDA_CALL(cudaMalloc(&p, bytes)); });
      t.release_us = host_time_us([&] { HDB_CUDA_CALL(cudaFree(p)); });
      break;
    case alloc_api::pool_malloc:
      // Host time of the calls; the memory is usable in stream order as soon as the call returns.
      t.acquire_us = host_time_us([&] { HDB_CUDA_CALL(cudaMallocFromPoolAsync(&p, bytes, context.pool.get(), context.on->get())); });
      t.release_us = host_time_us([&] { HDB_CUDA_CALL(cudaFreeAsync(p, context.on->get())); });
      context.on->synchronize();
      break;
    case alloc_api::host_register: {
      // The pages exist before pinning (touched outside the timer): this times the pinning alone.
      auto pages = std::unique_ptr<void, free_deleter>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096));
      if (!pages) throw std::bad_alloc();
      std::memset(pages.get(), 1, bytes);
      t.acquire_us = host_time_us([&] { HDB_CUDA_CALL(cudaHostRegister(pages.get(), bytes, cudaHostRegisterDefault)); });
      t.release_us = host_time_us([&] { HDB_CUDA_CALL(cudaHostUnregister(pages.get())); });
      break;
    }
  }
  return t;
}

void register_alloc_cases(const std::vector<std::size_t>& sizes, family_env& env, case_registry& registry) {
  struct row {
    alloc_api api;
    const char* name;
    const char* host;
  };
  for (const device_info& device : env.devices) {
    for (const row r : {row{alloc_api::malloc_host, "cudaMallocHost", "pinned"},
                        row{alloc_api::host_register, "cudaHostRegister", "registered"},
                        row{alloc_api::device_malloc, "cudaMalloc", "device"},
                        row{alloc_api::pool_malloc, "cudaMallocAsync", "device"}}) {
      for (std::size_t bytes : sizes) {
        case_spec spec = make_case("copy", "alloc", {{"host_kind", r.host}, {"api", r.name}, {"size_bytes", std::to_string(bytes)}},
                                   {device.index});
        spec.body = [api = r.api, bytes, &device](benchmark::State& state) {
          if (api == alloc_api::device_malloc || api == alloc_api::pool_malloc) require_device_memory(bytes, device);
          const allocator_context context(api);
          static_cast<void>(time_allocation(api, bytes, context));  // warm-up: first-use costs of the driver (and fills the pool)
          alloc_timing sum{};
          for (auto _ : state) {
            const alloc_timing t = time_allocation(api, bytes, context);
            state.SetIterationTime(t.acquire_us / 1e6);
            sum.acquire_us += t.acquire_us;
            sum.release_us += t.release_us;
          }
          const double n = static_cast<double>(state.iterations());
          state.counters["time_per_call"] = sum.acquire_us / n;
          state.counters["time_per_mib"] = sum.acquire_us / n / (static_cast<double>(bytes) / (1 << 20));
          state.counters["release_time_per_call"] = sum.release_us / n;
        };
        registry.add(std::move(spec));
      }
    }
  }
}

// --- the CPU's own copy, beside the pageable copies -------------------------------------------

// Two pageable buffers and the threads that copy one into the other, slice by slice (whole pages,
// so no two threads write one page). The constructor fills the source with the pattern, zeroes
// the destination, copies once and verifies it: a wrong byte throws before any timing.
class memcpy_fixture {
 public:
  memcpy_fixture(std::size_t bytes, int threads)
      : src_(host_kind::pageable, bytes),
        dst_(host_kind::pageable, bytes),
        crew_(threads),
        slices_(split_bytes(bytes, threads, page_bytes)) {
    fill_pattern_host(src_.data(), bytes, seed);
    std::memset(dst_.data(), 0, bytes);
    copy();
    const auto bad = verify_pattern_host(dst_.data(), bytes, seed);
    if (bad.count != 0) {
      throw std::runtime_error("verification failed: " + std::to_string(bad.count) + " of " + std::to_string(bytes) +
                               " bytes differ from the pattern after one host memcpy (first at byte " +
                               std::to_string(bad.first_index) + ")");
    }
  }

  void copy() {
    auto* to = static_cast<std::uint8_t*>(dst_.data());
    const auto* from = static_cast<const std::uint8_t*>(src_.data());
    crew_.run([&](int i) {
      const byte_range& r = slices_[static_cast<std::size_t>(i)];
      std::memcpy(to + r.begin, from + r.begin, r.size());
    });
  }

 private:
  static constexpr std::size_t page_bytes = 4096;
  static constexpr std::uint32_t seed = 0x5EEDC0;
  host_buffer src_;
  host_buffer dst_;
  thread_crew crew_;
  std::vector<byte_range> slices_;
};

// Host time of `n` copies, µs (the steady clock: what a wall clock on the host measures).
double time_memcpy_batch(memcpy_fixture& fx, std::size_t n) {
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) fx.copy();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// Each GPU's pageable sizes (the bandwidth sweep) on each thread count; the case names its GPU
// because it runs where that GPU's pageable copies run (the shared main places the thread).
void register_memcpy_cases(const std::vector<std::size_t>& sizes, const std::vector<int>& threads, family_env& env,
                           case_registry& registry) {
  auto cache = std::make_shared<fixture_cache<memcpy_fixture>>();
  for (const device_info& device : env.devices) {
    for (int t : threads) {
      for (std::size_t bytes : sizes) {
        case_spec spec = make_case("copy", "host_memcpy",
                                   {{"host_kind", "pageable"}, {"size_bytes", std::to_string(bytes)}, {"threads", std::to_string(t)}},
                                   {device.index});
        spec.iterations = batches_per_repetition(bytes);
        spec.body = [bytes, t, cache, key = spec.name](benchmark::State& state) {
          memcpy_fixture& fx = cache->get(key, bytes, t);
          const std::size_t per_batch = ops_per_batch(bytes);  // as many copies as a pageable batch moves
          static_cast<void>(time_memcpy_batch(fx, std::min<std::size_t>(per_batch, 8)));  // warm-up
          double total_us = 0;
          for (auto _ : state) {
            const double us = time_memcpy_batch(fx, per_batch);
            state.SetIterationTime(us / 1e6);
            total_us += us;
          }
          const double per_copy_us = total_us / static_cast<double>(state.iterations() * static_cast<std::int64_t>(per_batch));
          state.counters["host_copy_time"] = per_copy_us;
          state.counters["host_bandwidth"] = gb_per_s(static_cast<double>(bytes), per_copy_us);
        };
        registry.add(std::move(spec));
      }
    }
  }
}

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  const auto sizes = parse_size_list(options.value("sizes"));
  const auto latency_sizes = parse_size_list(options.value("latency-sizes"));
  const auto alloc_sizes = parse_size_list(options.value("alloc-sizes"));
  auto cache = std::make_shared<copy_cache>();
  register_copy_cases("bandwidth", bandwidth_paths(), sizes, {"time_per_copy", "host_time_per_copy", true}, env, cache,
                      registry);
  register_all_gpu_cases(sizes, env, cache, registry);
  register_copy_cases("latency", latency_paths(), latency_sizes, {"latency", "host_latency", false}, env, cache, registry);
  register_alloc_cases(alloc_sizes, env, registry);
  register_memcpy_cases(sizes, parse_positive_int_list("memcpy-threads", options.value("memcpy-threads")), env, registry);
}

}  // namespace

family_spec family() {
  return {
      "copy",
      {{"sizes", "1K:1G:x4", "4K,1M,64M", "bandwidth sweep sizes: FROM:TO:xF and/or a comma list (K,M,G binary)",
        flag_checks::size_list},
       {"latency-sizes", "1,64,4K", "1,4K", "small-copy latency sizes", flag_checks::size_list},
       {"alloc-sizes", "1M,16M,256M,1G", "1M,64M", "sizes for the allocation/pinning cost cases", flag_checks::size_list},
       {"memcpy-threads", "1,8", "1,8", "thread counts of the host memcpy beside the pageable copies (the bandwidth sweep's sizes)",
        flag_checks::positive_int_list}},
      register_cases,
  };
}

}  // namespace hdb::copy
