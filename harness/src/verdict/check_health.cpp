// hdbench check, the node's health: what meta.json recorded about the GPUs' links, clocks and
// neighbours, each cause a line naming the GPU and its evidence (docs/harness.md, `check`).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/util/nvidia_smi.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// Clock event reasons that mean the GPU ran slower than it can for a fault of the node (cooling,
// power delivery, an external slowdown signal): FAIL. A software power cap or application clocks
// below the maximum are the node's configuration: WARN. Idle, sync boost and display clocks say
// nothing about the measurement.
constexpr unsigned long long throttle_fail_bits = 0x8 | 0x20 | 0x40 | 0x80;  // hw_slowdown, sw/hw thermal, power brake
constexpr unsigned long long throttle_warn_bits = 0x4 | 0x2;                  // sw_power_cap, applications clocks


std::optional<int> whole(const json& value) {
  if (!value.is_number()) return std::nullopt;
  return static_cast<int>(std::lround(value.get<double>()));
}

std::string hex(unsigned long long mask) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", mask);
  return text;
}

// One GPU of meta.json node.gpus: its CUDA index and UUID.
struct node_gpu {
  int index = 0;
  std::string uuid;
  const json* record = nullptr;
};

std::vector<node_gpu> node_gpus(const json& meta) {
  std::vector<node_gpu> gpus;
  const auto& list = field(field(meta, "node"), "gpus");
  if (!list.is_array()) return gpus;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& g = list[i];
    gpus.push_back({whole(field(g, "index")).value_or(static_cast<int>(i)), field(g, "uuid").is_string() ? g["uuid"].get<std::string>() : "",
                    &g});
  }
  return gpus;
}

std::string link_text(const std::optional<int>& gen, const std::optional<int>& width) {
  return "Gen" + (gen ? std::to_string(*gen) : std::string("?")) + " x" + (width ? std::to_string(*width) : std::string("?"));
}

void pcie_link(const node_gpu& gpu, const node_kind* kind, std::size_t position, std::vector<graded_line>& out) {
  const auto& pcie = field(*gpu.record, "pcie");
  const auto gen = whole(field(pcie, "gen_current")), gen_max = whole(field(pcie, "gen_max"));
  const auto width = whole(field(pcie, "width_current")), width_max = whole(field(pcie, "width_max"));
  const std::string source = field(pcie, "source").is_string() ? pcie["source"].get<std::string>() : "";
  const auto reading = link_text(gen, width);
  if (!gen || !width || !gen_max || !width_max) {
    out.push_back(health_line(grade::warn, {gpu.index}, "PCIe link", reading, "link generation or width not recorded by the fingerprint"));
    return;
  }
  const bool under_load = source.find("under load") != std::string::npos;
  if (kind != nullptr && position < kind->pcie.size()) {
    const auto& expected = kind->pcie[position];
    if ((expected.gen_max && *gen_max < *expected.gen_max) || (expected.width_max && *width_max < *expected.width_max)) {
      out.push_back(health_line(grade::fail, {gpu.index}, "PCIe link", reading,
                                "the link's maximum is " + link_text(gen_max, width_max) + ", below this kind's " +
                                    link_text(expected.gen_max, expected.width_max) +
                                    ": the slot, riser or firmware limits it"));
      return;
    }
  }
  if (*gen < *gen_max || *width < *width_max) {
    if (under_load) {
      out.push_back(health_line(grade::fail, {gpu.index}, "PCIe link", reading,
                                "trained below its maximum " + link_text(gen_max, width_max) + " while copying (" + source + ")"));
    } else {
      out.push_back(health_line(grade::warn, {gpu.index}, "PCIe link", reading,
                                "below its maximum " + link_text(gen_max, width_max) + ", read without load (" +
                                    (source.empty() ? "source unknown" : source) +
                                    "): an idle link trains down to save power, so this is not judged"));
    }
    return;
  }
  out.push_back(health_line(grade::pass, {gpu.index}, "PCIe link", reading,
                            "at its maximum" + (under_load ? " under load" : std::string()) +
                                (source.empty() ? std::string() : " (" + source + ")")));
}

const gpu_link_counters* counters_of(const link_health_snapshot& snapshot, const std::string& uuid) {
  const auto it = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const auto& g) { return g.uuid == uuid; });
  return it == snapshot.gpus.end() ? nullptr : &*it;
}

void pcie_replays(const node_gpu& gpu, const link_health_snapshot& start, const link_health_snapshot& end,
                  std::vector<graded_line>& out) {
  const auto* before = counters_of(start, gpu.uuid);
  const auto* after = counters_of(end, gpu.uuid);
  if (before == nullptr || after == nullptr || !before->pcie_replays || !after->pcie_replays) {
    out.push_back(health_line(grade::warn, {gpu.index}, "PCIe replays", "not read",
                              "nvidia-smi -q printed no 'Replays Since Reset' for this GPU at the run's start and end"));
    return;
  }
  const auto reading = std::to_string(*before->pcie_replays) + " -> " + std::to_string(*after->pcie_replays);
  const bool rolled = before->pcie_replay_rollovers && after->pcie_replay_rollovers &&
                      *after->pcie_replay_rollovers > *before->pcie_replay_rollovers;
  if (*after->pcie_replays > *before->pcie_replays || rolled) {
    out.push_back(health_line(
        grade::fail, {gpu.index}, "PCIe replays", reading,
        "the link resent packets while hdbench measured it (nvidia-smi -q 'Replays Since Reset'" +
            std::string(rolled ? ", and 'Replay Number Rollovers' grew" : "") + ", " + start.taken_utc + " to " +
            end.taken_utc + "): a marginal slot, riser or cable"));
    return;
  }
  out.push_back(health_line(grade::pass, {gpu.index}, "PCIe replays", reading, "none during the run (" + start.taken_utc + " to " + end.taken_utc + ")"));
}

// `start`/`end` nullptr: the run recorded no link counters (its "health not read" line says so).
void nvlinks(const node_gpu& gpu, const node_kind* kind, std::size_t position, const link_health_snapshot* start,
             const link_health_snapshot* end, std::vector<graded_line>& out) {
  const auto active = whole(field(field(*gpu.record, "nvlink"), "links_active"));
  const int have = active.value_or(0);
  // -1: no reference kind to hold the count to
  const int expected = kind != nullptr && position < kind->nvlinks.size() ? kind->nvlinks[position].value_or(0) : -1;
  if (have == 0 && expected <= 0) return;  // a PCIe-only GPU
  const auto reading = (active ? std::to_string(have) : std::string("?")) + " active";
  if (have < expected) {
    out.push_back(health_line(grade::fail, {gpu.index}, "NVLinks", reading,
                              "fewer than this kind's " + std::to_string(expected) + ": " + std::to_string(expected - have) +
                                  " link(s) down"));
  } else if (expected < 0) {
    out.push_back(health_line(grade::not_graded, {gpu.index}, "NVLinks", reading, "no reference kind to hold the count to"));
  } else {
    out.push_back(health_line(grade::pass, {gpu.index}, "NVLinks", reading, "as this kind has"));
  }
  if (start == nullptr || end == nullptr) return;
  if (!start->nvlink_available || !end->nvlink_available) {
    out.push_back(health_line(grade::warn, {gpu.index}, "NVLink errors", "not read",
                              "nvidia-smi nvlink -e: " + (start->nvlink_available ? end->nvlink_error : start->nvlink_error)));
    return;
  }
  const auto* before = counters_of(*start, gpu.uuid);
  const auto* after = counters_of(*end, gpu.uuid);
  if (before == nullptr || after == nullptr || after->nvlink.empty()) {
    out.push_back(health_line(grade::warn, {gpu.index}, "NVLink errors", "not read",
                              "nvidia-smi nvlink -e printed no counters for this GPU"));
    return;
  }
  std::string grown;
  for (const auto& counter : after->nvlink) {
    const auto was = std::find_if(before->nvlink.begin(), before->nvlink.end(), [&](const smi_nvlink_counter& c) {
      return c.link == counter.link && c.name == counter.name;
    });
    const unsigned long long old_value = was == before->nvlink.end() ? 0 : was->value;
    if (counter.value > old_value) {
      grown += (grown.empty() ? "" : ", ") + ("link " + std::to_string(counter.link) + " " + counter.name + " " +
                                             std::to_string(old_value) + " -> " + std::to_string(counter.value));
    }
  }
  if (!grown.empty()) {
    out.push_back(health_line(grade::fail, {gpu.index}, "NVLink errors", "grew",
                              grown + " during the run (nvidia-smi nvlink -e)"));
  } else {
    out.push_back(health_line(grade::pass, {gpu.index}, "NVLink errors", "none grew",
                              std::to_string(after->nvlink.size()) + " counters read at the run's start and end"));
  }
}

struct family_moment {
  std::string family;
  family_activity activity;
};

std::vector<family_moment> activities(const json& meta) {
  std::vector<family_moment> out;
  const auto& families = field(meta, "families");
  if (!families.is_object()) return out;
  for (const auto& [name, status] : families.items()) {
    if (status.is_object() && status.contains("activity")) out.push_back({name, family_activity_from_json(status["activity"])});
  }
  return out;
}

bool measured(const family_activity& activity, const std::string& uuid) {
  return activity.measured_gpus.empty() ||
         std::find(activity.measured_gpus.begin(), activity.measured_gpus.end(), uuid) != activity.measured_gpus.end();
}

const gpu_clock_state* clock_of(const activity_snapshot& snapshot, const std::string& uuid) {
  const auto it = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const auto& g) { return g.uuid == uuid; });
  return it == snapshot.gpus.end() ? nullptr : &*it;
}

std::string clock_text(unsigned long long mask, const gpu_clock_state* gpu) {
  std::string text = hex(mask) + " (" + describe_clock_event_reasons(mask) + ")";
  if (gpu != nullptr && gpu->sm_mhz) {
    text += ", SM at " + format_value(*gpu->sm_mhz) + " MHz" + (gpu->sm_max_mhz ? " of " + format_value(*gpu->sm_max_mhz) : std::string());
  }
  return text;
}

void clocks(const node_gpu& gpu, const std::vector<family_moment>& families, std::vector<graded_line>& out) {
  std::vector<std::string> failing, warning;  // "around copy (before it started): 0x8 (hw_slowdown)"
  const auto judge = [&](unsigned long long mask, const std::string& when, const gpu_clock_state* state) {
    const auto reason = "when " + when + ": " + clock_text(mask, state);
    if ((mask & throttle_fail_bits) != 0) failing.push_back(reason);
    else if ((mask & throttle_warn_bits) != 0) warning.push_back(reason);
  };
  std::size_t readings = 0;
  const auto& probe = field(field(*gpu.record, "clocks"), "throttle_reasons");
  if (probe.is_string()) {
    if (const auto mask = smi_mask(probe.get<std::string>())) {
      ++readings;
      const auto& source = field(field(*gpu.record, "clocks"), "source");
      judge(*mask, "the fingerprint was taken" + (source.is_string() ? " (" + source.get<std::string>() + ")" : std::string()), nullptr);
    }
  }
  for (const auto& [family, activity] : families) {
    if (!measured(activity, gpu.uuid)) continue;
    for (const auto& [snapshot, moment] : {std::pair{&activity.start, "before it started"}, std::pair{&activity.end, "after it ended"}}) {
      const auto* state = clock_of(*snapshot, gpu.uuid);
      if (state == nullptr || !state->event_reasons) continue;
      ++readings;
      judge(*state->event_reasons, family + " " + moment, state);
    }
  }
  if (readings == 0) {
    out.push_back(health_line(grade::warn, {gpu.index}, "clocks", "not read", "no clock event reasons were recorded for this GPU"));
    return;
  }
  const auto join = [](const std::vector<std::string>& items) {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : "; ") + item;
    return text;
  };
  if (!failing.empty()) {
    out.push_back(health_line(grade::fail, {gpu.index}, "clocks", "throttled", "held back by the hardware " + join(failing)));
  }
  if (!warning.empty()) {
    out.push_back(health_line(grade::warn, {gpu.index}, "clocks", "capped", "held back by the configuration " + join(warning)));
  }
  if (failing.empty() && warning.empty()) {
    out.push_back(health_line(grade::pass, {gpu.index}, "clocks", "not held back",
                              "no throttle reason in " + std::to_string(readings) +
                                  " reading(s): the fingerprint's, and before and after each family"));
  }
}

// Other compute processes on this GPU while a family measured it, each pid its own line. One still
// on the GPU as the run ended (`at_end`; nullptr in a run that did not look) is a FAIL: it shared
// every figure measured while it ran. One that had left by then is a WARN: it came and went, and
// the figures measured after it left (hdbench run measures a FAIL again) decide.
void processes(const node_gpu& gpu, const std::vector<family_moment>& families, const activity_snapshot* at_end,
               const std::vector<graded_line>& figures, std::vector<graded_line>& out) {
  struct sighting {
    std::string name;
    std::optional<double> memory_mib;
    std::vector<std::string> when;      // "copy (before it started, after it ended)"
    std::vector<std::string> families;  // where it was seen
  };
  std::map<long, sighting> seen;
  bool read = false;
  for (const auto& [family, activity] : families) {
    if (!measured(activity, gpu.uuid)) continue;
    std::map<long, std::vector<std::string>> moments;
    for (const auto& [snapshot, moment] : {std::pair{&activity.start, "before it started"}, std::pair{&activity.end, "after it ended"}}) {
      if (!snapshot->available) continue;
      read = true;
      for (const auto& p : snapshot->processes) {
        if (p.harness_own || p.gpu_uuid != gpu.uuid) continue;
        auto& s = seen[p.pid];
        s.name = p.name;
        if (p.used_memory_mib) s.memory_mib = p.used_memory_mib;
        moments[p.pid].push_back(moment);
      }
    }
    for (const auto& [pid, list] : moments) {
      std::string text;
      for (const auto& m : list) text += (text.empty() ? "" : ", ") + m;
      seen[pid].when.push_back(family + " (" + text + ")");
      seen[pid].families.push_back(family);
    }
  }
  if (!read) {
    out.push_back(health_line(grade::warn, {gpu.index}, "other processes", "not read",
                              "nvidia-smi did not list compute processes around any family"));
    return;
  }
  if (seen.empty()) {
    out.push_back(health_line(grade::pass, {gpu.index}, "other processes", "none",
                              "none seen before or after any family that measured this GPU"));
    return;
  }
  for (const auto& [pid, s] : seen) {
    std::string when, overlapped;
    for (const auto& w : s.when) when += (when.empty() ? "" : ", ") + w;
    for (const auto& figure : figures) {
      const bool on_gpu = std::find(figure.gpus.begin(), figure.gpus.end(), gpu.index) != figure.gpus.end();
      if (on_gpu && std::find(s.families.begin(), s.families.end(), figure.family) != s.families.end()) {
        overlapped += (overlapped.empty() ? "" : ", ") + figure.figure;
      }
    }
    const auto reading = "pid " + std::to_string(pid) + " " + s.name +
                         (s.memory_mib ? " (" + format_value(*s.memory_mib) + " MiB)" : std::string());
    if (is_hdbench_binary(s.name)) {
      out.push_back(health_line(grade::warn, {gpu.index}, "other processes", reading,
                                "another hdbench run used this GPU during " + when +
                                    "; the per-GPU lock keeps hdbench binaries from measuring at once, so this run may "
                                    "only have waited"));
    } else if (at_end != nullptr && std::none_of(at_end->processes.begin(), at_end->processes.end(), [&](const compute_process& p) {
                 return p.pid == pid && p.gpu_uuid == gpu.uuid;
               })) {
      out.push_back(health_line(grade::warn, {gpu.index}, "other processes", reading,
                                "used this GPU during " + when + " and had left by the end of the run: the figures measured "
                                "after it left decide, and a FAIL measured while it ran stood only if it failed again" +
                                    (overlapped.empty() ? std::string() : " (" + overlapped + ")")));
    } else {
      out.push_back(health_line(grade::fail, {gpu.index}, "other processes", reading,
                                "used this GPU during " + when + (at_end != nullptr ? " and was still on it as the run ended" : "") +
                                    "; figures measured while it ran are not this GPU's alone" +
                                    (overlapped.empty() ? std::string() : ": " + overlapped)));
    }
  }
}

// How busy the host was while the families ran, over all of them. A note, not a graded line: no
// rule has been measured for it yet (docs/evidence.md), but a FAIL on a busy host should show it.
void host_load_note(const std::vector<family_moment>& families, std::vector<std::string>& notes) {
  double seconds = 0;
  double steal = 0, steal_seconds = 0;
  double stall = 0, stall_seconds = 0;
  for (const auto& f : families) {
    const auto load = host_load_between(f.activity.start.host, f.activity.end.host);
    if (load.seconds <= 0) continue;
    seconds += load.seconds;
    if (load.steal_share) {
      steal += *load.steal_share * load.seconds;
      steal_seconds += load.seconds;
    }
    if (load.cpu_stall_share) {
      stall += *load.cpu_stall_share * load.seconds;
      stall_seconds += load.seconds;
    }
  }
  if (seconds <= 0) return;  // a run of an hdbench before these counters, or a host without /proc
  const std::string steal_text =
      steal_seconds > 0 ? "CPU steal " + percent_text(steal / steal_seconds) + " of CPU time (/proc/stat)" : "CPU steal not read";
  const std::string stall_text = stall_seconds > 0 ? "a task waiting for a CPU " + percent_text(stall / stall_seconds) +
                                                         " of the time (/proc/pressure/cpu)"
                                                   : "CPU pressure not read";
  notes.push_back("host while the families ran (" + format_fixed(seconds, 1) + " s): " + steal_text + ", " + stall_text +
                  "; not graded");
}

}  // namespace

std::vector<graded_line> health_lines(const json& meta, const node_kind* kind, const std::vector<graded_line>& figures,
                                      std::vector<std::string>* notes) {
  std::vector<graded_line> out;
  const auto gpus = node_gpus(meta);
  const auto& health = field(meta, "health");
  const auto start = link_health_snapshot_from_json(field(health, "start"));
  const auto end = link_health_snapshot_from_json(field(health, "end"));
  const bool counters_read = start.available && end.available;
  if (!counters_read) {
    const std::string why = !health.is_object() ? "this run's meta.json has no link counters (a run before hdbench check)"
                            : !start.available  ? "at the run's start: " + start.error
                                                : "at the run's end: " + end.error;
    out.push_back(health_line(grade::warn, {}, "health not read", "-", "PCIe replay counters not read " + why));
  }
  const auto families = activities(meta);
  std::optional<activity_snapshot> at_end;
  if (const auto& end = field(health, "processes_end"); end.is_object()) {
    at_end = activity_snapshot_from_json(end);
    if (!at_end->available) at_end.reset();  // not read: as a run that did not look
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto& gpu = gpus[i];
    pcie_link(gpu, kind, i, out);
    if (counters_read) pcie_replays(gpu, start, end, out);
    nvlinks(gpu, kind, i, health.is_object() ? &start : nullptr, health.is_object() ? &end : nullptr, out);
    clocks(gpu, families, out);
    processes(gpu, families, at_end ? &*at_end : nullptr, figures, out);
  }
  if (notes != nullptr) host_load_note(families, *notes);
  auto record = gpu_record_lines(meta, notes);
  out.insert(out.end(), std::make_move_iterator(record.begin()), std::make_move_iterator(record.end()));
  return out;
}

}  // namespace hdb
