#pragma once
// One error path for every CUDA runtime call: HDB_CUDA_CALL throws hdb::cuda_error naming the
// call, file:line, the error's name and message; HDB_CUDA_CALL_NOTHROW is its twin for
// destructors, where throwing would terminate: it reports on stderr and carries on.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace hdb {

class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const char* call, const char* file, int line);
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// A sticky error corrupts the CUDA context: every later call in this process fails too.
[[nodiscard]] bool is_sticky(cudaError_t code) noexcept;

void throw_on_cuda_error(cudaError_t code, const char* call, const char* file, int line);
void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept;

}  // namespace hdb

#define HDB_CUDA_CALL(call) ::hdb::throw_on_cuda_error((call), #call, __FILE__, __LINE__)
#define HDB_CUDA_CALL_NOTHROW(call) ::hdb::report_cuda_error((call), #call, __FILE__, __LINE__)
