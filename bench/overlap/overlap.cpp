// hdbench-overlap: N bytes split into C chunks over S streams, each chunk H2D -> kernel -> D2H.
//
// Timed (CUDA events, manual time, one pass per iteration):
// - pipeline: one whole pass is one operation. Pinned passes are enqueued behind the spin gate
//   (enqueue cost excluded); pageable passes and the host-sync pitfall block the host, so they run
//   between their events as a program would run them (host time inside them included). Right after
//   each timed pass (outside the reported time) the bound probe measures the link and kernel rates
//   at the pass's chunk size on the same buffers, and the case that gates also runs the one-stream
//   one-chunk pass: that repetition's ideal time, speedup and efficiency come from them.
// - timeline: one pass with an event before and after every operation, read against one origin
//   event; every chunk of one configuration is its own case (its start/end metrics, docs/methodology.md).
// - movement_tax: one call of the kernel with or without the data movement around it.
// - calibration: the start-up measurements that choose each regime's kernel work, as reported numbers.
// - host_fill: not a GPU operation. The movement tax's host_generated input (its --tax-size bytes of
//   the pattern, into the same pinned input buffer) written by 1 and by --fill-threads CPU threads,
//   each a slice of whole pages, timed with the host's steady clock: the CPU's part of that call
//   alone, and what more threads make of it. No GPU, event or driver call is in it; the input is
//   verified against the pattern after the timed fills.
// Excluded: allocation and pinning (buffers are shared by the cases of a device and memory kind),
// pattern fill, graph capture and instantiation, the warm-up pass and verification (host_fill:
// the threads' start, a warm-up fill and the verification).
// Bytes: throughput = N / pipeline time (each byte is copied in, transformed and copied out once).
// Derived: serial time (the measured one-stream one-chunk pass), ideal time (overlap_model.hpp),
// speedup and overlap efficiency; the model is summarised in docs/methodology.md; its formulas were derived in docs/overlap.md (git show 47ce745:docs/overlap.md).
#include "overlap.hpp"

#include "overlap_model.hpp"
#include "pipeline.hpp"
#include "transform.hpp"

#include "hdb/family.hpp"
#include "hdb/util/stats.hpp"
#include "hdb/util/units.hpp"
#include "hdb/host_parallel.hpp"
#include "hdb/host_pattern.hpp"
#include "hdb/measure.hpp"
#include "hdb/sizes.hpp"
#include "hdb/stream.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace hdb::overlap {
namespace {

constexpr std::size_t max_probe_bytes = std::size_t{64} << 20;
// The stream-semantics pitfalls: one two-stream pipeline, four chunks per stream.
constexpr int semantics_streams = 2;
constexpr int semantics_chunks = 8;
// Graph vs stream launches: the four-stream pipeline at the sweep's finest default chunking.
constexpr int graph_streams = 4;
constexpr int graph_chunks = 32;
// Timelines: one stream against four.
constexpr int timeline_streams[] = {1, 4};
// Serial baseline passes measured when no one-stream one-chunk case ran before (a filter).
constexpr int serial_samples = 3;

// ---------------------------------------------------------------- flags

void check_size(const std::string& flag, const std::string& value) {
  std::size_t bytes = 0;
  try {
    bytes = parse_size(value);
  } catch (const usage_error& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
  if (bytes == 0 || bytes % chunk_alignment != 0) {
    throw usage_error("bad value for --" + flag + ": '" + value + "' (a size > 0 in whole 4 KiB pages, e.g. 1G)");
  }
}

void check_chunk_rules(const std::string& flag, const std::string& value) {
  try {
    static_cast<void>(parse_chunk_rules(value));
  } catch (const std::invalid_argument& e) {
    throw usage_error("bad value for --" + flag + ": " + e.what());
  }
}

void check_single_count(const std::string& flag, const std::string& value) {
  if (parse_positive_int_list(flag, value).size() != 1) {
    throw usage_error("bad value for --" + flag + ": '" + value + "' (one whole number >= 1)");
  }
}

struct settings {
  std::size_t bytes = 0;
  std::vector<int> streams;
  std::vector<chunk_rule> chunks;
  std::vector<int> pageable_streams;
  std::vector<chunk_rule> pageable_chunks;
  int timeline_chunks = 0;
  std::size_t tax_bytes = 0;
  std::vector<int> fill_threads;
};

settings read_settings(const run_options& options) {
  settings s;
  s.bytes = parse_size(options.value("size"));
  s.streams = parse_positive_int_list("streams", options.value("streams"));
  s.chunks = parse_chunk_rules(options.value("chunks"));
  s.pageable_streams = parse_positive_int_list("pageable-streams", options.value("pageable-streams"));
  s.pageable_chunks = parse_chunk_rules(options.value("pageable-chunks"));
  s.timeline_chunks = parse_positive_int_list("timeline-chunks", options.value("timeline-chunks")).front();
  // The tax runs on the front of the pipeline buffers, so it can be at most --size.
  s.tax_bytes = std::min(parse_size(options.value("tax-size")), s.bytes);
  s.fill_threads = parse_positive_int_list("fill-threads", options.value("fill-threads"));
  for (auto* list : {&s.streams, &s.pageable_streams, &s.fill_threads}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  return s;
}

// ---------------------------------------------------------------- shared state

// What the cases of one process share: each device's calibration, the buffers of the (device,
// kind, size) now in use, the measured serial baselines, and one slot for the fixture of the case
// now running. The slot is emptied before a new fixture is built, so two cases' pipelines (and
// their buffers) never coexist.
class family_state {
 public:
  const device_calibration& calibration(const settings& s, int device, spin_gate& gate) {
    auto found = calibrations_.find(device);
    if (found == calibrations_.end()) {
      found = calibrations_.emplace(device, calibrate(std::min(max_probe_bytes, s.bytes), gate)).first;
    }
    return found->second;
  }

  std::shared_ptr<const pipeline_buffers> buffers(int device, host_kind kind, std::size_t bytes) {
    if (!buffers_ || buffers_->device != device || buffers_->kind != kind || buffers_->bytes != bytes) {
      buffers_.reset();  // release the old set before allocating the new one
      buffers_ = std::make_shared<const pipeline_buffers>(device, kind, bytes);
    }
    return buffers_;
  }

  template <class Fixture, class Make>
  Fixture& fixture(const std::string& key, Make&& make) {
    if (key != slot_key_ || !slot_) {
      slot_.reset();
      slot_key_.clear();
      std::shared_ptr<Fixture> made = make();
      slot_ = made;
      slot_key_ = key;
    }
    return *std::static_pointer_cast<Fixture>(slot_);
  }

  void add_serial_sample(int device, regime r, host_kind kind, double us) { serial_[{device, r, kind}].push_back(us); }

  // Median one-stream one-chunk pass of the regime over these buffers' device and memory kind;
  // measured here when no such case has run yet.
  double serial_us(const std::shared_ptr<const pipeline_buffers>& buffers, regime r, std::uint32_t iterations,
                   spin_gate& gate) {
    auto& samples = serial_[{buffers->device, r, buffers->kind}];
    if (samples.empty()) {
      const pipeline serial({issue_mode::nonblocking, 1, 1, iterations}, buffers, gate);
      for (int i = 0; i < serial_samples; ++i) samples.push_back(serial.run(gate));
    }
    return median(samples);
  }

 private:
  std::map<int, device_calibration> calibrations_;
  std::shared_ptr<const pipeline_buffers> buffers_;
  std::map<std::tuple<int, regime, host_kind>, std::vector<double>> serial_;
  std::shared_ptr<void> slot_;
  std::string slot_key_;
};

struct case_context {
  settings config;
  family_env* env = nullptr;
  family_state state;
};

std::vector<chunk> checked_split(std::size_t bytes, int chunks, int streams) {
  if (chunks < streams) {
    throw skip_case(std::to_string(chunks) + " chunks on " + std::to_string(streams) +
                    " streams would leave a stream without work (chunks must be >= streams)");
  }
  try {
    return split_into_chunks(bytes, chunks);
  } catch (const std::invalid_argument& e) {
    throw skip_case(e.what());
  }
}

// ---------------------------------------------------------------- pipeline cases

struct pipeline_case {
  int device = 0;
  regime work = regime::balanced;
  host_kind host = host_kind::pinned;
  issue_mode mode = issue_mode::nonblocking;
  int streams = 1;
  int chunks = 1;
  // The serial pass runs in every repetition beside the pipeline (the case that gates: its speedup
  // comes from the same repetition), rather than from the regime's one-stream one-chunk case. A serial pass costs
  // ~2.5x a pipelined one, so every case doing it would add half the family's run time.
  bool serial_each_repetition = false;
};

// A pipeline case's timed pipeline, the probe of its bound, and (the gating case) its serial twin, all
// over the same buffers. Built in this order: each verifies (pipelines) or warms up (the probe)
// before the next one overwrites the shared output.
struct pipeline_fixture {
  pipeline_fixture(const pipeline_case& pc, std::uint32_t iterations, const std::shared_ptr<const pipeline_buffers>& buffers,
                   spin_gate& gate)
      : timed({pc.mode, pc.streams, pc.chunks, iterations}, buffers, gate), probe(buffers, timed.chunks(), iterations, gate) {
    if (pc.serial_each_repetition) serial.emplace(pipeline_config{issue_mode::nonblocking, 1, 1, iterations}, buffers, gate);
  }
  pipeline timed;
  bound_probe probe;
  std::optional<pipeline> serial;
};

// Sums over a case's iterations (one per repetition) of what each iteration measured.
struct pass_totals {
  double pass_us = 0;
  double ideal_us = 0;
  double serial_us = 0;
  stage_rates rates;  // each rate summed

  void add_rates(const stage_rates& r) {
    rates.h2d_gbps += r.h2d_gbps;
    rates.d2h_gbps += r.d2h_gbps;
    rates.bidir_gbps += r.bidir_gbps;
    rates.kernel_gbps += r.kernel_gbps;
  }
};

// The bound of the pass that just ran, from the probe run right after it.
stage_rates probe_rates(const bound_probe& probe, const device_calibration& cal, spin_gate& gate) {
  return rates_from_probe(probe.plan(), probe.run(gate), cal.pinned.bidir_gbps);
}

// What a pipeline or timeline case checks and reads before it measures: its chunks (a skip when
// a stream would have none), room for the data on the GPU, the GPU's calibration.
struct pipeline_setup {
  spin_gate& gate;
  std::size_t bytes;
  std::vector<chunk> chunks;
  const device_calibration& cal;
};

pipeline_setup prepare_pipeline(case_context& ctx, int device, int chunk_count, int streams) {
  const device_info& info = ctx.env->device(device);
  spin_gate& gate = *ctx.env->gate;
  const std::size_t bytes = ctx.config.bytes;
  auto chunks = checked_split(bytes, chunk_count, streams);
  require_device_memory(bytes, info);
  return {gate, bytes, std::move(chunks), ctx.state.calibration(ctx.config, device, gate)};
}

void run_pipeline_case(benchmark::State& state, case_context& ctx, const pipeline_case& pc, const std::string& key) {
  const pipeline_setup setup = prepare_pipeline(ctx, pc.device, pc.chunks, pc.streams);
  spin_gate& gate = setup.gate;
  const std::size_t bytes = setup.bytes;
  const device_calibration& cal = setup.cal;
  const std::uint32_t iterations = cal.kernel(pc.work).iterations;
  const pipeline_fixture& fx = ctx.state.fixture<pipeline_fixture>(key, [&] {
    return std::make_shared<pipeline_fixture>(pc, iterations, ctx.state.buffers(pc.device, pc.host, bytes), gate);
  });
  // Per iteration: the timed pass, then its bound measured at once (pass, probe, pass, probe, ...),
  // then the serial twin where the case has one. The pass goes first so that what is timed is the
  // same pass as before the probe existed; the probe follows within milliseconds (docs/methodology.md).
  pass_totals totals;
  for (auto _ : state) {
    const double us = fx.timed.run(gate);
    state.SetIterationTime(us / 1e6);
    totals.pass_us += us;
    const stage_rates rates = probe_rates(fx.probe, cal, gate);
    totals.add_rates(rates);
    totals.ideal_us += ideal_time_us(rates, setup.chunks, pc.streams);
    if (fx.serial) totals.serial_us += fx.serial->run(gate);
  }
  const double n = static_cast<double>(state.iterations());
  const double measured = totals.pass_us / n;
  if (pc.streams == 1 && pc.chunks == 1 && pc.mode == issue_mode::nonblocking) {
    ctx.state.add_serial_sample(pc.device, pc.work, pc.host, measured);
  }
  const double serial = fx.serial ? totals.serial_us / n
                                  : ctx.state.serial_us(ctx.state.buffers(pc.device, pc.host, bytes), pc.work, iterations, gate);
  const double ideal = totals.ideal_us / n;
  const pass_figures figures = figures_of_pass(serial, measured, ideal, pc.streams);
  state.counters["pipeline_time"] = measured;
  state.counters["throughput"] = gb_per_s(static_cast<double>(bytes), measured);
  state.counters["serial_time"] = serial;
  state.counters["ideal_time"] = ideal;
  state.counters["speedup"] = figures.speedup;
  state.counters["ideal_speedup"] = figures.ideal_speedup;
  if (figures.efficiency) state.counters["efficiency"] = 100 * *figures.efficiency;
  // The probe's rates, so a reader can see the link's state beside every pass. Pageable memory is
  // not probed both ways at once (its bound uses the start-up pinned figure): no bidir row.
  state.counters["bandwidth_h2d"] = totals.rates.h2d_gbps / n;
  state.counters["bandwidth_d2h"] = totals.rates.d2h_gbps / n;
  if (device_accessible(pc.host)) state.counters["bandwidth_bidir"] = totals.rates.bidir_gbps / n;
  state.counters["bandwidth_kernel"] = totals.rates.kernel_gbps / n;
}

// ---------------------------------------------------------------- timeline cases

struct timeline_series {
  timeline_series(const pipeline_config& config, const std::shared_ptr<const pipeline_buffers>& buffers, spin_gate& gate)
      : runs_of(config, buffers, gate), probe(buffers, runs_of.chunks(), config.iterations, gate) {}
  pipeline runs_of;
  bound_probe probe;
  std::vector<timeline> runs;    // one per repetition, shared by the chunk cases of the configuration
  std::vector<double> ideal_us;  // the bound of each run, from the probe run right after it
};

struct timeline_case {
  int device = 0;
  host_kind host = host_kind::pinned;
  int streams = 1;
  int chunks = 1;
  int chunk_index = 0;
};

void run_timeline_case(benchmark::State& state, case_context& ctx, const timeline_case& tc, const std::string& series_key,
                       std::size_t repetition) {
  const pipeline_setup setup = prepare_pipeline(ctx, tc.device, tc.chunks, tc.streams);
  spin_gate& gate = setup.gate;
  const std::size_t bytes = setup.bytes;
  const device_calibration& cal = setup.cal;
  const pipeline_config config{issue_mode::nonblocking, tc.streams, tc.chunks, cal.kernel(regime::balanced).iterations};
  timeline_series& series = ctx.state.fixture<timeline_series>(series_key, [&] {
    return std::make_shared<timeline_series>(config, ctx.state.buffers(tc.device, tc.host, bytes), gate);
  });
  // Repetition r of every chunk case reads pass r, so the chunks of one repetition are one pass.
  while (series.runs.size() <= repetition) {
    series.runs.push_back(series.runs_of.run_with_timeline(gate));
    series.ideal_us.push_back(ideal_time_us(probe_rates(series.probe, cal, gate), setup.chunks, tc.streams));
  }
  const timeline& pass = series.runs[repetition];
  for (auto _ : state) state.SetIterationTime(pass.total_us / 1e6);
  const chunk_timeline& c = pass.chunks[static_cast<std::size_t>(tc.chunk_index)];
  state.counters["h2d_start"] = c.h2d.start_us;
  state.counters["h2d_end"] = c.h2d.end_us;
  state.counters["kernel_start"] = c.kernel.start_us;
  state.counters["kernel_end"] = c.kernel.end_us;
  state.counters["d2h_start"] = c.d2h.start_us;
  state.counters["d2h_end"] = c.d2h.end_us;
  state.counters["pipeline_time"] = pass.total_us;
  state.counters["ideal_time"] = series.ideal_us[repetition];
}

// ---------------------------------------------------------------- movement tax

struct tax_fixture {
  tax_fixture(tax_variant variant, std::size_t bytes, std::uint32_t iterations, const std::shared_ptr<const pipeline_buffers>& buffers,
              spin_gate& gate)
      : measured(variant, bytes, iterations, buffers, gate) {
    const movement_tax resident(tax_variant::resident, bytes, iterations, buffers, gate);
    std::vector<double> us;
    for (int i = 0; i < serial_samples; ++i) us.push_back(resident.run(gate));
    resident_us = median(us);
  }
  movement_tax measured;
  double resident_us = 0;
};

void run_tax_case(benchmark::State& state, case_context& ctx, int device, regime work, tax_variant variant,
                  const std::string& key) {
  const device_info& info = ctx.env->device(device);
  spin_gate& gate = *ctx.env->gate;
  require_device_memory(ctx.config.bytes, info);
  const device_calibration& cal = ctx.state.calibration(ctx.config, device, gate);
  const tax_fixture& fx = ctx.state.fixture<tax_fixture>(key, [&] {
    return std::make_shared<tax_fixture>(variant, ctx.config.tax_bytes, cal.kernel(work).iterations,
                                         ctx.state.buffers(device, host_kind::pinned, ctx.config.bytes), gate);
  });
  double total_us = 0;
  for (auto _ : state) {
    const double us = fx.measured.run(gate);
    state.SetIterationTime(us / 1e6);
    total_us += us;
  }
  const double call_us = total_us / static_cast<double>(state.iterations());
  state.counters["device_call_time"] = call_us;
  state.counters["tax_ratio"] = call_us / fx.resident_us;
}

// ---------------------------------------------------------------- the CPU's fill, beside the tax

// The host_generated input written by `threads` threads into the shared pinned input, slice by
// slice (whole pages, so no two threads write one page), with the pattern of each byte's position:
// the bytes host_generated's single loop writes.
struct fill_fixture {
  fill_fixture(std::size_t bytes, int threads, std::shared_ptr<const pipeline_buffers> shared)
      : bytes(bytes), buffers(std::move(shared)), crew(threads), slices(split_bytes(bytes, threads, 4096)) {
    if (bytes > buffers->bytes) throw std::invalid_argument("host fill: " + std::to_string(bytes) + " bytes do not fit the shared buffers");
  }

  void fill() {
    crew.run([this](int i) {
      const byte_range& r = slices[static_cast<std::size_t>(i)];
      fill_pattern_host_range(buffers->input.data(), r.begin, r.end, input_seed);
    });
  }

  std::size_t bytes;
  std::shared_ptr<const pipeline_buffers> buffers;
  thread_crew crew;
  std::vector<byte_range> slices;
};

void run_fill_case(benchmark::State& state, case_context& ctx, int device, int threads, const std::string& key) {
  require_device_memory(ctx.config.bytes, ctx.env->device(device));  // the shared buffers hold device memory too
  fill_fixture& fx = ctx.state.fixture<fill_fixture>(key, [&] {
    return std::make_shared<fill_fixture>(ctx.config.tax_bytes, threads, ctx.state.buffers(device, host_kind::pinned, ctx.config.bytes));
  });
  fx.fill();  // warm-up: the threads' first touch of their slices
  double total_us = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    fx.fill();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(us / 1e6);
    total_us += us;
  }
  const auto bad = verify_pattern_host(fx.buffers->input.data(), fx.bytes, input_seed);
  if (bad.count != 0) {
    throw std::runtime_error("verification failed: " + std::to_string(bad.count) + " of " + std::to_string(fx.bytes) +
                             " input bytes differ from the pattern after the host fill (first at byte " +
                             std::to_string(bad.first_index) + ")");
  }
  const double fill_us = total_us / static_cast<double>(state.iterations());
  state.counters["host_fill_time"] = fill_us;
  state.counters["host_fill_bandwidth"] = gb_per_s(static_cast<double>(fx.bytes), fill_us);
}

// ---------------------------------------------------------------- calibration cases

enum class calibration_part { pinned_link, pageable_link, kernel };

void run_calibration_case(benchmark::State& state, case_context& ctx, int device, calibration_part part, regime work) {
  const device_calibration& cal = ctx.state.calibration(ctx.config, device, *ctx.env->gate);
  const double probe_h2d_s = static_cast<double>(cal.probe_bytes) / (cal.pinned.h2d_gbps * 1e9);
  for (auto _ : state) state.SetIterationTime(probe_h2d_s);  // the numbers are the counters
  switch (part) {
    case calibration_part::pinned_link:
    case calibration_part::pageable_link: {
      const link_rates& link = part == calibration_part::pinned_link ? cal.pinned : cal.pageable;
      state.counters["bandwidth_h2d"] = link.h2d_gbps;
      state.counters["bandwidth_d2h"] = link.d2h_gbps;
      if (part == calibration_part::pinned_link) state.counters["bandwidth_bidir"] = link.bidir_gbps;
      break;
    }
    case calibration_part::kernel: {
      const regime_kernel& k = cal.kernel(work);
      state.counters["bandwidth_kernel"] = k.kernel_gbps;
      state.counters["steps_per_word"] = k.iterations;
      // Achieved kernel time / H2D time of the same bytes: the regime's target ratio, as measured.
      state.counters["kernel_copy_ratio"] = cal.pinned.h2d_gbps / k.kernel_gbps;
      break;
    }
  }
}

// ---------------------------------------------------------------- registration

std::string number(int n) { return std::to_string(n); }

void register_device(const std::shared_ptr<case_context>& ctx, int device, case_registry& registry) {
  const settings& s = ctx->config;
  const std::string size = std::to_string(s.bytes);
  const auto add = [&](case_spec spec, std::function<void(benchmark::State&)> body) {
    spec.body = std::move(body);
    registry.add(std::move(spec));
  };

  const std::string probe = std::to_string(std::min(max_probe_bytes, s.bytes));
  for (host_kind kind : {host_kind::pinned, host_kind::pageable}) {
    const auto part = kind == host_kind::pinned ? calibration_part::pinned_link : calibration_part::pageable_link;
    case_spec spec =
        make_case("overlap", "calibration", {{"api", "link"}, {"host_kind", std::string(to_string(kind))}, {"size_bytes", probe}}, {device});
    spec.traffic = {{"bandwidth_h2d", "pcie_per_direction"}, {"bandwidth_d2h", "pcie_per_direction"}};
    if (part == calibration_part::pinned_link) spec.traffic["bandwidth_bidir"] = "pcie_both_directions";
    add(std::move(spec), [ctx, device, part](benchmark::State& st) { run_calibration_case(st, *ctx, device, part, regime::balanced); });
  }
  for (regime r : all_regimes) {
    add(make_case("overlap", "calibration", {{"api", "kernel"}, {"regime", std::string(to_string(r))}, {"size_bytes", probe}}, {device}),
        [ctx, device, r](benchmark::State& st) { run_calibration_case(st, *ctx, device, calibration_part::kernel, r); });
  }

  const auto add_pipeline = [&](const char* kind, const pipeline_case& pc) {
    case_spec spec = make_case("overlap", kind,
                               {{"regime", std::string(to_string(pc.work))},
                                {"host_kind", std::string(to_string(pc.host))},
                                {"api", std::string(to_string(pc.mode))},
                                {"streams", number(pc.streams)},
                                {"chunks", number(pc.chunks)},
                                {"size_bytes", size}},
                               {device});
    const std::string key = spec.name;
    // The case that gates (schema.json's gates) also times its serial twin in every repetition.
    spec.headline_aware_body = [ctx, pc, key](benchmark::State& st, const std::vector<std::string>& headlines) {
      pipeline_case measured = pc;
      measured.serial_each_repetition = !headlines.empty();
      run_pipeline_case(st, *ctx, measured, key);
    };
    registry.add(std::move(spec));
  };

  // The sweep, pinned: every regime x streams x chunks.
  for (regime r : all_regimes) {
    for (int streams : s.streams) {
      for (int chunks : chunk_counts(s.chunks, streams)) {
        add_pipeline("pipeline", {device, r, host_kind::pinned, issue_mode::nonblocking, streams, chunks});
      }
    }
  }
  for (issue_mode mode : {issue_mode::nonblocking, issue_mode::legacy_default, issue_mode::per_thread_default,
                          issue_mode::host_sync}) {
    add_pipeline("stream_semantics", {device, regime::balanced, host_kind::pinned, mode, semantics_streams, semantics_chunks});
  }
  for (issue_mode mode : {issue_mode::nonblocking, issue_mode::graph}) {
    add_pipeline("graph", {device, regime::balanced, host_kind::pinned, mode, graph_streams, graph_chunks});
  }

  const auto add_timelines = [&](host_kind kind) {
    for (int streams : timeline_streams) {
      const std::string series_key = "timeline/" + std::string(to_string(kind)) + "/" + number(streams) + "/gpu" + number(device);
      for (int c = 0; c < s.timeline_chunks; ++c) {
        case_spec spec = make_case("overlap", "timeline",
                                   {{"regime", "balanced"},
                                    {"host_kind", std::string(to_string(kind))},
                                    {"streams", number(streams)},
                                    {"chunks", number(s.timeline_chunks)},
                                    {"chunk", number(c)},
                                    {"size_bytes", size}},
                                   {device});
        const timeline_case tc{device, kind, streams, s.timeline_chunks, c};
        auto repetition = std::make_shared<std::size_t>(0);
        add(std::move(spec), [ctx, tc, series_key, repetition](benchmark::State& st) {
          run_timeline_case(st, *ctx, tc, series_key, (*repetition)++);
        });
      }
    }
  };
  add_timelines(host_kind::pinned);

  const std::string tax_size = std::to_string(s.tax_bytes);
  for (regime r : all_regimes) {
    for (tax_variant v : all_tax_variants) {
      case_spec spec = make_case("overlap", "movement_tax",
                                 {{"regime", std::string(to_string(r))},
                                  {"host_kind", "pinned"},
                                  {"api", std::string(to_string(v))},
                                  {"size_bytes", tax_size}},
                                 {device});
      const std::string key = spec.name;
      add(std::move(spec), [ctx, device, r, v, key](benchmark::State& st) { run_tax_case(st, *ctx, device, r, v, key); });
    }
  }
  for (int threads : s.fill_threads) {
    case_spec spec = make_case("overlap", "host_fill",
                               {{"host_kind", "pinned"}, {"size_bytes", tax_size}, {"threads", number(threads)}}, {device});
    const std::string key = spec.name;
    add(std::move(spec), [ctx, device, threads, key](benchmark::State& st) { run_fill_case(st, *ctx, device, threads, key); });
  }

  // Pageable last, so the pinned buffers are released once: pageable copies block the host, so
  // only the balanced regime, at the --pageable-chunks chunking, teaches what there is to teach.
  for (int streams : s.pageable_streams) {
    for (int chunks : chunk_counts(s.pageable_chunks, streams)) {
      add_pipeline("pipeline", {device, regime::balanced, host_kind::pageable, issue_mode::nonblocking, streams, chunks});
    }
  }
  add_timelines(host_kind::pageable);
}

void register_cases(const run_options& options, family_env& env, case_registry& registry) {
  auto ctx = std::make_shared<case_context>();
  ctx->config = read_settings(options);
  ctx->env = &env;
  for (const device_info& d : env.devices) register_device(ctx, d.index, registry);
}

}  // namespace

family_spec family() {
  family_spec spec;
  spec.name = "overlap";
  spec.flags = {
      {"size", "1G", "256M", "bytes per pipeline pass, whole 4 KiB pages (K,M,G binary)", check_size},
      {"streams", "1,2,3,4,8", "1,2,4", "stream counts of the pinned sweep", flag_checks::positive_int_list},
      {"chunks", "S,4S,32", "S,32", "chunk counts per stream count: N (fixed) or kS (k x streams)", check_chunk_rules},
      {"pageable-streams", "1,2,4", "1,4", "stream counts of the pageable sweep (balanced regime)",
       flag_checks::positive_int_list},
      {"pageable-chunks", "4S", "4S", "chunk counts of the pageable sweep, as --chunks", check_chunk_rules},
      {"timeline-chunks", "16", "8", "chunks of the 1- and 4-stream timeline pipelines", check_single_count},
      {"tax-size", "256M", "64M", "bytes per movement-tax call (at most --size)", check_size},
      {"fill-threads", "1,8", "1,8", "CPU thread counts of the host fill of the movement tax's input", flag_checks::positive_int_list},
  };
  spec.register_cases = register_cases;
  return spec;
}

}  // namespace hdb::overlap
