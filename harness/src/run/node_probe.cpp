#include "hdb/harness/run/node_probe.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "hdb/util/process.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<std::string> words(std::string_view text) {
  std::istringstream in{std::string(text)};
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// "key : value" lines of /proc/cpuinfo and /proc/meminfo.
std::vector<std::pair<std::string, std::string>> colon_pairs(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos) pairs.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return pairs;
}

json cpu_facts() {
  json cpu = {{"model", nullptr}, {"logical_cpus", ::sysconf(_SC_NPROCESSORS_ONLN)}, {"physical_cores", nullptr}};
  const auto text = try_read_text_file("/proc/cpuinfo");
  if (!text) return cpu;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string package;
  for (const auto& [key, value] : colon_pairs(*text)) {
    if (key == "model name" && cpu["model"].is_null()) cpu["model"] = value;
    if (key == "physical id") package = value;
    if (key == "core id") cores.emplace(package, value);
  }
  if (!cores.empty()) cpu["physical_cores"] = cores.size();
  return cpu;
}

json memory_bytes() {
  const auto text = try_read_text_file("/proc/meminfo");
  if (!text) return nullptr;
  for (const auto& [key, value] : colon_pairs(*text)) {
    if (key == "MemTotal") return std::stoull(value) * 1024;  // "123456 kB"
  }
  return nullptr;
}

std::optional<std::size_t> iommu_sysfs_entries() {
  std::error_code ec;
  fs::directory_iterator it("/sys/class/iommu", ec);
  if (ec) return std::nullopt;
  return static_cast<std::size_t>(std::distance(it, fs::directory_iterator()));
}

json probe_failure(std::string error) { return {{"gpus", json::array()}, {"error", std::move(error)}}; }

}  // namespace

iommu_state detect_iommu(std::optional<std::size_t> sysfs_entries, std::string_view kernel_cmdline) {
  const auto options = words(kernel_cmdline);
  const auto has = [&](std::string_view option) { return std::find(options.begin(), options.end(), option) != options.end(); };
  const std::string passthrough = has("iommu=pt") ? " (iommu=pt: passthrough for host devices)" : "";
  if (sysfs_entries && *sysfs_entries > 0) {
    return {true, "/sys/class/iommu has " + std::to_string(*sysfs_entries) + " entries" + passthrough};
  }
  for (const auto option : {"intel_iommu=on", "amd_iommu=on"}) {
    if (has(option)) return {true, std::string("kernel command line has ") + option + passthrough};
  }
  for (const auto option : {"intel_iommu=off", "amd_iommu=off", "iommu=off"}) {
    if (has(option)) return {false, std::string("kernel command line has ") + option};
  }
  if (sysfs_entries) return {false, "/sys/class/iommu is empty and the kernel command line enables no IOMMU"};
  return {std::nullopt, "/sys/class/iommu is unreadable and the kernel command line does not say"};
}

std::string os_pretty_name(std::string_view os_release) {
  std::istringstream in{std::string(os_release)};
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("PRETTY_NAME=")) continue;
    auto value = trim(line.substr(12));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) value = value.substr(1, value.size() - 2);
    return value;
  }
  return {};
}

json gather_host_facts() {
  utsname uts{};
  const bool have_uname = ::uname(&uts) == 0;
  const auto iommu = detect_iommu(iommu_sysfs_entries(), try_read_text_file("/proc/cmdline").value_or(""));
  json iommu_json = {{"enabled", nullptr}, {"evidence", iommu.evidence}};
  if (iommu.enabled) iommu_json["enabled"] = *iommu.enabled;
  // Slurm's name for this node where Slurm started the run (slurmd sets SLURMD_NODENAME in every
  // task): the name scontrol drains, which the hostname is not where they differ (an FQDN, several
  // slurmd on one host). hdbench fleet --nodelist prints it.
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  return {{"hostname", local_hostname()},
          {"slurm_node_name", slurm_node != nullptr && *slurm_node != '\0' ? json(slurm_node) : json(nullptr)},
          {"cpu", cpu_facts()},
          {"memory_bytes", memory_bytes()},
          {"os", os_pretty_name(try_read_text_file("/etc/os-release").value_or(""))},
          {"kernel", have_uname ? json(uts.release) : json(nullptr)},
          {"iommu", iommu_json}};
}

json run_probe(const fs::path& probe_binary) {
  if (!fs::exists(probe_binary)) return probe_failure("hdbench-probe not found: " + probe_binary.string());
  child_spec spec;
  spec.argv = {probe_binary.string()};
  spec.timeout = std::chrono::seconds(120);  // nvidia-smi can take long on a busy 8-GPU node
  const auto result = run_with_deadline(spec);
  if (!result.start_error.empty()) return probe_failure("hdbench-probe did not start: " + result.start_error);
  auto node = json::parse(result.output, nullptr, /*allow_exceptions=*/false);
  if (!node.is_object()) {
    const auto how = result.exit_code ? "exit code " + std::to_string(*result.exit_code) : std::string("killed or crashed");
    return probe_failure("hdbench-probe printed no JSON object (" + how + ")");
  }
  node["probe_exit_code"] = result.exit_code ? json(*result.exit_code) : json(nullptr);
  return node;
}

}  // namespace hdb
