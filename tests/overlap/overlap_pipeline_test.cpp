// The overlap family on a GPU: every (streams, chunks, regime) and every way of issuing the
// pipeline delivers the right bytes (the pipeline's constructor runs one pass and verifies it,
// throwing on a wrong word; a timed pass is verified here again), the movement-tax variants
// compute the same result, a timeline is ordered within every chunk, the bound probe measures
// plausible rates over a pipeline's buffers without touching its input, and calibration finds
// iterations that grow with the regime's ratio.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "overlap_model.hpp"
#include "pipeline.hpp"

#include "hdb/buffers.hpp"

#include <algorithm>
#include <memory>
#include <string>

namespace ov = hdb::overlap;

namespace {
// Small enough that every output word is checked (ov::full_check_bytes); 1027 pages, so every chunk
// count below leaves a shorter last chunk.
constexpr std::size_t test_bytes = 1027 * ov::chunk_alignment;

// Iterations standing in for the three regimes without a calibration: light, medium and heavy.
constexpr std::uint32_t regime_iterations[] = {1, 37, 1000};

std::shared_ptr<const ov::pipeline_buffers> buffers_for(hdb::host_kind kind, std::size_t bytes = test_bytes) {
  return std::make_shared<const ov::pipeline_buffers>(hdb_test::gpu_env().devices.front().index, kind, bytes);
}
}  // namespace

TEST_CASE("every streams x chunks x regime pipeline produces the transformed bytes", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto kind = GENERATE(hdb::host_kind::pinned, hdb::host_kind::pageable);
  const auto buffers = buffers_for(kind);
  for (int streams : {1, 2, 3, 4, 8}) {
    for (int chunks : {streams, 4 * streams, 32, 3 * streams + 1}) {
      for (std::uint32_t iterations : regime_iterations) {
        INFO(std::string(hdb::to_string(kind)) << " streams " << streams << " chunks " << chunks << " iterations "
                                               << iterations);
        const ov::pipeline p({ov::issue_mode::nonblocking, streams, chunks, iterations}, buffers, *env.gate);
        CHECK(p.chunks().size() == static_cast<std::size_t>(chunks));
        CHECK(p.run(*env.gate) > 0);
        p.verify();
      }
    }
  }
}

TEST_CASE("every issue mode produces the transformed bytes", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto buffers = buffers_for(hdb::host_kind::pinned);
  for (auto mode : {ov::issue_mode::nonblocking, ov::issue_mode::legacy_default, ov::issue_mode::per_thread_default,
                    ov::issue_mode::host_sync, ov::issue_mode::graph}) {
    for (int streams : {1, 2, 4}) {
      INFO(std::string(ov::to_string(mode)) << " streams " << streams);
      const ov::pipeline p({mode, streams, 4 * streams + 1, 37}, buffers, *env.gate);
      CHECK(p.queueable() == (mode != ov::issue_mode::host_sync));
      CHECK(p.run(*env.gate) > 0);
      p.verify();
    }
  }
}

TEST_CASE("pageable pipelines are not queueable and a graph refuses pageable memory", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto buffers = buffers_for(hdb::host_kind::pageable);
  const ov::pipeline p({ov::issue_mode::nonblocking, 2, 8, 1}, buffers, *env.gate);
  CHECK_FALSE(p.queueable());
  CHECK_THROWS_AS(ov::pipeline({ov::issue_mode::graph, 2, 8, 1}, buffers, *env.gate), std::invalid_argument);
}

TEST_CASE("stale output from another pipeline fails verification", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto buffers = buffers_for(hdb::host_kind::pinned);
  const ov::pipeline first({ov::issue_mode::nonblocking, 2, 4, 37}, buffers, *env.gate);
  const ov::pipeline second({ov::issue_mode::nonblocking, 2, 4, 37}, buffers, *env.gate);
  CHECK_NOTHROW(second.verify());
  CHECK_THROWS(first.verify());  // the output now holds the second pipeline's salt
}

TEST_CASE("a bad chunking is refused before anything runs", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto buffers = buffers_for(hdb::host_kind::pinned, 2 * ov::chunk_alignment);
  CHECK_THROWS_AS(ov::pipeline({ov::issue_mode::nonblocking, 1, 3, 1}, buffers, *env.gate), std::invalid_argument);
}

TEST_CASE("timeline events are ordered within every chunk and inside the pass", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto kind = GENERATE(hdb::host_kind::pinned, hdb::host_kind::pageable);
  const auto buffers = buffers_for(kind, std::size_t{64} << 20);
  for (int streams : {1, 4}) {
    INFO(std::string(hdb::to_string(kind)) << " streams " << streams);
    const ov::pipeline p({ov::issue_mode::nonblocking, streams, 16, 200}, buffers, *env.gate);
    const ov::timeline t = p.run_with_timeline(*env.gate);
    REQUIRE(t.chunks.size() == 16);
    for (std::size_t i = 0; i < t.chunks.size(); ++i) {
      INFO("chunk " << i);
      const ov::chunk_timeline& c = t.chunks[i];
      // Another lane may start up to one event record before the origin (pipeline.cpp), as the end
      // may pass the total by the event resolution.
      CHECK(c.h2d.start_us >= -1);
      CHECK(c.h2d.start_us <= c.h2d.end_us);
      CHECK(c.h2d.end_us <= c.kernel.start_us);
      CHECK(c.kernel.start_us <= c.kernel.end_us);
      CHECK(c.kernel.end_us <= c.d2h.start_us);
      CHECK(c.d2h.start_us <= c.d2h.end_us);
      CHECK(c.d2h.end_us <= t.total_us + 1);  // event resolution ~0.5 us
      if (i >= static_cast<std::size_t>(streams)) {
        // A stream runs its own chunks in order.
        CHECK(t.chunks[i - static_cast<std::size_t>(streams)].d2h.end_us <= c.h2d.start_us);
      }
    }
    p.verify();
  }
}

TEST_CASE("the bound probe measures positive rates over the pipeline's buffers", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto kind = GENERATE(hdb::host_kind::pinned, hdb::host_kind::pageable);
  INFO(std::string(hdb::to_string(kind)));
  const auto buffers = buffers_for(kind, std::size_t{64} << 20);
  const ov::pipeline p({ov::issue_mode::nonblocking, 4, 8, 37}, buffers, *env.gate);
  const ov::bound_probe light(buffers, p.chunks(), 1, *env.gate);
  const ov::bound_probe heavy(buffers, p.chunks(), 2000, *env.gate);
  CHECK(light.plan().op_bytes == p.chunks().front().bytes);
  const ov::probe_times t = light.run(*env.gate);
  CHECK(t.bidir_us.has_value() == (kind == hdb::host_kind::pinned));
  const ov::stage_rates r = ov::rates_from_probe(light.plan(), t, 1.0);
  CHECK(r.h2d_gbps > 0);
  CHECK(r.d2h_gbps > 0);
  CHECK(r.kernel_gbps > 0);
  if (t.bidir_us) {
    // Both directions at once move at least as much as the faster one alone (full duplex).
    CHECK(r.bidir_gbps > 0.9 * std::max(r.h2d_gbps, r.d2h_gbps));
  }
  // The kernel probe runs the regime's work: 2000 steps a word take longer than 1.
  CHECK(ov::rates_from_probe(heavy.plan(), heavy.run(*env.gate), 1.0).kernel_gbps < r.kernel_gbps);
  // The probe writes the output and device data, never the input: a fresh pass still verifies.
  CHECK(p.run(*env.gate) > 0);
  p.verify();
}

TEST_CASE("every movement-tax variant computes the same result", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const auto buffers = buffers_for(hdb::host_kind::pinned);
  for (auto variant : ov::all_tax_variants) {
    INFO(std::string(ov::to_string(variant)));
    const ov::movement_tax tax(variant, buffers->bytes - ov::chunk_alignment, 37, buffers, *env.gate);  // verifies
    CHECK(tax.run(*env.gate) > 0);
  }
}

TEST_CASE("calibration measures positive rates and heavier regimes get more iterations", "[gpu][overlap]") {
  auto& env = hdb_test::gpu_env();
  const ov::device_calibration cal = ov::calibrate(std::size_t{16} << 20, *env.gate);
  CHECK(cal.pinned.h2d_gbps > 0);
  CHECK(cal.pinned.d2h_gbps > 0);
  CHECK(cal.pinned.bidir_gbps > 0);
  CHECK(cal.pageable.h2d_gbps > 0);
  CHECK(cal.pageable.d2h_gbps > 0);
  const auto& copy_heavy = cal.kernel(ov::regime::copy_heavy);
  const auto& balanced = cal.kernel(ov::regime::balanced);
  const auto& compute_heavy = cal.kernel(ov::regime::compute_heavy);
  CHECK(copy_heavy.iterations <= balanced.iterations);
  CHECK(balanced.iterations < compute_heavy.iterations);
  CHECK(compute_heavy.kernel_gbps < balanced.kernel_gbps);
  // Balanced means the kernel keeps pace with the H2D copy: within a factor of 1.5 either way.
  CHECK(balanced.kernel_gbps > cal.pinned.h2d_gbps / 1.5);
  CHECK(balanced.kernel_gbps < cal.pinned.h2d_gbps * 1.5);
}
