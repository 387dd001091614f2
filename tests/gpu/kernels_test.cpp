#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/host_pattern.hpp"
#include "hdb/kernels.hpp"
#include "hdb/pattern.hpp"
#include "hdb/stream.hpp"

#include <vector>

TEST_CASE("device fill matches the host pattern byte for byte", "[gpu][kernels]") {
  static_cast<void>(hdb_test::gpu_env());
  const std::size_t bytes = GENERATE(1, 7, 4097, (64u << 20) + 3);
  const hdb::stream s;
  const hdb::device_buffer d(bytes);
  hdb::kernels::fill_pattern(d.data(), bytes, 9, s.get());
  std::vector<std::uint8_t> host(bytes);
  HDB_CUDA_CALL(cudaMemcpyAsync(host.data(), d.data(), bytes, cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  CHECK(hdb::verify_pattern_host(host.data(), bytes, 9).count == 0);
  CHECK(host.back() == hdb::pattern_byte(bytes - 1, 9));
}

TEST_CASE("device verify counts wrong bytes and finds the first", "[gpu][kernels]") {
  static_cast<void>(hdb_test::gpu_env());
  const std::size_t bytes = GENERATE(1, 4097, (64u << 20) + 3);
  const hdb::stream s;
  const hdb::device_buffer d(bytes);
  hdb::kernels::fill_pattern(d.data(), bytes, 3, s.get());
  CHECK(hdb::kernels::verify_pattern(d.data(), bytes, 3, s.get()).count == 0);

  const std::size_t at = bytes - 1;  // the tail byte is the easiest to get wrong
  const std::uint8_t wrong = static_cast<std::uint8_t>(hdb::pattern_byte(at, 3) ^ 0xFF);
  HDB_CUDA_CALL(cudaMemcpy(static_cast<std::uint8_t*>(d.data()) + at, &wrong, 1, cudaMemcpyHostToDevice));
  const auto bad = hdb::kernels::verify_pattern(d.data(), bytes, 3, s.get());
  CHECK(bad.count == 1);
  CHECK(bad.first_index == at);
  HDB_CUDA_CALL(cudaMemsetAsync(d.data(), 0, bytes, s.get()));
  CHECK(hdb::kernels::verify_pattern(d.data(), bytes, 3, s.get()).count == bytes);
}

TEST_CASE("SM copy handles unaligned pointers and odd sizes", "[gpu][kernels]") {
  const auto& env = hdb_test::gpu_env();
  const std::size_t offset = GENERATE(0, 1, 8);
  const std::size_t bytes = GENERATE(1, 4097, (1u << 20) + 3);
  const hdb::stream s;
  const hdb::device_buffer src(bytes + 16);
  const hdb::device_buffer dst(bytes + 16);
  hdb::kernels::fill_pattern(src.data(), bytes + 16, 5, s.get());
  HDB_CUDA_CALL(cudaMemsetAsync(dst.data(), 0, bytes + 16, s.get()));
  hdb::kernels::sm_copy(dst.data(), src.data(), bytes, env.devices.front().sm_count, s.get());
  CHECK(hdb::kernels::verify_pattern(dst.data(), bytes, 5, s.get()).count == 0);
  // Shifted source: the copy must carry the shift, so the destination no longer matches.
  hdb::kernels::sm_copy(dst.data(), static_cast<std::uint8_t*>(src.data()) + offset, bytes, env.devices.front().sm_count, s.get());
  const auto shifted = hdb::kernels::verify_pattern(dst.data(), bytes, 5, s.get());
  CHECK((offset == 0) == (shifted.count == 0));
}
