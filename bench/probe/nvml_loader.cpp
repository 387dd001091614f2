#include "nvml_loader.hpp"

#include <dlfcn.h>

#include <utility>

namespace hdb::nvml {
namespace {

constexpr result not_supported = 3;  // NVML_ERROR_NOT_SUPPORTED

template <class Function>
void bind(void* handle, const char* name, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, name));
}

}  // namespace

std::optional<library> library::open(std::string& why) {
  // The versioned name: the unversioned libnvidia-ml.so ships only with development packages.
  void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    why = std::string("libnvidia-ml.so.1 not loadable: ") + (error != nullptr ? error : "unknown dlopen error");
    return std::nullopt;
  }
  library lib;
  lib.handle_ = handle;
  result (*init)() = nullptr;
  result (*shutdown)() = nullptr;
  bind(handle, "nvmlInit_v2", init);
  bind(handle, "nvmlShutdown", shutdown);
  bind(handle, "nvmlErrorString", lib.error_string_);
  // Until init succeeds lib holds no shutdown_, so its destructor only closes the library.
  if (init == nullptr || shutdown == nullptr) {
    why = "libnvidia-ml.so.1 lacks nvmlInit_v2/nvmlShutdown";
    return std::nullopt;
  }
  if (const result code = init(); code != success) {
    why = "nvmlInit_v2 failed: " + lib.error_text(code);
    return std::nullopt;
  }
  lib.shutdown_ = shutdown;
  bind(handle, "nvmlDeviceGetHandleByPciBusId_v2", lib.by_bus_id_);
  bind(handle, "nvmlDeviceGetNvLinkState", lib.nvlink_state_);
  bind(handle, "nvmlDeviceGetNvLinkVersion", lib.nvlink_version_);
  bind(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", lib.nvlink_remote_pci_);
  bind(handle, "nvmlDeviceGetTopologyCommonAncestor", lib.common_ancestor_);
  bind(handle, "nvmlDeviceGetCurrPcieLinkGeneration", lib.curr_gen_);
  bind(handle, "nvmlDeviceGetMaxPcieLinkGeneration", lib.max_gen_);
  bind(handle, "nvmlDeviceGetCurrPcieLinkWidth", lib.curr_width_);
  bind(handle, "nvmlDeviceGetMaxPcieLinkWidth", lib.max_width_);
  return std::optional<library>(std::move(lib));
}

library::library(library&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      shutdown_(std::exchange(other.shutdown_, nullptr)),
      by_bus_id_(other.by_bus_id_),
      nvlink_state_(other.nvlink_state_),
      nvlink_version_(other.nvlink_version_),
      nvlink_remote_pci_(other.nvlink_remote_pci_),
      common_ancestor_(other.common_ancestor_),
      curr_gen_(other.curr_gen_),
      max_gen_(other.max_gen_),
      curr_width_(other.curr_width_),
      max_width_(other.max_width_),
      error_string_(other.error_string_) {}

library::~library() {
  if (shutdown_ != nullptr) shutdown_();
  if (handle_ != nullptr) dlclose(handle_);
}

result library::handle_by_pci_bus_id(const char* bus_id, device* out) const {
  return by_bus_id_ != nullptr ? by_bus_id_(bus_id, out) : not_supported;
}
result library::nvlink_state(device d, unsigned int link, unsigned int* active) const {
  return nvlink_state_ != nullptr ? nvlink_state_(d, link, active) : not_supported;
}
result library::nvlink_version(device d, unsigned int link, unsigned int* version) const {
  return nvlink_version_ != nullptr ? nvlink_version_(d, link, version) : not_supported;
}
result library::nvlink_remote_pci(device d, unsigned int link, pci_info* out) const {
  return nvlink_remote_pci_ != nullptr ? nvlink_remote_pci_(d, link, out) : not_supported;
}
result library::common_ancestor(device a, device b, topology_level* out) const {
  return common_ancestor_ != nullptr ? common_ancestor_(a, b, out) : not_supported;
}
result library::pcie_generation(device d, bool maximum, unsigned int* out) const {
  const auto call = maximum ? max_gen_ : curr_gen_;
  return call != nullptr ? call(d, out) : not_supported;
}
result library::pcie_width(device d, bool maximum, unsigned int* out) const {
  const auto call = maximum ? max_width_ : curr_width_;
  return call != nullptr ? call(d, out) : not_supported;
}

std::string library::error_text(result code) const {
  if (error_string_ != nullptr) {
    if (const char* text = error_string_(code)) return text;
  }
  return "NVML error " + std::to_string(code);
}

}  // namespace hdb::nvml
