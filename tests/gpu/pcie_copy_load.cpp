// pcie-copy-load: another tenant of a GPU's PCIe link, for the fault tests that a verdict must
// catch (docs/testing.md, "GPU tests"): pinned 256 MiB copies h2d and d2h on two streams, back to
// back, for --seconds on --device. Its name does not start with "hdbench-" on purpose: check
// names any other program on a measured GPU as a FAIL, but only warns about another hdbench run.
//   pcie-copy-load --device=0 --seconds=60
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/stream.hpp"

namespace {

struct load_options {
  int device = 0;
  double seconds = 60;
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
    }
    if (end == nullptr || *end != '\0' || options.device < 0 || !(options.seconds > 0)) {
      throw std::invalid_argument("bad argument '" + std::string(arg) + "' (--device=N --seconds=S)");
    }
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto options = parse(argc, argv);
    HDB_CUDA_CALL(cudaSetDevice(options.device));
    constexpr std::size_t bytes = std::size_t{256} << 20;
    hdb::host_buffer up(hdb::host_kind::pinned, bytes), down(hdb::host_kind::pinned, bytes);
    hdb::device_buffer to(bytes), from(bytes);
    hdb::stream h2d, d2h;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.seconds);
    long copies = 0;
    while (std::chrono::steady_clock::now() < until) {
      HDB_CUDA_CALL(cudaMemcpyAsync(to.data(), up.data(), bytes, cudaMemcpyHostToDevice, h2d.get()));
      HDB_CUDA_CALL(cudaMemcpyAsync(down.data(), from.data(), bytes, cudaMemcpyDeviceToHost, d2h.get()));
      h2d.synchronize();
      d2h.synchronize();
      copies += 2;
    }
    std::printf("pcie-copy-load: %ld copies of 256 MiB on GPU %d in %.0f s\n", copies, options.device, options.seconds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pcie-copy-load: %s\n", e.what());
    return 2;
  }
}
