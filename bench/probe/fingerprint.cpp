#include "hdb/fingerprint.hpp"

#include "hdb/buffers.hpp"
#include "hdb/cuda_check.hpp"
#include "hdb/devices.hpp"
#include "hdb/util/nvidia_smi.hpp"
#include "hdb/gpu_topology.hpp"
#include "hdb/shell.hpp"
#include "hdb/stream.hpp"
#include "hdb/host_placement.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace hdb {
namespace {

using nlohmann::json;

json number_or_null(const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  return nullptr;
}

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Keeps the GPU's PCIe link busy with host-to-device copies until destroyed.
class link_load {
 public:
  explicit link_load(int device)
      : worker_([this, device] {
          try {
            const device_scope scope(device);
            const host_buffer source(host_kind::pinned, buffer_bytes);
            const device_buffer target(buffer_bytes);
            const stream s;
            while (!stop_.load()) {
              HDB_CUDA_CALL(cudaMemcpyAsync(target.data(), source.data(), buffer_bytes, cudaMemcpyHostToDevice, s.get()));
              s.synchronize();
            }
          } catch (const std::exception&) {
            // Best effort: without load the reading is merely idle; the source field says so.
            failed_ = true;
          }
        }) {}
  ~link_load() {
    stop_ = true;
    worker_.join();
  }
  link_load(const link_load&) = delete;
  link_load& operator=(const link_load&) = delete;
  [[nodiscard]] bool failed() const { return failed_.load(); }

 private:
  static constexpr std::size_t buffer_bytes = std::size_t{64} << 20;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::thread worker_;
};

const std::vector<std::string> smi_fields = {
    "driver_version",      "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
    "pcie.link.width.max", "clocks.sm",             "clocks.max.sm",     "clocks.mem",
    "clocks.max.mem",      "persistence_mode",      "ecc.mode.current",  std::string(smi_clock_event_reasons),
    "power.draw",          "power.limit",           "temperature.gpu"};

// The card's configuration that `hdbench compare` and `check` name beside a figure that moved when
// it differs from the baselines' (harness what_changed.hpp). Asked apart from smi_fields: a driver
// that refuses one of these names loses only them, never the link, clocks and ECC above.
const std::vector<std::string> smi_configuration_fields = {"vbios_version", "mig.mode.current",
                                                           "clocks.applications.graphics", "clocks.applications.memory"};

// The nvidia-smi row of `fields` of the GPU with this UUID (query_gpus asks older drivers for the
// reason mask under its old name).
std::optional<smi_row> query_smi(const std::vector<std::string>& fields, const std::string& uuid) {
  auto query = query_gpus(fields, uuid);
  if (query.gpus.empty()) return std::nullopt;
  return std::move(query.gpus.front());
}

json read_pcie_from_sysfs(const std::string& bus_id) {
  const auto attr = [&](const char* name) { return read_pci_attribute("/sys", bus_id, name); };
  const int gen_current = pcie_generation_from_speed(attr("current_link_speed"));
  const int gen_max = pcie_generation_from_speed(attr("max_link_speed"));
  if (gen_current == 0 && gen_max == 0) return {{"source", "unavailable (no nvidia-smi, no sysfs link attributes)"}};
  return {{"gen_current", gen_current},
          {"gen_max", gen_max},
          {"width_current", number_or_null(attr("current_link_width"))},
          {"width_max", number_or_null(attr("max_link_width"))},
          {"source", "sysfs (under load; a virtual machine may show its virtual bridge)"}};
}

// The GPU's NVLinks by `nvidia-smi nvlink --status`, or null when it did not answer: active links
// and the per-link rate, by the rule the topology uses (hdb/gpu_topology.hpp), so meta.json
// holds the one rate every NVLink peak is computed from.
json read_nvlink(const std::string& uuid, int cc_major, int cc_minor) {
  const auto out = run_command("nvidia-smi nvlink --status -i " + uuid);
  if (!out) return nullptr;
  const auto blocks = parse_smi_nvlink_status(*out);
  // `-i` prints this GPU's block only; an unparsable answer counts as no active link.
  static const std::vector<std::optional<double>> no_links;
  const auto& rates = blocks.size() == 1 ? blocks.begin()->second : no_links;
  const nvlink_summary s = summarize_nvlinks(rates, cc_major, cc_minor);
  return {{"links_active", s.links_active},
          {"per_link_GBps", s.per_link_GBps ? json(*s.per_link_GBps) : json(nullptr)},
          {"source", "nvidia-smi nvlink --status"},
          {"rate_source", s.rate_source.empty() ? json(nullptr) : json(s.rate_source)}};
}

}  // namespace

int pcie_generation_from_speed(const std::string& speed) {
  const json gts = number_or_null(speed.substr(0, speed.find(' ')));
  if (gts.is_null()) return 0;
  const double v = gts.get<double>();
  if (v >= 60) return 6;
  if (v >= 30) return 5;
  if (v >= 15) return 4;
  if (v >= 7) return 3;
  if (v >= 4) return 2;
  return v >= 2 ? 1 : 0;
}

gpu_fingerprint read_gpu_fingerprint(int device) {
  const device_scope scope(device);
  cudaDeviceProp prop{};
  HDB_CUDA_CALL(cudaGetDeviceProperties(&prop, device));
  int mem_clock_khz = 0;
  int sm_clock_khz = 0;
  HDB_CUDA_CALL(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, device));
  HDB_CUDA_CALL(cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, device));
  char bus_id[32] = {};
  HDB_CUDA_CALL(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device));
  const std::string uuid = format_uuid(prop.uuid);
  const int numa_node = read_pci_numa_node("/sys", bus_id);
  const std::string affinity = read_pci_attribute("/sys", bus_id, "local_cpulist");

  json gpu = {{"index", device},
              {"name", prop.name},
              {"uuid", uuid},
              {"pci_bus_id", bus_id},
              {"memory_bytes", prop.totalGlobalMem},
              {"sm_count", prop.multiProcessorCount},
              {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
              {"ecc_enabled", prop.ECCEnabled != 0},
              {"numa_node", numa_node},
              {"cpu_affinity", affinity.empty() ? json(nullptr) : json(affinity)},
              {"async_engine_count", prop.asyncEngineCount},
              // DDR: two transfers per memory clock, bus width in bits.
              {"hbm_peak_GBps", 2.0 * mem_clock_khz * 1e3 * (prop.memoryBusWidth / 8.0) / 1e9}};

  std::optional<smi_row> smi;
  bool load_failed = false;
  {
    const link_load load(device);
    usleep(200'000);  // let the link retrain to its working speed before reading it
    smi = query_smi(smi_fields, uuid);
    load_failed = load.failed();
  }
  const std::string load_note = load_failed ? " (load failed: idle reading)" : " (under load)";
  if (smi) {
    const smi_row& r = *smi;
    const auto mask = r.mask(smi_clock_event_reasons).value_or(0);
    gpu["pcie"] = {{"gen_current", number_or_null(r.text("pcie.link.gen.current"))},
                   {"gen_max", number_or_null(r.text("pcie.link.gen.max"))},
                   {"width_current", number_or_null(r.text("pcie.link.width.current"))},
                   {"width_max", number_or_null(r.text("pcie.link.width.max"))},
                   {"source", "nvidia-smi" + load_note}};
    gpu["clocks"] = {{"sm_mhz", number_or_null(r.text("clocks.sm"))},
                     {"sm_max_mhz", number_or_null(r.text("clocks.max.sm"))},
                     {"mem_mhz", number_or_null(r.text("clocks.mem"))},
                     {"mem_max_mhz", number_or_null(r.text("clocks.max.mem"))},
                     {"throttle_reasons", r.text(smi_clock_event_reasons)},
                     {"throttle_description", describe_clock_event_reasons(mask)},
                     {"power_draw_w", number_or_null(r.text("power.draw"))},
                     {"power_limit_w", number_or_null(r.text("power.limit"))},
                     {"temperature_c", number_or_null(r.text("temperature.gpu"))},
                     {"source", "nvidia-smi" + load_note}};
    gpu["persistence_mode"] = r.text("persistence_mode");
    gpu["ecc_mode"] = r.text("ecc.mode.current");
    gpu["driver_release"] = r.text("driver_version");
    if (const auto configuration = query_smi(smi_configuration_fields, uuid)) {
      gpu["vbios_version"] = configuration->text("vbios_version");
      gpu["mig_mode"] = configuration->text("mig.mode.current");  // "[N/A]" on a GPU without MIG
      gpu["clocks"]["applications_sm_mhz"] = number_or_null(configuration->text("clocks.applications.graphics"));
      gpu["clocks"]["applications_mem_mhz"] = number_or_null(configuration->text("clocks.applications.memory"));
    }
  } else {
    gpu["pcie"] = read_pcie_from_sysfs(bus_id);
    gpu["clocks"] = {{"sm_max_mhz", sm_clock_khz / 1000},
                     {"mem_max_mhz", mem_clock_khz / 1000},
                     {"source", "CUDA runtime attributes (peak clocks only; nvidia-smi unavailable)"}};
    gpu["persistence_mode"] = nullptr;
  }
  gpu["nvlink"] = read_nvlink(uuid, prop.major, prop.minor);
  if (gpu["nvlink"].is_null()) {
    gpu["nvlink"] = {{"links_active", nullptr}, {"per_link_GBps", nullptr}, {"source", "unavailable (nvidia-smi nvlink failed)"}};
  }
  return {gpu};
}

node_fingerprint read_node_fingerprint(bool include_gpus) {
  int driver = 0;
  int runtime = 0;
  HDB_CUDA_CALL(cudaDriverGetVersion(&driver));
  HDB_CUDA_CALL(cudaRuntimeGetVersion(&runtime));
  int count = 0;
  HDB_CUDA_CALL(cudaGetDeviceCount(&count));
  json node = {{"driver_version", version_text(driver)}, {"cuda_runtime", version_text(runtime)}};
  node["gpu_count"] = count;
  if (include_gpus) {
    node["gpus"] = json::array();
    for (int d = 0; d < count; ++d) node["gpus"].push_back(read_gpu_fingerprint(d).facts);
    node["driver_release"] = node["gpus"].empty() ? json(nullptr) : node["gpus"][0].value("driver_release", json(nullptr));
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  node["hostname"] = host;
  return {node};
}

std::vector<std::pair<std::string, std::string>> context_pairs(const nlohmann::json& node, const nlohmann::json& gpus) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const auto& [key, value] : node.items()) {
    if (key != "gpus") pairs.emplace_back("node." + key, text(value));
  }
  for (const auto& gpu : gpus) {
    const std::string prefix = "gpu." + text(gpu.value("index", json(-1))) + ".";
    for (const auto& [key, value] : gpu.items()) {
      if (value.is_object()) {
        for (const auto& [sub, v] : value.items()) pairs.emplace_back(prefix + key + "." + sub, text(v));
      } else {
        pairs.emplace_back(prefix + key, text(value));
      }
    }
  }
  return pairs;
}

}  // namespace hdb
