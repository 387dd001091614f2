#include "hdb/harness/data/gpu_activity.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "hdb/util/lists.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// The --query-gpu fields of an activity snapshot, in gpu_clock_state order.
const std::vector<std::string>& clock_fields() {
  static const std::vector<std::string> fields = {"index",      "uuid", "clocks.sm", "clocks.max.sm", "clocks.mem",
                                                  std::string(smi_clock_event_reasons), "temperature.gpu", "power.draw"};
  return fields;
}

gpu_clock_state clock_state(const smi_row& row) {
  gpu_clock_state g;
  if (const auto index = row.number("index")) g.index = static_cast<int>(*index);
  g.uuid = row.text("uuid");
  g.sm_mhz = row.number("clocks.sm");
  g.sm_max_mhz = row.number("clocks.max.sm");
  g.mem_mhz = row.number("clocks.mem");
  g.event_reasons = row.mask(smi_clock_event_reasons);
  g.temperature_c = row.number("temperature.gpu");
  g.power_w = row.number("power.draw");
  return g;
}

json optional_json(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }
json optional_json(const std::optional<unsigned long long>& value) { return value ? json(*value) : json(nullptr); }

// A counter as optional_json wrote it: a whole number, never negative; anything else is unknown.
std::optional<unsigned long long> json_counter(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<unsigned long long>();
}

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

void process_findings(const std::string& family, const activity_snapshot& snapshot, const char* moment,
                      const std::set<std::string>& measured, std::vector<std::string>& out) {
  std::map<std::pair<std::string, bool>, std::string> found;  // (uuid, hdbench?) -> "pid 42 python3 (2048 MiB), ..."
  for (const auto& p : snapshot.processes) {
    if (p.harness_own || (!measured.empty() && !measured.contains(p.gpu_uuid))) continue;
    auto& text = found[{p.gpu_uuid, is_hdbench_binary(p.name)}];
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
    if (!gpu.event_reasons || !clocks_held_back(*gpu.event_reasons)) continue;
    out.push_back(family + ": GPU " + gpu_text(&gpu, gpu.uuid) + " clocks held back " + moment + ": " +
                  mask_text(*gpu.event_reasons) + " (" + describe_clock_event_reasons(*gpu.event_reasons) + ")" +
                  (gpu.sm_mhz ? ", SM at " + mhz(*gpu.sm_mhz) : std::string()) +
                  (gpu.sm_max_mhz ? " of " + mhz(*gpu.sm_max_mhz) : std::string()));
  }
}

// Only a busy GPU's clock says something: an idle GPU drops its clock by design, and whether a
// reading was taken a moment after the previous family's work is chance.
bool busy(const gpu_clock_state& gpu) { return gpu.event_reasons && (*gpu.event_reasons & clock_event_gpu_idle) == 0; }

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
  for (std::string_view line : split_nonempty(csv, '\n')) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    const auto fields = split_list(line, ',');
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
  for (const auto& row : parse_smi_query(csv, clock_fields())) gpus.push_back(clock_state(row));
  return gpus;
}

std::vector<compute_process> device_file_holders(const std::filesystem::path& proc) {
  namespace fs = std::filesystem;
  std::vector<compute_process> holders;
  std::map<std::string, std::string> uuid_of_file;  // "/dev/nvidia0" -> "GPU-..."
  std::error_code ec;
  for (const auto& gpu : fs::directory_iterator(proc / "driver" / "nvidia" / "gpus", ec)) {
    const auto text = try_read_text_file(gpu.path() / "information");
    if (!text) continue;
    std::string minor, uuid;
    for (std::string_view line : split_nonempty(*text, '\n')) {
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const auto key = line.substr(0, colon);
      auto value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      if (key == "Device Minor") minor = value;
      if (key == "GPU UUID") uuid = value;
    }
    if (!minor.empty() && !uuid.empty()) uuid_of_file["/dev/nvidia" + minor] = uuid;
  }
  if (uuid_of_file.empty()) return holders;
  // comm is cut at 15 characters: nvidia-persistenced reads "nvidia-persiste".
  static const std::set<std::string> idle_daemons = {"nvidia-persiste", "nv-hostengine", "nvidia-smi"};
  for (const auto& entry : fs::directory_iterator(proc, ec)) {
    const auto pid_text = entry.path().filename().string();
    if (!all_digits(pid_text)) continue;
    std::set<std::string> gpus;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(entry.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const auto target = fs::read_symlink(fd.path(), link_ec);
      if (link_ec) continue;
      if (const auto it = uuid_of_file.find(target.string()); it != uuid_of_file.end()) gpus.insert(it->second);
    }
    if (gpus.empty()) continue;
    std::string name = try_read_text_file(entry.path() / "comm").value_or("?");
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (idle_daemons.contains(name)) continue;
    for (const auto& uuid : gpus) holders.push_back({std::stol(pid_text), name, uuid, std::nullopt, false});
  }
  return holders;
}

std::optional<std::pair<unsigned long long, unsigned long long>> parse_proc_stat_cpu(std::string_view stat) {
  for (std::string_view line : split_nonempty(stat, '\n')) {
    if (!line.starts_with("cpu ")) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice: guest time is already in
    // user and nice, so the total stops at steal.
    std::istringstream fields{std::string(line.substr(4))};
    unsigned long long total = 0, value = 0, steal = 0;
    int count = 0;
    while (count < 8 && fields >> value) {
      total += value;
      if (++count == 8) steal = value;
    }
    if (count < 8) return std::nullopt;  // not the line a kernel with steal time (2.6.11 on) writes
    return std::make_pair(total, steal);
  }
  return std::nullopt;
}

std::optional<unsigned long long> parse_pressure_some_total(std::string_view pressure) {
  for (std::string_view line : split_nonempty(pressure, '\n')) {
    if (!line.starts_with("some ")) continue;
    const auto at = line.find("total=");
    if (at == std::string_view::npos) return std::nullopt;
    unsigned long long total = 0;
    const auto* first = line.data() + at + 6;
    const auto* last = line.data() + line.size();
    if (const auto [end, error] = std::from_chars(first, last, total); error != std::errc{} || end == first) return std::nullopt;
    return total;
  }
  return std::nullopt;
}

host_cpu_counters read_host_cpu_counters(const std::filesystem::path& proc) {
  host_cpu_counters counters;
  if (const auto uptime = try_read_text_file(proc / "uptime")) {
    std::istringstream in(*uptime);
    if (double seconds = 0; in >> seconds) counters.uptime_s = seconds;
  }
  if (const auto stat = try_read_text_file(proc / "stat")) {
    if (const auto cpu = parse_proc_stat_cpu(*stat)) {
      counters.cpu_jiffies = cpu->first;
      counters.steal_jiffies = cpu->second;
    }
  }
  if (const auto pressure = try_read_text_file(proc / "pressure" / "cpu")) counters.cpu_stall_us = parse_pressure_some_total(*pressure);
  return counters;
}

host_load host_load_between(const host_cpu_counters& start, const host_cpu_counters& end) {
  host_load load;
  if (start.uptime_s && end.uptime_s) load.seconds = std::max(0.0, *end.uptime_s - *start.uptime_s);
  if (start.cpu_jiffies && end.cpu_jiffies && start.steal_jiffies && end.steal_jiffies && *end.cpu_jiffies > *start.cpu_jiffies &&
      *end.steal_jiffies >= *start.steal_jiffies) {
    load.steal_share = static_cast<double>(*end.steal_jiffies - *start.steal_jiffies) /
                       static_cast<double>(*end.cpu_jiffies - *start.cpu_jiffies);
  }
  if (start.cpu_stall_us && end.cpu_stall_us && *end.cpu_stall_us >= *start.cpu_stall_us && load.seconds > 0) {
    load.cpu_stall_share = static_cast<double>(*end.cpu_stall_us - *start.cpu_stall_us) / (load.seconds * 1e6);
  }
  return load;
}

activity_snapshot take_activity_snapshot(const std::vector<long>& own_pids) {
  activity_snapshot snapshot;
  snapshot.taken_utc = utc_timestamp(std::chrono::system_clock::now());
  // HDBENCH_PROC: the tests' stand-in for /proc, beside their stand-in nvidia-smi.
  const char* proc_override = std::getenv("HDBENCH_PROC");
  const std::filesystem::path proc = proc_override != nullptr && *proc_override != '\0' ? proc_override : "/proc";
  snapshot.host = read_host_cpu_counters(proc);
  const auto apps = run_nvidia_smi({"--query-compute-apps=pid,process_name,gpu_uuid,used_memory", "--format=csv,noheader,nounits"});
  if (!apps.text) {
    snapshot.error = apps.error;
    return snapshot;
  }
  const auto gpus = query_gpus(clock_fields());
  if (!gpus.error.empty()) {
    snapshot.error = gpus.error;
    return snapshot;
  }
  snapshot.available = true;
  snapshot.processes = parse_compute_apps(*apps.text);
  for (auto& holder : device_file_holders(proc)) {
    const bool listed = std::any_of(snapshot.processes.begin(), snapshot.processes.end(), [&](const compute_process& p) {
      return p.pid == holder.pid && p.gpu_uuid == holder.gpu_uuid;
    });
    if (!listed) snapshot.processes.push_back(std::move(holder));
  }
  for (auto& p : snapshot.processes) {
    p.harness_own = std::find(own_pids.begin(), own_pids.end(), p.pid) != own_pids.end();
  }
  for (const auto& row : gpus.gpus) snapshot.gpus.push_back(clock_state(row));
  return snapshot;
}

std::vector<gpu_link_counters> merge_link_counters(const std::vector<smi_pcie_replays>& pcie,
                                                   const std::vector<smi_nvlink_errors>& nvlink) {
  std::vector<gpu_link_counters> gpus;
  for (const auto& g : pcie) gpus.push_back({g.uuid, g.replays, g.rollovers, {}});
  for (const auto& g : nvlink) {
    if (g.uuid.empty()) continue;
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const auto& known) { return known.uuid == g.uuid; });
    if (it == gpus.end()) it = gpus.insert(gpus.end(), gpu_link_counters{g.uuid, {}, {}, {}});
    it->nvlink = g.counters;
  }
  return gpus;
}

link_health_snapshot link_health_from(const smi_output& query, const smi_output& nvlink) {
  link_health_snapshot snapshot;
  std::vector<smi_pcie_replays> pcie;
  if (query.text) {
    pcie = parse_pcie_replays(*query.text);
    snapshot.available = !pcie.empty();
    snapshot.error = pcie.empty() ? "nvidia-smi -q named no GPU" : "";
  } else {
    snapshot.error = query.error;
  }
  std::vector<smi_nvlink_errors> links;
  if (nvlink.text) {
    links = parse_nvlink_error_counters(*nvlink.text);
    snapshot.nvlink_available = true;
  } else {
    snapshot.nvlink_error = nvlink.error;
  }
  snapshot.gpus = merge_link_counters(pcie, links);
  return snapshot;
}

json to_json(const link_health_snapshot& s) {
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    json nvlink = json::array();
    for (const auto& c : g.nvlink) nvlink.push_back({{"link", c.link}, {"counter", c.name}, {"value", c.value}});
    gpus.push_back({{"uuid", g.uuid},
                    {"pcie_replays", optional_json(g.pcie_replays)},
                    {"pcie_replay_rollovers", optional_json(g.pcie_replay_rollovers)},
                    {"nvlink_errors", std::move(nvlink)}});
  }
  return {{"available", s.available},     {"error", s.error},         {"nvlink_available", s.nvlink_available},
          {"nvlink_error", s.nvlink_error}, {"taken_utc", s.taken_utc}, {"gpus", std::move(gpus)}};
}

link_health_snapshot link_health_snapshot_from_json(const json& j) {
  link_health_snapshot s;
  if (!j.is_object()) return s;
  s.available = j.value("available", false);
  s.error = json_text(j, "error");
  s.nvlink_available = j.value("nvlink_available", false);
  s.nvlink_error = json_text(j, "nvlink_error");
  s.taken_utc = json_text(j, "taken_utc");
  if (const auto it = j.find("gpus"); it != j.end() && it->is_array()) {
    for (const auto& g : *it) {
      if (!g.is_object()) continue;
      gpu_link_counters gpu{json_text(g, "uuid"), json_counter(g, "pcie_replays"), json_counter(g, "pcie_replay_rollovers"), {}};
      if (const auto links = g.find("nvlink_errors"); links != g.end() && links->is_array()) {
        for (const auto& c : *links) {
          const auto value = c.is_object() ? json_counter(c, "value") : std::nullopt;
          const auto link = c.is_object() ? json_number(c, "link") : std::nullopt;
          if (value && link) gpu.nvlink.push_back({static_cast<int>(*link), json_text(c, "counter"), *value});
        }
      }
      s.gpus.push_back(std::move(gpu));
    }
  }
  return s;
}

bool is_hdbench_binary(std::string_view name) {
  const auto slash = name.rfind('/');
  return name.substr(slash == std::string_view::npos ? 0 : slash + 1).starts_with("hdbench-");
}

std::vector<std::string> measured_gpu_uuids(const raw_family_output& output) {
  std::set<std::string> uuids;
  for (const auto& run : output.runs) {
    for (const auto& pair : split_list(run.label, ';')) {
      if (!pair.starts_with("gpu_uuid=")) continue;
      for (auto& uuid : split_nonempty(std::string_view(pair).substr(9))) uuids.insert(std::move(uuid));
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
          {"gpus", std::move(gpus)},
          {"host",
           {{"uptime_s", optional_json(s.host.uptime_s)},
            {"cpu_jiffies", optional_json(s.host.cpu_jiffies)},
            {"steal_jiffies", optional_json(s.host.steal_jiffies)},
            {"cpu_stall_us", optional_json(s.host.cpu_stall_us)}}}};
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
  if (const auto it = j.find("host"); it != j.end() && it->is_object()) {
    s.host.uptime_s = json_number(*it, "uptime_s");
    s.host.cpu_jiffies = json_counter(*it, "cpu_jiffies");
    s.host.steal_jiffies = json_counter(*it, "steal_jiffies");
    s.host.cpu_stall_us = json_counter(*it, "cpu_stall_us");
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

void activity_anomalies(const std::vector<result_row>& family_rows, const json& meta, std::vector<std::string>& out) {
  if (family_rows.empty() || !meta.is_object()) return;
  const auto& family = family_rows.front().family;
  const auto families = meta.find("families");
  if (families == meta.end() || !families->is_object()) return;
  const auto status = families->find(family);
  if (status == families->end() || !status->is_object() || !status->contains("activity")) return;
  const auto activity = family_activity_from_json((*status)["activity"]);
  const std::set<std::string> measured(activity.measured_gpus.begin(), activity.measured_gpus.end());
  process_findings(family, activity.start, "before the family started", measured, out);
  process_findings(family, activity.end, "after the family ended", measured, out);
  throttle_findings(family, activity.start, "before the family started", measured, out);
  throttle_findings(family, activity.end, "after the family ended", measured, out);
  clock_drop_findings(family, activity, measured, out);
}

}  // namespace hdb
