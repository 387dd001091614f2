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
#include "copy.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/family.hpp"
#include "hdb/host_pattern.hpp"
#include "hdb/kernels.hpp"
#include "hdb/sizes.hpp"
#include "hdb/stream.hpp"
#include "hdb/timing.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
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
std::variant<device_buffer, host_buffer> allocate_endpoint(bool on_device, host_kind kind, std::size_t bytes) {
  if (on_device) return device_buffer(bytes);
  return host_buffer(kind, bytes);
}
}  // namespace

endpoint::endpoint(bool on_device, host_kind kind, std::size_t bytes)
    : memory_(allocate_endpoint(on_device, kind, bytes)) {}

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

copy_fixture::copy_fixture(const copy_path& path, std::size_t bytes, const family_env& env)
    : path_(path), bytes_(bytes), env_(env) {
  const auto add = [&](bool src_on_device, bool dst_on_device) {
    transfers_.push_back({endpoint(src_on_device, path.host, bytes), endpoint(dst_on_device, path.host, bytes), stream()});
  };
  switch (path.dir) {
    case direction::h2d: add(false, true); break;
    case direction::d2h: add(true, false); break;
    case direction::d2d: add(true, true); break;
    case direction::bidir: add(false, true); add(true, false); break;
  }
  for (const transfer& t : transfers_) streams_.push_back(path.api == copy_api::sync ? cudaStreamLegacy : t.on.get());
  verify_once();
}

void copy_fixture::issue() const {
  for (const transfer& t : transfers_) {
    switch (path_.api) {
      case copy_api::async:
        HDB_CUDA_CALL(cudaMemcpyAsync(t.dst.data(), t.src.data(), bytes_, cudaMemcpyDefault, t.on.get()));
        break;
      case copy_api::sync:
        HDB_CUDA_CALL(cudaMemcpy(t.dst.data(), t.src.data(), bytes_, cudaMemcpyDefault));
        break;
      case copy_api::kernel:
        // A few blocks per SM keep enough loads in flight to saturate HBM or the PCIe link.
        kernels::sm_copy(t.dst.device_view(), t.src.device_view(), bytes_, env_.sm_count * 8, t.on.get());
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
    transfers_[i].src.fill(seed_for(i), transfers_[i].on.get());
    transfers_[i].dst.clear(transfers_[i].on.get());
  }
  issue();
  synchronize();
  for (std::size_t i = 0; i < transfers_.size(); ++i) {
    const auto bad = transfers_[i].dst.verify(seed_for(i), transfers_[i].on.get());
    if (bad.count != 0) {
      throw std::runtime_error("verification failed: " + std::to_string(bad.count) + " of " + std::to_string(bytes_) +
                               " bytes differ from the pattern after one copy (first at byte " +
                               std::to_string(bad.first_index) + ")");
    }
  }
}

namespace {

// Keeps the fixture of the case now running, so its repetitions do not pay allocation, pinning
// and verification again; the previous case's memory is released before the next allocates.
class fixture_cache {
 public:
  const copy_fixture& get(const std::string& key, const copy_path& path, std::size_t bytes, const family_env& env) {
    if (key_ != key) {
      fixture_.reset();
      key_.clear();
      fixture_ = std::make_unique<copy_fixture>(path, bytes, env);
      key_ = key;
    }
    return *fixture_;
  }

 private:
  std::string key_;
  std::unique_ptr<copy_fixture> fixture_;
};

// Copies per timed batch: enough bytes that event resolution and the gate release are
// negligible, few enough that a batch never fills the device's queue while gated.
std::size_t copies_per_batch(std::size_t bytes) {
  constexpr std::size_t target_bytes = std::size_t{64} << 20;
  constexpr std::size_t max_copies = 100;
  return std::clamp<std::size_t>((target_bytes + bytes - 1) / std::max<std::size_t>(bytes, 1), 1, max_copies);
}

// Batches per repetition: a repetition moves about 256 MiB, or at least one batch.
benchmark::IterationCount batches_per_repetition(std::size_t bytes) {
  const std::size_t per_batch = copies_per_batch(bytes) * std::max<std::size_t>(bytes, 1);
  return static_cast<benchmark::IterationCount>(std::clamp<std::size_t>((std::size_t{256} << 20) / per_batch, 1, 8));
}

struct counter_names {
  const char* device_time;  // per copy, device clock
  const char* host_time;    // per copy, call to completion
  bool bandwidth;
};

void measure_copies(benchmark::State& state, const copy_fixture& fx, const copy_path& path, std::size_t bytes,
                    const counter_names& names, spin_gate& gate) {
  const std::size_t copies = copies_per_batch(bytes);
  spin_gate* const held_by = fx.queueable() ? &gate : nullptr;
  const auto issue_copies = [&fx](std::size_t n) {
    return [&fx, n] {
      for (std::size_t i = 0; i < n; ++i) fx.issue();
    };
  };
  // Warm-up: clocks up, first-touch and driver caches out of the timed region.
  static_cast<void>(time_batch(fx.streams(), held_by, issue_copies(std::min<std::size_t>(copies, 8))));

  double device_ms = 0.0;
  std::vector<double> stream_ms(fx.transfer_count(), 0.0);
  std::size_t timed_copies = 0;
  for (auto _ : state) {
    double batch_ms = 0.0;
    const auto add = [&](const batch_timing& t) {
      batch_ms += t.max_ms;
      for (std::size_t s = 0; s < stream_ms.size(); ++s) stream_ms[s] += t.per_stream_ms[s];
    };
    if (held_by != nullptr) {
      add(time_batch(fx.streams(), held_by, issue_copies(copies)));
    } else {
      // Blocking copies cannot wait behind the gate: one event pair around each call.
      for (std::size_t i = 0; i < copies; ++i) add(time_batch(fx.streams(), nullptr, issue_copies(1)));
    }
    state.SetIterationTime(batch_ms / 1e3);
    device_ms += batch_ms;
    timed_copies += copies;
  }
  // Host-observed: the median call, so one interrupt or page fault landing in one of a hundred
  // calls does not move the figure (the device-timed metrics carry the throughput).
  std::vector<double> host_us(copies);
  for (double& us : host_us) {
    us = host_time_us([&] {
      fx.issue();
      fx.synchronize();
    });
  }
  std::nth_element(host_us.begin(), host_us.begin() + static_cast<std::ptrdiff_t>(copies / 2), host_us.end());
  const double host_median_us = host_us[copies / 2];

  const double us_per_copy = device_ms * 1e3 / static_cast<double>(timed_copies);
  // A bidirectional "copy" is a pair moving 2 x bytes: its times get their own names so the
  // per-copy alpha-beta fit (bytes moved = size_bytes) never mixes the two.
  const bool pair = path.dir == direction::bidir;
  state.counters[pair ? "time_per_pair" : names.device_time] = us_per_copy;
  state.counters[pair ? "host_time_per_pair" : names.host_time] = host_median_us;
  if (names.bandwidth) {
    const auto gbps = [&](double us) { return static_cast<double>(bytes) / (us * 1e3); };
    state.counters["bandwidth"] = gbps(us_per_copy) * static_cast<double>(fx.transfer_count());
    if (path.dir == direction::bidir) {
      state.counters["bandwidth_h2d"] = gbps(stream_ms[0] * 1e3 / static_cast<double>(timed_copies));
      state.counters["bandwidth_d2h"] = gbps(stream_ms[1] * 1e3 / static_cast<double>(timed_copies));
    }
  }
}

void require_device_memory(std::size_t needed, const family_env& env) {
  // Leave headroom for the context and the driver's own allocations.
  if (needed > env.free_device_memory / 10 * 9) {
    throw skip_case("needs " + format_size(needed) + " of device memory, " + format_size(env.free_device_memory) +
                    " free at start-up");
  }
}

std::size_t device_bytes_needed(const copy_path& path, std::size_t bytes) {
  switch (path.dir) {
    case direction::d2d: return 2 * bytes;
    case direction::bidir: return 2 * bytes;
    default: return bytes;
  }
}

std::vector<std::pair<std::string, std::string>> path_labels(const char* case_name, const copy_path& path, std::size_t bytes) {
  return {{"case", case_name},
          {"direction", std::string(to_string(path.dir))},
          {"host_kind", path.dir == direction::d2d ? "device" : std::string(to_string(path.host))},
          {"api", std::string(to_string(path.api))},
          {"size_bytes", std::to_string(bytes)},
          {"streams", std::to_string(path.dir == direction::bidir ? 2 : 1)}};
}

std::string case_name(const char* case_kind, const copy_path& path, std::size_t bytes) {
  const std::string host = path.dir == direction::d2d ? "device" : std::string(to_string(path.host));
  return std::string("copy/") + case_kind + "/" + std::string(to_string(path.dir)) + "/" + host + "/" +
         std::string(to_string(path.api)) + "/size:" + std::to_string(bytes);
}

void register_copy_cases(const char* case_kind, const std::vector<copy_path>& paths, const std::vector<std::size_t>& sizes,
                         const counter_names& names, family_env& env, const std::shared_ptr<fixture_cache>& cache,
                         case_registry& registry) {
  for (const copy_path& path : paths) {
    for (std::size_t bytes : sizes) {
      case_spec spec;
      spec.name = case_name(case_kind, path, bytes);
      spec.labels = path_labels(case_kind, path, bytes);
      const bool pinned_async = path.host == host_kind::pinned && path.api == copy_api::async && path.dir != direction::d2d;
      if (names.bandwidth && pinned_async && bytes == sizes.back()) spec.headline_metrics = {"bandwidth"};
      if (!names.bandwidth && pinned_async && bytes == sizes.front()) spec.headline_metrics = {names.device_time, names.host_time};
      spec.iterations = batches_per_repetition(bytes);
      spec.body = [path, bytes, names, &env, cache, key = spec.name](benchmark::State& state) {
        require_device_memory(device_bytes_needed(path, bytes), env);
        const copy_fixture& fx = cache->get(key, path, bytes, env);
        measure_copies(state, fx, path, bytes, names, *env.gate);
      };
      registry.add(std::move(spec));
    }
  }
}

// --- the cost of getting memory -------------------------------------------------------------

enum class alloc_api { malloc_host, host_register, device_malloc };

struct alloc_timing {
  double acquire_us;
  double release_us;
};

alloc_timing time_allocation(alloc_api api, std::size_t bytes) {
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
    case alloc_api::host_register: {
      // The pages exist before pinning (touched outside the timer): this times the pinning alone.
      auto pages = std::unique_ptr<void, decltype(&std::free)>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096), &std::free);
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
  for (const row r : {row{alloc_api::malloc_host, "cudaMallocHost", "pinned"},
                      row{alloc_api::host_register, "cudaHostRegister", "registered"},
                      row{alloc_api::device_malloc, "cudaMalloc", "device"}}) {
    for (std::size_t bytes : sizes) {
      case_spec spec;
      spec.name = std::string("copy/alloc/") + r.name + "/size:" + std::to_string(bytes);
      spec.labels = {{"case", "alloc"}, {"host_kind", r.host}, {"api", r.name}, {"size_bytes", std::to_string(bytes)}};
      spec.body = [api = r.api, bytes, &env](benchmark::State& state) {
        if (api == alloc_api::device_malloc) require_device_memory(bytes, env);
        static_cast<void>(time_allocation(api, bytes));  // warm-up: first-use costs of the driver
        alloc_timing sum{};
        for (auto _ : state) {
          const alloc_timing t = time_allocation(api, bytes);
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

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  const auto sizes = parse_size_list(options.value("sizes"));
  const auto latency_sizes = parse_size_list(options.value("latency-sizes"));
  const auto alloc_sizes = parse_size_list(options.value("alloc-sizes"));
  auto cache = std::make_shared<fixture_cache>();
  register_copy_cases("bandwidth", bandwidth_paths(), sizes, {"time_per_copy", "host_time_per_copy", true}, env, cache,
                      registry);
  register_copy_cases("latency", latency_paths(), latency_sizes, {"latency", "host_latency", false}, env, cache, registry);
  register_alloc_cases(alloc_sizes, env, registry);
}

}  // namespace

family_spec family() {
  return {
      "copy",
      "host<->device and device<->device copy bandwidth and latency for pageable, pinned, write-combined, "
      "registered and mapped (zero-copy) memory, through cudaMemcpyAsync, cudaMemcpy and SM kernels, "
      "and the cost of allocating and pinning memory",
      {{"sizes", "1K:1G:x4", "4K,1M,64M", "bandwidth sweep sizes: FROM:TO:xF and/or a comma list (K,M,G binary)"},
       {"latency-sizes", "1,64,4K", "1,4K", "small-copy latency sizes"},
       {"alloc-sizes", "1M,16M,256M,1G", "1M,64M", "sizes for the allocation/pinning cost cases"}},
      {{"bandwidth", "GB/s", "higher", "bytes of one copy / device time of one copy (bidir: both directions)"},
       {"bandwidth_h2d", "GB/s", "higher", "bidir: host-to-device share, its own stream's device time"},
       {"bandwidth_d2h", "GB/s", "higher", "bidir: device-to-host share, its own stream's device time"},
       {"time_per_copy", "us", "lower", "device time of one copy (gated batch, or per call for blocking copies)"},
       {"host_time_per_copy", "us", "lower", "host clock from the call to its completion (synchronised); median call"},
       {"time_per_pair", "us", "lower", "bidir: device time of one h2d + d2h pair running concurrently"},
       {"host_time_per_pair", "us", "lower", "bidir: host clock from issuing both copies to both completing"},
       {"latency", "us", "lower", "device time per small copy, back to back"},
       {"host_latency", "us", "lower", "host clock from the call to completion of one small copy; median call"},
       {"time_per_call", "us", "lower", "host time of one allocation / pinning call"},
       {"time_per_mib", "us/MiB", "lower", "time_per_call divided by the size in MiB"},
       {"release_time_per_call", "us", "lower", "host time of the matching free / unregister call"}},
      "time_per_copy",
      register_cases,
  };
}

}  // namespace hdb::copy
