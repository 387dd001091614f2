// Host clocks, CPU-time clocks and the host <-> %globaltimer calibration.
//
// Calibration: a one-thread kernel waits for a request word in mapped host memory; the host
// stamps its clock, writes the request, polls for the reply (%globaltimer written by the kernel)
// and stamps its clock again. The device read its clock somewhere inside that window, so the
// offset is known to +- RTT/2; the round trip with the smallest RTT is kept (hdb::sync::calibrate).
#include "sync.hpp"
#include "sync_kernels.hpp"

#include "hdb/cuda_check.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace hdb::sync {

std::int64_t host_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
double cpu_clock_us(clockid_t clock) {
  timespec t{};
  if (clock_gettime(clock, &t) != 0) throw std::runtime_error(std::string("clock_gettime: ") + std::strerror(errno));
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}
}  // namespace

double thread_cpu_us() { return cpu_clock_us(CLOCK_THREAD_CPUTIME_ID); }
double process_cpu_us() { return cpu_clock_us(CLOCK_PROCESS_CPUTIME_ID); }

clock_offset calibrate_device_clock(cudaStream_t stream, int rounds) {
  constexpr std::uint64_t timeout_ns = 2'000'000'000ull;
  const auto count = static_cast<std::size_t>(rounds);
  host_buffer request(host_kind::mapped, sizeof(std::uint32_t));
  host_buffer replies(host_kind::mapped, count * sizeof(std::uint64_t));
  auto* request_word = static_cast<std::uint32_t*>(request.data());
  auto* reply_words = static_cast<std::uint64_t*>(replies.data());
  *request_word = 0;
  std::memset(reply_words, 0, count * sizeof(std::uint64_t));
  device::clock_echo(static_cast<const std::uint32_t*>(request.device_ptr()),
                     static_cast<std::uint64_t*>(replies.device_ptr()), static_cast<std::uint32_t>(rounds), timeout_ns,
                     stream);
  std::vector<round_trip> trips(count);
  const std::int64_t deadline = host_now_ns() + static_cast<std::int64_t>(timeout_ns);
  for (std::size_t r = 0; r < count; ++r) {
    std::atomic_ref<std::uint64_t> reply(reply_words[r]);
    trips[r].host_send_ns = host_now_ns();
    std::atomic_ref<std::uint32_t>(*request_word).store(static_cast<std::uint32_t>(r + 1), std::memory_order_release);
    std::uint64_t device_ns = 0;
    while ((device_ns = reply.load(std::memory_order_acquire)) == 0) {
      if (host_now_ns() > deadline) {
        // Let the kernel give up on its own timeout before the buffers go away.
        HDB_CUDA_CALL(cudaStreamSynchronize(stream));
        throw std::runtime_error("clock calibration: the echo kernel did not answer within 2 s");
      }
    }
    trips[r].host_receive_ns = host_now_ns();
    trips[r].device_ns = static_cast<std::int64_t>(device_ns);
  }
  HDB_CUDA_CALL(cudaStreamSynchronize(stream));
  return calibrate(trips);
}

}  // namespace hdb::sync
