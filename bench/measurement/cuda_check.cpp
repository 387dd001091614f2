#include "hdb/cuda_check.hpp"

#include <cstdio>

namespace hdb {
namespace {
std::string describe(cudaError_t code, const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
         cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")";
}
}  // namespace

cuda_error::cuda_error(cudaError_t code, const char* call, const char* file, int line)
    : std::runtime_error(describe(code, call, file, line)), code_(code) {}

bool is_sticky(cudaError_t code) noexcept {
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

void throw_on_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) {
    // Clear the non-sticky "last error" so the next, unrelated call does not report it again.
    static_cast<void>(cudaGetLastError());
    throw cuda_error(code, call, file, line);
  }
}

void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  if (code != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::fprintf(stderr, "hdbench: warning: %s\n", describe(code, call, file, line).c_str());
  }
}

}  // namespace hdb
