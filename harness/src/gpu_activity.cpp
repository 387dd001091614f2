#include "hdb/harness/gpu_activity.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "hdb/harness/process.hpp"
#include "hdb/harness/results.hpp"
#include "hdb/harness/run_dir.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr unsigned long long reason_gpu_idle = 0x1;
constexpr auto smi_timeout = std::chrono::seconds(30);

// nvmlClocksEventReason* bits, in bit order.
constexpr std::array<std::pair<unsigned long long, std::string_view>, 9> reason_names = {{
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
}};

std::string trim(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const auto end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const auto at = text.find(separator, begin);
    parts.push_back(trim(text.substr(begin, at == std::string_view::npos ? std::string_view::npos : at - begin)));
    if (at == std::string_view::npos) return parts;
    begin = at + 1;
  }
}

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  for (auto& line : split(text, '\n')) {
    if (!line.empty()) out.push_back(std::move(line));
  }
  return out;
}

// "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]" and anything else that is not a whole
// number read as unknown.
std::optional<double> smi_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::optional<unsigned long long> smi_mask(const std::string& text) {
  if (!text.starts_with("0x") || text.size() == 2) return std::nullopt;
  char* end = nullptr;
  const auto value = std::strtoull(text.c_str() + 2, &end, 16);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

std::optional<fs::path> find_in_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (const auto& dir : split(path, ':')) {
    if (dir.empty()) continue;
    const auto candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

struct smi_output {
  std::optional<std::string> text;
  std::string error;
};

smi_output run_smi(const fs::path& smi, const std::vector<std::string>& arguments) {
  process_spec spec;
  spec.argv = {smi.string()};
  spec.argv.insert(spec.argv.end(), arguments.begin(), arguments.end());
  spec.timeout = smi_timeout;
  const auto result = run_process(spec);
  if (result.end == process_end::exited && result.exit_code == 0) return {result.output, {}};
  std::string how = !result.start_error.empty() ? "did not start: " + result.start_error
                    : result.end == process_end::timed_out ? "timed out"
                    : result.exit_code ? "exit code " + std::to_string(*result.exit_code)
                                       : "killed by signal " + std::to_string(result.signal.value_or(0));
  return {std::nullopt, "nvidia-smi " + arguments.front() + " failed (" + how + ")"};
}

json optional_json(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

std::optional<double> json_number(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string json_text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string mask_text(unsigned long long mask) {
  std::ostringstream out;
  out << "0x" << std::hex << mask;
  return out.str();
}

std::string mhz(double value) { return format_value(value) + " MHz"; }

// "GPU-5a1b... (nvidia-smi index 0)" or the UUID alone.
std::string gpu_text(const gpu_clock_state* gpu, const std::string& uuid) {
  if (gpu != nullptr && gpu->index) return uuid + " (nvidia-smi index " + std::to_string(*gpu->index) + ")";
  return uuid;
}

const gpu_clock_state* find_gpu(const activity_snapshot& snapshot, const std::string& uuid) {
  const auto it = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const auto& g) { return g.uuid == uuid; });
  return it == snapshot.gpus.end() ? nullptr : &*it;
}

// A family binary of hdbench itself ("/opt/hdbench/bin/hdbench-copy"): it holds the per-GPU lock
// while it has a context there, so it and this family did not measure at the same time.
bool hdbench_binary(const std::string& name) {
  const auto slash = name.rfind('/');
  return std::string_view(name).substr(slash == std::string::npos ? 0 : slash + 1).starts_with("hdbench-");
}

void process_findings(const std::string& family, const activity_snapshot& snapshot, const char* moment,
                      const std::set<std::string>& measured, std::vector<std::string>& out) {
  std::map<std::pair<std::string, bool>, std::string> found;  // (uuid, hdbench?) -> "pid 42 python3 (2048 MiB), ..."
  for (const auto& p : snapshot.processes) {
    if (p.harness_own || (!measured.empty() && !measured.contains(p.gpu_uuid))) continue;
    auto& text = found[{p.gpu_uuid, hdbench_binary(p.name)}];
    text += (text.empty() ? "" : ", ") + ("pid " + std::to_string(p.pid) + " " + p.name);
    if (p.used_memory_mib) text += " (" + format_value(*p.used_memory_mib) + " MiB)";
  }
  for (const auto& [key, text] : found) {
    const auto& [uuid, hdbench] = key;
    const auto gpu = gpu_text(find_gpu(snapshot, uuid), uuid);
    if (hdbench) {
      out.push_back(family + ": another hdbench run used GPU " + gpu + " " + moment + ": " + text +
                    " (the per-GPU lock keeps hdbench binaries from measuring at the same time; this family may "
                    "have waited for it)");
    } else {
      out.push_back(family + ": another process used GPU " + gpu + " " + moment + ": " + text +
                    " (numbers measured while it ran are not this GPU's alone)");
    }
  }
}

void throttle_findings(const std::string& family, const activity_snapshot& snapshot, const char* moment,
                       const std::set<std::string>& measured, std::vector<std::string>& out) {
  for (const auto& gpu : snapshot.gpus) {
    if (!measured.empty() && !measured.contains(gpu.uuid)) continue;
    if (!gpu.event_reasons || (*gpu.event_reasons & ~reason_gpu_idle) == 0) continue;
    out.push_back(family + ": GPU " + gpu_text(&gpu, gpu.uuid) + " clocks held back " + moment + ": " +
                  mask_text(*gpu.event_reasons) + " (" + describe_clock_event_reasons(*gpu.event_reasons) + ")" +
                  (gpu.sm_mhz ? ", SM at " + mhz(*gpu.sm_mhz) : std::string()) +
                  (gpu.sm_max_mhz ? " of " + mhz(*gpu.sm_max_mhz) : std::string()));
  }
}

// Only a busy GPU's clock says something: an idle GPU drops its clock by design, and whether a
// reading was taken a moment after the previous family's work is chance.
bool busy(const gpu_clock_state& gpu) { return gpu.event_reasons && (*gpu.event_reasons & reason_gpu_idle) == 0; }

void clock_drop_findings(const std::string& family, const family_activity& activity,
                         const std::set<std::string>& measured, std::vector<std::string>& out) {
  if (!activity.start.available || !activity.end.available) return;
  for (const auto& before : activity.start.gpus) {
    if (!measured.empty() && !measured.contains(before.uuid)) continue;
    const auto* after = find_gpu(activity.end, before.uuid);
    if (after == nullptr || !before.sm_mhz || !after->sm_mhz || !busy(before) || !busy(*after)) continue;
    if (*after->sm_mhz < *before.sm_mhz * (1 - activity_clock_drop_limit)) {
      out.push_back(family + ": GPU " + gpu_text(after, before.uuid) + " SM clock fell from " + mhz(*before.sm_mhz) +
                    " before the family started to " + mhz(*after->sm_mhz) + " after it ended");
    }
  }
}

}  // namespace

std::vector<compute_process> parse_compute_apps(std::string_view csv) {
  std::vector<compute_process> processes;
  for (const auto& line : lines(csv)) {
    const auto fields = split(line, ',');
    if (fields.size() < 4) continue;
    compute_process p;
    const auto pid = smi_number(fields.front());
    if (!pid || *pid <= 0) continue;
    p.pid = static_cast<long>(*pid);
    std::string name = fields[1];
    for (std::size_t i = 2; i + 2 < fields.size(); ++i) name += "," + fields[i];
    p.name = name;
    p.gpu_uuid = fields[fields.size() - 2];
    p.used_memory_mib = smi_number(fields.back());
    processes.push_back(std::move(p));
  }
  return processes;
}

std::vector<gpu_clock_state> parse_gpu_clock_states(std::string_view csv) {
  std::vector<gpu_clock_state> gpus;
  for (const auto& line : lines(csv)) {
    const auto f = split(line, ',');
    if (f.size() != 8) continue;
    gpu_clock_state g;
    if (const auto index = smi_number(f[0])) g.index = static_cast<int>(*index);
    g.uuid = f[1];
    g.sm_mhz = smi_number(f[2]);
    g.sm_max_mhz = smi_number(f[3]);
    g.mem_mhz = smi_number(f[4]);
    g.event_reasons = smi_mask(f[5]);
    g.temperature_c = smi_number(f[6]);
    g.power_w = smi_number(f[7]);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string describe_clock_event_reasons(unsigned long long mask) {
  std::string text;
  for (const auto& [bit, name] : reason_names) {
    if ((mask & bit) != 0) text += (text.empty() ? "" : ",") + std::string(name);
  }
  const unsigned long long known = 0x1ff;
  if ((mask & ~known) != 0) text += (text.empty() ? "" : ",") + ("unknown " + mask_text(mask & ~known));
  return text.empty() ? "none" : text;
}

activity_snapshot take_activity_snapshot(const std::vector<long>& own_pids) {
  activity_snapshot snapshot;
  snapshot.taken_utc = utc_timestamp(std::chrono::system_clock::now());
  const auto smi = find_in_path("nvidia-smi");
  if (!smi) {
    snapshot.error = "nvidia-smi not found in PATH";
    return snapshot;
  }
  const std::string csv = "--format=csv,noheader,nounits";
  const auto apps = run_smi(*smi, {"--query-compute-apps=pid,process_name,gpu_uuid,used_memory", csv});
  // Drivers before 535 call the reason mask clocks_throttle_reasons and refuse the new name.
  smi_output gpus;
  for (const char* reasons : {"clocks_event_reasons.active", "clocks_throttle_reasons.active"}) {
    gpus = run_smi(*smi, {std::string("--query-gpu=index,uuid,clocks.sm,clocks.max.sm,clocks.mem,") + reasons +
                              ",temperature.gpu,power.draw",
                          csv});
    if (gpus.text) break;
  }
  if (!apps.text || !gpus.text) {
    snapshot.error = !apps.text ? apps.error : gpus.error;
    return snapshot;
  }
  snapshot.available = true;
  snapshot.processes = parse_compute_apps(*apps.text);
  for (auto& p : snapshot.processes) {
    p.harness_own = std::find(own_pids.begin(), own_pids.end(), p.pid) != own_pids.end();
  }
  snapshot.gpus = parse_gpu_clock_states(*gpus.text);
  return snapshot;
}

std::vector<std::string> measured_gpu_uuids(const raw_family_output& output) {
  std::set<std::string> uuids;
  for (const auto& run : output.runs) {
    for (const auto& pair : split(run.label, ';')) {
      if (!pair.starts_with("gpu_uuid=")) continue;
      for (const auto& uuid : split(pair.substr(9), ',')) {
        if (!uuid.empty()) uuids.insert(uuid);
      }
    }
  }
  // Schema 2 context names each measured GPU as gpu.<index>.uuid; schema 1 had one gpu.uuid.
  if (output.context.is_object()) {
    for (const auto& [key, value] : output.context.items()) {
      if (key.starts_with("gpu.") && key.ends_with(".uuid") && value.is_string() && !value.get<std::string>().empty()) {
        uuids.insert(value.get<std::string>());
      }
    }
  }
  return {uuids.begin(), uuids.end()};
}

json to_json(const activity_snapshot& s) {
  json processes = json::array();
  for (const auto& p : s.processes) {
    processes.push_back({{"pid", p.pid},
                         {"name", p.name},
                         {"gpu_uuid", p.gpu_uuid},
                         {"used_memory_mib", optional_json(p.used_memory_mib)},
                         {"harness_own", p.harness_own}});
  }
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    gpus.push_back({{"index", g.index ? json(*g.index) : json(nullptr)},
                    {"uuid", g.uuid},
                    {"sm_mhz", optional_json(g.sm_mhz)},
                    {"sm_max_mhz", optional_json(g.sm_max_mhz)},
                    {"mem_mhz", optional_json(g.mem_mhz)},
                    {"clock_event_reasons", g.event_reasons ? json(mask_text(*g.event_reasons)) : json(nullptr)},
                    {"clock_event_description",
                     g.event_reasons ? json(describe_clock_event_reasons(*g.event_reasons)) : json(nullptr)},
                    {"temperature_c", optional_json(g.temperature_c)},
                    {"power_w", optional_json(g.power_w)}});
  }
  return {{"available", s.available},
          {"error", s.error},
          {"taken_utc", s.taken_utc},
          {"processes", std::move(processes)},
          {"gpus", std::move(gpus)}};
}

json to_json(const family_activity& a) {
  return {{"start", to_json(a.start)}, {"end", to_json(a.end)}, {"measured_gpus", a.measured_gpus}};
}

activity_snapshot activity_snapshot_from_json(const json& j) {
  activity_snapshot s;
  if (!j.is_object()) return s;
  s.available = j.value("available", false);
  s.error = json_text(j, "error");
  s.taken_utc = json_text(j, "taken_utc");
  if (const auto it = j.find("processes"); it != j.end() && it->is_array()) {
    for (const auto& p : *it) {
      if (!p.is_object()) continue;
      compute_process process;
      process.pid = static_cast<long>(json_number(p, "pid").value_or(0));
      process.name = json_text(p, "name");
      process.gpu_uuid = json_text(p, "gpu_uuid");
      process.used_memory_mib = json_number(p, "used_memory_mib");
      process.harness_own = p.value("harness_own", false);
      s.processes.push_back(std::move(process));
    }
  }
  if (const auto it = j.find("gpus"); it != j.end() && it->is_array()) {
    for (const auto& g : *it) {
      if (!g.is_object()) continue;
      gpu_clock_state gpu;
      if (const auto index = json_number(g, "index")) gpu.index = static_cast<int>(*index);
      gpu.uuid = json_text(g, "uuid");
      gpu.sm_mhz = json_number(g, "sm_mhz");
      gpu.sm_max_mhz = json_number(g, "sm_max_mhz");
      gpu.mem_mhz = json_number(g, "mem_mhz");
      gpu.event_reasons = smi_mask(json_text(g, "clock_event_reasons"));
      gpu.temperature_c = json_number(g, "temperature_c");
      gpu.power_w = json_number(g, "power_w");
      s.gpus.push_back(std::move(gpu));
    }
  }
  return s;
}

family_activity family_activity_from_json(const json& j) {
  family_activity a;
  if (!j.is_object()) return a;
  a.start = activity_snapshot_from_json(j.value("start", json()));
  a.end = activity_snapshot_from_json(j.value("end", json()));
  if (const auto it = j.find("measured_gpus"); it != j.end() && it->is_array()) {
    for (const auto& uuid : *it) {
      if (uuid.is_string()) a.measured_gpus.push_back(uuid.get<std::string>());
    }
  }
  return a;
}

std::vector<std::string> activity_anomalies(const json& meta) {
  std::vector<std::string> out;
  const auto families = meta.is_object() ? meta.find("families") : meta.end();
  if (!meta.is_object() || families == meta.end() || !families->is_object()) return out;
  for (const auto& [family, status] : families->items()) {
    if (!status.is_object() || !status.contains("activity")) continue;
    const auto activity = family_activity_from_json(status["activity"]);
    const std::set<std::string> measured(activity.measured_gpus.begin(), activity.measured_gpus.end());
    process_findings(family, activity.start, "before the family started", measured, out);
    process_findings(family, activity.end, "after the family ended", measured, out);
    throttle_findings(family, activity.start, "before the family started", measured, out);
    throttle_findings(family, activity.end, "after the family ended", measured, out);
    clock_drop_findings(family, activity, measured, out);
  }
  return out;
}

}  // namespace hdb
