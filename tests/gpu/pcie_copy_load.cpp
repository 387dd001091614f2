// pcie-copy-load: another tenant of a GPU's PCIe link, for the fault tests that a verdict must
// catch (docs/testing.md, "GPU tests"): pinned 256 MiB copies h2d and d2h on two streams, back to
// back, for --seconds on --device. Its name does not start with "hdbench-" on purpose: check
// names any other program on a measured GPU as a FAIL, but only warns about another hdbench run.
// --duty=F (0 < F < 1) makes it a steady partial load: in every --period-ms it copies 16 MiB
// chunks for F of the period and idles the rest, so every copy the suite times shares the link
// for about F of its time (a 1 GiB copy spans a couple of 10 ms periods).
//   pcie-copy-load --device=0 --seconds=60 [--duty=0.3 --period-ms=10]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/stream.hpp"

namespace {

struct load_options {
  int device = 0;
  double seconds = 60;
  double duty = 1;
  double period_ms = 10;
};

load_options parse(int argc, char** argv) {
  load_options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    char* end = nullptr;
    if (arg.starts_with("--device=")) {
      options.device = static_cast<int>(std::strtol(argv[i] + 9, &end, 10));
    } else if (arg.starts_with("--seconds=")) {
      options.seconds = std::strtod(argv[i] + 10, &end);
    } else if (arg.starts_with("--duty=")) {
      options.duty = std::strtod(argv[i] + 7, &end);
    } else if (arg.starts_with("--period-ms=")) {
      options.period_ms = std::strtod(argv[i] + 12, &end);
    }
    if (end == nullptr || *end != '\0' || options.device < 0 || !(options.seconds > 0) || !(options.duty > 0 && options.duty <= 1) ||
        !(options.period_ms > 0)) {
      throw std::invalid_argument("bad argument '" + std::string(arg) + "' (--device=N --seconds=S [--duty=F --period-ms=P])");
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto options = parse(argc, argv);
    HDB_CUDA_CALL(cudaSetDevice(options.device));
    const bool partial = options.duty < 1;
    const std::size_t bytes = partial ? std::size_t{16} << 20 : std::size_t{256} << 20;
    hdb::host_buffer up(hdb::host_kind::pinned, bytes), down(hdb::host_kind::pinned, bytes);
    hdb::device_buffer to(bytes), from(bytes);
    hdb::stream h2d, d2h;
    using clock = std::chrono::steady_clock;
    const auto until = clock::now() + std::chrono::duration<double>(options.seconds);
    const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(options.period_ms));
    const auto busy = std::chrono::duration_cast<clock::duration>(period * options.duty);
    long copies = 0;
    for (auto period_start = clock::now(); clock::now() < until; period_start += period) {
      do {
        HDB_CUDA_CALL(cudaMemcpyAsync(to.data(), up.data(), bytes, cudaMemcpyHostToDevice, h2d.get()));
        HDB_CUDA_CALL(cudaMemcpyAsync(down.data(), from.data(), bytes, cudaMemcpyDeviceToHost, d2h.get()));
        h2d.synchronize();
        d2h.synchronize();
        copies += 2;
      } while (clock::now() < period_start + (partial ? busy : period));
      if (partial) std::this_thread::sleep_until(period_start + period);
    }
    std::printf("pcie-copy-load: %ld copies of 256 MiB on GPU %d in %.0f s\n", copies, options.device, options.seconds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pcie-copy-load: %s\n", e.what());
    return 2;
  }
}
