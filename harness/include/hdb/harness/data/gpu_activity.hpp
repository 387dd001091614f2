#pragma once
// What else was happening on the GPUs around each family: other compute processes, clocks and
// the driver's clock event (throttle) reasons, read with nvidia-smi just before a family starts
// and just after it ends. Another process on a measured GPU, a throttled clock or an SM clock
// that fell while the family ran become anomalies in report.md. Without nvidia-smi the activity
// is recorded as unknown, which is not an error. Beside them, how busy the host's own CPUs were
// (host_cpu_counters, from /proc), which check states in a note.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/raw_json.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/util/nvidia_smi.hpp"  // the runner, describe_clock_event_reasons

namespace hdb {

struct compute_process {
  long pid = 0;
  std::string name;
  std::string gpu_uuid;
  std::optional<double> used_memory_mib;
  bool harness_own = false;  // this harness or the family it runs: not "another process"
};

struct gpu_clock_state {
  std::optional<int> index;
  std::string uuid;
  std::optional<double> sm_mhz;
  std::optional<double> sm_max_mhz;
  std::optional<double> mem_mhz;
  std::optional<unsigned long long> event_reasons;  // the nvidia-smi "clocks_event_reasons.active" bit mask
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};

// How busy the host itself was, as cumulative counters read at one moment: /proc/stat's CPU time
// and its steal (time the hypervisor ran something else while this machine's CPUs had work), and
// PSI's CPU "some" stall (time a runnable task here waited for a CPU), against /proc/uptime. Two
// readings give the shares of a family's time (host_load_between). Unknown where /proc does not
// say (no PSI in the kernel, no /proc at all).
struct host_cpu_counters {
  std::optional<double> uptime_s;
  std::optional<unsigned long long> cpu_jiffies;  // every field of the "cpu" line but guest and guest_nice (inside user and nice)
  std::optional<unsigned long long> steal_jiffies;
  std::optional<unsigned long long> cpu_stall_us;  // /proc/pressure/cpu "some ... total="
};

struct activity_snapshot {
  bool available = false;  // false: nvidia-smi missing or failing; `error` says which
  std::string error;
  std::string taken_utc;
  std::vector<compute_process> processes;
  std::vector<gpu_clock_state> gpus;
  host_cpu_counters host;  // read whether or not nvidia-smi answered
};

// Activity around one family run.
struct family_activity {
  activity_snapshot start;
  activity_snapshot end;
  // UUIDs of the GPUs the family measured (from its result labels and context); empty when the
  // output does not say, and then every GPU of the node counts as measured.
  std::vector<std::string> measured_gpus;
};

// The error counters of one GPU's links: PCIe replays (nvidia-smi -q) and every NVLink counter
// (nvidia-smi nvlink -e). Read at the start and at the end of a run (meta.json "health"), so
// that `hdbench check` can tell a link that had to retry while the run measured it.
struct gpu_link_counters {
  std::string uuid;
  std::optional<unsigned long long> pcie_replays;
  std::optional<unsigned long long> pcie_replay_rollovers;
  std::vector<smi_nvlink_counter> nvlink;  // empty: no NVLink, or its counters were not read
};

struct link_health_snapshot {
  bool available = false;  // nvidia-smi -q answered; `error` says why not
  std::string error;
  bool nvlink_available = false;  // nvidia-smi nvlink -e answered; `nvlink_error` says why not
  std::string nvlink_error;
  std::string taken_utc;
  std::vector<gpu_link_counters> gpus;
};

// The two readings merged by GPU UUID (pcie: parse_pcie_replays, nvlink:
// parse_nvlink_error_counters); a GPU only in the NVLink text keeps unknown PCIe counters.
[[nodiscard]] std::vector<gpu_link_counters> merge_link_counters(const std::vector<smi_pcie_replays>& pcie,
                                                                 const std::vector<smi_nvlink_errors>& nvlink);

// The counters from the answers of `nvidia-smi -q` and `nvidia-smi nvlink -e` (every GPU at once;
// take_health_snapshot, gpu_health.hpp, runs them); taken_utc is the caller's.
[[nodiscard]] link_health_snapshot link_health_from(const smi_output& query, const smi_output& nvlink);

[[nodiscard]] nlohmann::json to_json(const link_health_snapshot& snapshot);
// Tolerant, as activity_snapshot_from_json.
[[nodiscard]] link_health_snapshot link_health_snapshot_from_json(const nlohmann::json& object);

// Rows of `nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory
// --format=csv,noheader,nounits`. "[N/A]", "[Not Supported]" and "N/A" read as unknown. A line
// that does not have the four fields is skipped. A process name may contain commas: the fields
// are taken from both ends.
[[nodiscard]] std::vector<compute_process> parse_compute_apps(std::string_view csv);

// Rows of `nvidia-smi --query-gpu=index,uuid,clocks.sm,clocks.max.sm,clocks.mem,
// clocks_event_reasons.active,temperature.gpu,power.draw --format=csv,noheader,nounits`.
// Lines with a different number of fields are skipped.
[[nodiscard]] std::vector<gpu_clock_state> parse_gpu_clock_states(std::string_view csv);

// The processes that hold a GPU's device file (/dev/nvidia<minor>) open, from `proc`
// (/proc: driver/nvidia/gpus/*/information maps each minor to its GPU UUID, <pid>/fd/* and
// <pid>/comm name the holders). Every CUDA process opens the device files of the GPUs it sees, so
// this names a co-tenant where nvidia-smi lists no compute process, as inside a container, whose
// PID namespace nvidia-smi cannot map. Daemons that hold the files without computing
// (nvidia-persistenced, DCGM's nv-hostengine, nvidia-smi) are left out;
// used_memory_mib is unknown. Unreadable entries are skipped. Never throws.
[[nodiscard]] std::vector<compute_process> device_file_holders(const std::filesystem::path& proc = "/proc");

// The counters from `proc` (/proc, or the tests' stand-in). Never throws.
[[nodiscard]] host_cpu_counters read_host_cpu_counters(const std::filesystem::path& proc);
// The "cpu" line of /proc/stat: {all CPU time, steal} in jiffies; nullopt: no such line.
[[nodiscard]] std::optional<std::pair<unsigned long long, unsigned long long>> parse_proc_stat_cpu(std::string_view stat);
// The "some" line's total= of a /proc/pressure file, in microseconds; nullopt: none.
[[nodiscard]] std::optional<unsigned long long> parse_pressure_some_total(std::string_view pressure);

// Shares of the time between two readings: steal of all CPU time, and the time some task waited
// for a CPU; each nullopt where either reading lacks it or no time passed.
struct host_load {
  double seconds = 0;
  std::optional<double> steal_share;
  std::optional<double> cpu_stall_share;
};
[[nodiscard]] host_load host_load_between(const host_cpu_counters& start, const host_cpu_counters& end);

// Runs both nvidia-smi queries (run_nvidia_smi, query_gpus) and adds the device file holders
// nvidia-smi did not list. Processes whose pid is in `own_pids` are marked harness_own. Never throws.
[[nodiscard]] activity_snapshot take_activity_snapshot(const std::vector<long>& own_pids);

// A family binary of hdbench itself ("/opt/hdbench/bin/hdbench-copy"): it holds the per-GPU lock
// while it has a context there, so it and a family of this run did not measure at the same time.
[[nodiscard]] bool is_hdbench_binary(std::string_view process_name);

// The UUIDs a family's output names: gpu_uuid= labels (comma-separated for multi-GPU cases) and
// the context's gpu.<index>.uuid (gpu.uuid before schema 2). Sorted, no duplicates.
[[nodiscard]] std::vector<std::string> measured_gpu_uuids(const raw_family_output& output);

[[nodiscard]] nlohmann::json to_json(const activity_snapshot& snapshot);
[[nodiscard]] nlohmann::json to_json(const family_activity& activity);
// Tolerant: a missing or mistyped field reads as unknown (status files outlive versions).
[[nodiscard]] activity_snapshot activity_snapshot_from_json(const nlohmann::json& object);
[[nodiscard]] family_activity family_activity_from_json(const nlohmann::json& object);

// The report rule of the GPU activity around one family's run, in the shape of every anomaly
// rule (family_rules::anomalies): `family_rows` are one family's rows, and the activity is
// meta["families"][<family>]["activity"]. report.cpp's find_anomalies passes every family's rows
// through it right after the family's own rules. One line per finding: another process on a
// measured GPU (at the start or the end of the family), a measured GPU whose clocks were held
// back by anything but idleness, and an SM clock that fell by more than
// activity_clock_drop_limit between the start and the end while the GPU was busy at both. A
// family without activity adds nothing.
void activity_anomalies(const std::vector<result_row>& family_rows, const nlohmann::json& meta,
                        std::vector<std::string>& out);

// A busy GPU's SM clock may wander by a few percent; more than this is reported.
inline constexpr double activity_clock_drop_limit = 0.10;

}  // namespace hdb
