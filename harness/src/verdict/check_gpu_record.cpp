// hdbench check, the GPU's own health record (gpu_health.hpp): ECC, row remapping or retired
// pages, the Xid events the driver logged during the run, the NVSwitch fabric and the driver's
// reset flags. Each finding is a line naming the GPU, the counter and its values, what it means
// and what to do (docs/node.md, "Health lines"); a clean item is a PASS line with its evidence.
// What could not be read is an INFO line with the reason, never a PASS: one per item and reason,
// naming every GPU it concerns, so a GPU without a fabric or without ECC is one line, not eight.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "hdb/harness/data/gpu_health.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/util/nvidia_smi.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;
using count_t = unsigned long long;

// One GPU of meta.json node.gpus, with the PCI address an Xid line names it by.
struct gpu_identity {
  int index = 0;
  std::string uuid;
  std::string pci_key;  // pci_device_key of node.gpus[i].pci_bus_id; "" when not recorded
};

std::vector<gpu_identity> identities(const json& meta) {
  std::vector<gpu_identity> gpus;
  const auto& list = field(field(meta, "node"), "gpus");
  if (!list.is_array()) return gpus;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& g = list[i];
    const auto index = number_field(g, "index");
    gpus.push_back({index ? static_cast<int>(std::lround(*index)) : static_cast<int>(i),
                    field(g, "uuid").is_string() ? g["uuid"].get<std::string>() : "",
                    field(g, "pci_bus_id").is_string() ? pci_device_key(g["pci_bus_id"].get<std::string>()) : ""});
  }
  return gpus;
}

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : std::string(separator)) + item;
  return text;
}

std::string quoted(const std::string& text) { return text.empty() ? "empty" : "'" + text + "'"; }

// A counter as nvidia-smi prints it: a whole number, nothing else ("[N/A]", "12.5", "-1": not read).
std::optional<count_t> whole_count(const std::string& text) {
  const auto value = smi_number(text);
  if (!value || *value < 0 || *value != std::floor(*value)) return std::nullopt;
  return static_cast<count_t>(*value);
}

health_counter counter(std::string name, std::string label, std::string value_label, double value) {
  return {std::move(name), {{std::move(label), std::move(value_label)}}, value};
}

// One GPU's record at the run's start and end; either may be missing (not read then).
struct record_pair {
  const gpu_health_record* start = nullptr;
  const gpu_health_record* end = nullptr;
  const std::set<std::string>* refused = nullptr;  // fields the driver did not know

  static const std::string* text(const gpu_health_record* r, std::string_view f) { return r != nullptr ? r->text(f) : nullptr; }
  // The latest reading: the end's, else the start's.
  [[nodiscard]] const std::string* latest(std::string_view f) const {
    const auto* t = text(end, f);
    return t != nullptr ? t : text(start, f);
  }
  [[nodiscard]] static std::optional<count_t> count(const gpu_health_record* r, std::string_view f) {
    const auto* t = text(r, f);
    return t != nullptr ? whole_count(*t) : std::nullopt;
  }
  [[nodiscard]] std::optional<count_t> latest_count(std::string_view f) const {
    const auto* t = latest(f);
    return t != nullptr ? whole_count(*t) : std::nullopt;
  }
  [[nodiscard]] std::optional<bool> latest_flag(std::string_view f) const {
    const auto* t = latest(f);
    return t != nullptr ? smi_yes_no(*t) : std::nullopt;
  }
  [[nodiscard]] const std::map<std::string, count_t, std::less<>>* banks() const {
    if (end != nullptr && !end->remap_banks.empty()) return &end->remap_banks;
    if (start != nullptr && !start->remap_banks.empty()) return &start->remap_banks;
    return nullptr;
  }
  // A field as the evidence of a line, or why it was not read: "fabric.state '[N/A]'",
  // "remapped_rows.pending 'Yes'", "fabric.state unknown to this driver".
  [[nodiscard]] std::string described(std::string_view f) const {
    if (start == nullptr && end == nullptr) return "nvidia-smi printed no record for this GPU";
    if (refused != nullptr && refused->contains(std::string(f))) return std::string(f) + " unknown to this driver";
    const auto* t = latest(f);
    return std::string(f) + " " + (t == nullptr ? std::string("not printed") : quoted(*t));
  }
};

// The items not read, each reason once with every GPU it concerns (emitted as INFO lines).
struct unread_item {
  std::string item, reading, reason;
  std::vector<int> gpus;
};

void not_read(std::vector<unread_item>& list, const std::string& item, const std::string& reading, const std::string& reason,
              int gpu) {
  const auto it = std::find_if(list.begin(), list.end(), [&](const unread_item& u) { return u.item == item && u.reason == reason; });
  if (it != list.end()) it->gpus.push_back(gpu);
  else list.push_back({item, reading, reason, {gpu}});
}

// When growth during the run could not be judged: "" when both moments were read.
std::string growth_caveat(const record_pair& r) {
  if (r.start != nullptr && r.end != nullptr) return "";
  return std::string("; read only at the run's ") + (r.end != nullptr ? "end" : "start") + ", so growth during it was not judged";
}

constexpr std::string_view uncorrected_volatile = "ecc.errors.uncorrected.volatile.total";
constexpr std::string_view uncorrected_aggregate = "ecc.errors.uncorrected.aggregate.total";
constexpr std::string_view corrected_volatile = "ecc.errors.corrected.volatile.total";
constexpr std::string_view corrected_aggregate = "ecc.errors.corrected.aggregate.total";

// "5 -> 7", or the one reading there is.
std::string before_after(const std::optional<count_t>& before, const std::optional<count_t>& after) {
  const auto text = [](const std::optional<count_t>& v) { return v ? std::to_string(*v) : std::string("?"); };
  if (before && after) return text(before) + " -> " + text(after);
  return text(after ? after : before);
}

void ecc(const gpu_identity& gpu, const record_pair& r, std::vector<graded_line>& out, std::vector<unread_item>& unread) {
  const auto* mode = r.latest("ecc.mode.current");
  const bool on = mode != nullptr && *mode == "Enabled";
  const bool off = mode != nullptr && *mode == "Disabled";
  std::vector<health_counter> counters;
  for (const auto& [type, f] : std::array<std::pair<std::string_view, std::string_view>, 4>{
           {{"uncorrected_volatile", uncorrected_volatile},
            {"uncorrected_aggregate", uncorrected_aggregate},
            {"corrected_volatile", corrected_volatile},
            {"corrected_aggregate", corrected_aggregate}}}) {
    if (const auto value = r.latest_count(f)) counters.push_back(counter("ecc_errors", "type", std::string(type), static_cast<double>(*value)));
  }
  if (!on && !off && counters.empty()) {
    not_read(unread, "ECC", "not read",
             r.described("ecc.mode.current") + " and no error counter read: a GPU without ECC, or a driver that does not report it",
             gpu.index);
    return;
  }
  const auto uv = r.latest_count(uncorrected_volatile);
  const auto ua_before = record_pair::count(r.start, uncorrected_aggregate), ua_after = record_pair::count(r.end, uncorrected_aggregate);
  const auto cv_before = record_pair::count(r.start, corrected_volatile), cv_after = record_pair::count(r.end, corrected_volatile);
  const auto ca_before = record_pair::count(r.start, corrected_aggregate), ca_after = record_pair::count(r.end, corrected_aggregate);
  const auto grew = [](const std::optional<count_t>& before, const std::optional<count_t>& after) {
    return before && after && *after > *before ? *after - *before : count_t{0};
  };
  std::vector<graded_line> found;
  if (off) {
    found.push_back(health_line(grade::warn, {gpu.index}, "ECC", "off",
                                "ecc.mode.current Disabled on a GPU that has ECC: memory errors go undetected and uncorrected; "
                                "turn it on (nvidia-smi -e 1 -i " + std::to_string(gpu.index) + ", then reset the GPU)"));
  }
  std::vector<std::string> uncorrectable;
  if (uv && *uv > 0) uncorrectable.push_back(std::to_string(*uv) + " since the driver loaded (" + std::string(uncorrected_volatile) + ")");
  if (const auto n = grew(ua_before, ua_after); n > 0) {
    uncorrectable.push_back(std::to_string(n) + " during the run (" + std::string(uncorrected_aggregate) + " " +
                            before_after(ua_before, ua_after) + ")");
  }
  if (!uncorrectable.empty()) {
    const auto n = uv && *uv > 0 ? *uv : grew(ua_before, ua_after);
    found.push_back(health_line(grade::fail, {gpu.index}, "ECC", std::to_string(n) + " uncorrectable",
                                "uncorrectable ECC errors, " + join(uncorrectable) +
                                    ": the memory returned data ECC could not correct; drain the GPU and reset it "
                                    "(nvidia-smi -r, or a reboot), which remaps the failing row; replace it if they come back"));
  }
  std::vector<std::string> corrected;
  if (grew(cv_before, cv_after) > 0) corrected.push_back("volatile " + before_after(cv_before, cv_after));
  if (grew(ca_before, ca_after) > 0) corrected.push_back("aggregate " + before_after(ca_before, ca_after));
  if (!corrected.empty()) {
    found.push_back(health_line(grade::warn, {gpu.index}, "ECC",
                                "corrected +" + std::to_string(std::max(grew(cv_before, cv_after), grew(ca_before, ca_after))),
                                "corrected ECC errors grew during the run (" + join(corrected) +
                                    "): ECC repaired them and nothing was lost, but memory that keeps correcting errors is "
                                    "wearing; watch the count (hdbench_gpu_ecc_errors) and replace the GPU if it keeps growing"));
  }
  if (found.empty()) {
    found.push_back(health_line(grade::pass, {gpu.index}, "ECC", on ? "on, 0 uncorrectable" : "0 uncorrectable",
                                "no uncorrectable error (volatile " + before_after(std::nullopt, uv) + ", aggregate " +
                                    before_after(ua_before, ua_after) + "), corrected errors did not grow (volatile " +
                                    before_after(cv_before, cv_after) + ", aggregate " + before_after(ca_before, ca_after) +
                                    ")" + growth_caveat(r)));
  }
  found.front().counters = std::move(counters);
  out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
}

// GPUs before Ampere retire pages where later ones remap rows: the one they report is graded.
void retired_pages(const gpu_identity& gpu, const record_pair& r, std::vector<graded_line>& out,
                   std::vector<unread_item>& unread) {
  const auto pending = r.latest_flag("retired_pages.pending");
  const auto single = r.latest_count("retired_pages.single_bit_ecc.count");
  const auto twice = r.latest_count("retired_pages.double_bit.count");
  if (!pending && !single && !twice) {
    not_read(unread, "row remap", "not read",
             r.described("remapped_rows.pending") + " and " + r.described("retired_pages.pending") +
                 ": a GPU that neither remaps rows nor retires pages, or a driver that does not report them",
             gpu.index);
    return;
  }
  std::vector<health_counter> counters;
  if (single) counters.push_back(counter("retired_pages", "cause", "single_bit_ecc", static_cast<double>(*single)));
  if (twice) counters.push_back(counter("retired_pages", "cause", "double_bit_ecc", static_cast<double>(*twice)));
  if (pending) counters.push_back(counter("retired_pages", "cause", "pending", *pending ? 1 : 0));
  const auto counts = (single ? std::to_string(*single) : std::string("?")) + " pages retired for single-bit and " +
                      (twice ? std::to_string(*twice) : std::string("?")) + " for double-bit ECC errors";
  graded_line line = pending && *pending
                         ? health_line(grade::fail, {gpu.index}, "retired pages", "pending",
                                       "retired_pages.pending Yes: memory pages wait to be retired, which takes effect at the "
                                       "next reset (nvidia-smi -r, or a reboot); drain the GPU and reset it (" + counts + ")")
                         : health_line(grade::pass, {gpu.index}, "retired pages", "none pending",
                                       counts + (pending ? ", none pending" : "; pending not read"));
  line.counters = std::move(counters);
  out.push_back(std::move(line));
}

void row_remap(const gpu_identity& gpu, const record_pair& r, std::vector<graded_line>& out, std::vector<unread_item>& unread) {
  const auto pending = r.latest_flag("remapped_rows.pending");
  const auto failure = r.latest_flag("remapped_rows.failure");
  const auto correctable = r.latest_count("remapped_rows.correctable");
  const auto uncorrectable = r.latest_count("remapped_rows.uncorrectable");
  const auto* banks = r.banks();
  if (!pending && !failure && !correctable && !uncorrectable && banks == nullptr) {
    retired_pages(gpu, r, out, unread);
    return;
  }
  std::vector<health_counter> counters;
  if (correctable) counters.push_back(counter("remapped_rows", "state", "correctable", static_cast<double>(*correctable)));
  if (uncorrectable) counters.push_back(counter("remapped_rows", "state", "uncorrectable", static_cast<double>(*uncorrectable)));
  if (pending) counters.push_back(counter("remapped_rows", "state", "pending", *pending ? 1 : 0));
  if (failure) counters.push_back(counter("remapped_rows", "state", "failure", *failure ? 1 : 0));
  std::string histogram;
  count_t scarce = 0;  // banks at Low or None: few or no spare rows left
  if (banks != nullptr) {
    for (const auto level : {"max", "high", "partial", "low", "none"}) {
      const auto it = banks->find(level);
      if (it == banks->end()) continue;
      counters.push_back(counter("remap_banks", "availability", level, static_cast<double>(it->second)));
      histogram += (histogram.empty() ? "" : ", ") + std::string(level) + " " + std::to_string(it->second);
      if (std::string_view(level) == "low" || std::string_view(level) == "none") scarce += it->second;
    }
  }
  const auto counts = (correctable ? std::to_string(*correctable) : std::string("?")) + " rows remapped for correctable and " +
                      (uncorrectable ? std::to_string(*uncorrectable) : std::string("?")) + " for uncorrectable errors" +
                      (histogram.empty() ? std::string("; no remap histogram printed")
                                         : "; banks by spare rows left: " + histogram);
  std::vector<graded_line> found;
  if (pending && *pending) {
    found.push_back(health_line(grade::fail, {gpu.index}, "row remap", "pending",
                                "row remap pending (remapped_rows.pending Yes): the GPU needs a reset (nvidia-smi -r, or a "
                                "reboot) before the remap takes effect; drain it (" + counts + ")"));
  }
  if (failure && *failure) {
    found.push_back(health_line(grade::fail, {gpu.index}, "row remap", "failed",
                                "a row remap failed (remapped_rows.failure Yes): its bank had no spare row left, so the GPU "
                                "cannot repair that memory; drain it and replace the GPU (" + counts + ")"));
  }
  if (scarce > 0) {
    found.push_back(health_line(grade::warn, {gpu.index}, "row remap", std::to_string(scarce) + " banks low",
                                std::to_string(scarce) + " memory bank(s) at Low or None availability: few or no spare rows "
                                "left there, so the next failing row in them cannot be remapped; plan to replace the GPU (" +
                                    counts + ")"));
  }
  if (found.empty()) {
    found.push_back(health_line(grade::pass, {gpu.index}, "row remap", "none pending",
                                counts + (pending ? ", none pending" : ", pending not read") +
                                    (failure ? ", no failure" : ", failure not read")));
  }
  found.front().counters = std::move(counters);
  out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
}

// What each common Xid says and what to do, in our words from NVIDIA's public Xid catalogue.
// `program`: usually a program's own fault, not the GPU's (WARN, naming the process); the others
// are the GPU's, its memory's or its links' (FAIL), but for 92, corrected errors at a high rate.
struct xid_meaning {
  int xid;
  grade result;
  bool program;
  std::string_view meaning;
  std::string_view todo;
};

constexpr std::array<xid_meaning, 14> xid_catalogue{{
    {13, grade::warn, true, "graphics engine exception: a kernel faulted (out-of-range access, bad instruction)",
     "fix the program; if known-good programs fault too, run the GPU's diagnostics (dcgmi diag)"},
    {31, grade::warn, true, "GPU memory page fault: a program used an address it had not mapped",
     "fix the program; if known-good programs fault too, run the GPU's diagnostics (dcgmi diag)"},
    {43, grade::warn, true, "the GPU stopped a program's work after a fault in that program; the GPU stays usable",
     "look at that program's own errors"},
    {45, grade::warn, true, "the driver cleaned up a program's work on the GPU (it ended, was killed, or an earlier error stopped it)",
     "read the Xid lines before it for the cause"},
    {48, grade::fail, false, "double-bit ECC error: memory returned data ECC could not correct",
     "drain the GPU and reset it (nvidia-smi -r, or a reboot); replace it if it comes back"},
    {63, grade::fail, false, "the GPU recorded a row remap (or page retirement) after a memory error; it takes effect at the next reset",
     "drain the GPU and reset it (nvidia-smi -r, or a reboot)"},
    {64, grade::fail, false, "the GPU failed to record a row remap (or page retirement) after a memory error",
     "drain the GPU and replace it"},
    {74, grade::fail, false, "NVLink error: a link to another GPU or an NVSwitch failed",
     "drain and reset the GPU; if it comes back, check the link, the GPU at its other end and the NVSwitch"},
    {79, grade::fail, false, "the GPU fell off the bus: the host could no longer reach it over PCIe",
     "drain the node and power-cycle it; if it recurs, reseat or replace the GPU, its riser or its slot"},
    {92, grade::warn, false, "corrected (single-bit) ECC errors at a high rate: the memory is wearing",
     "watch the ECC line and replace the GPU if the errors keep coming"},
    {94, grade::fail, false, "contained uncorrectable ECC error: the program using that memory was stopped, the others go on",
     "drain the GPU and reset it (nvidia-smi -r) so the row is remapped"},
    {95, grade::fail, false, "uncontained uncorrectable ECC error: every program on the GPU may have read bad data",
     "drain the GPU and reset it now (nvidia-smi -r, or a reboot)"},
    {119, grade::fail, false, "GSP RPC timeout: the GPU's system processor stopped answering the driver",
     "drain the GPU and reset it (or reboot); update the driver if it recurs"},
    {120, grade::fail, false, "GSP error: the GPU's system processor reported an error",
     "drain the GPU and reset it (or reboot); update the driver if it recurs"},
}};

const xid_meaning* meaning_of(int xid) {
  const auto it = std::find_if(xid_catalogue.begin(), xid_catalogue.end(), [&](const xid_meaning& m) { return m.xid == xid; });
  return it == xid_catalogue.end() ? nullptr : &*it;
}

// "pid 4242 python3, pid 4243 python3" (at most three, then how many more).
std::string processes_of(const std::vector<xid_event>& events) {
  std::vector<std::string> seen;
  for (const auto& e : events) {
    if (!e.pid && e.process.empty()) continue;
    const auto text = (e.pid ? "pid " + std::to_string(*e.pid) : std::string()) +
                      (e.process.empty() ? "" : (e.pid ? " " : "") + e.process);
    if (std::find(seen.begin(), seen.end(), text) == seen.end()) seen.push_back(text);
  }
  if (seen.size() > 3) {
    const auto more = seen.size() - 3;
    seen.resize(3);
    seen.push_back(std::to_string(more) + " more");
  }
  return join(seen);
}

graded_line xid_line(int gpu, int xid, const std::vector<xid_event>& events) {
  const auto* m = meaning_of(xid);
  const auto reading = std::to_string(xid) + (events.size() > 1 ? " x" + std::to_string(events.size()) : "");
  const auto processes = processes_of(events);
  const auto logged = "; the driver logged it " + (events.size() == 1 ? std::string("once") : std::to_string(events.size()) + " times") +
                      " during the run: '" + events.front().message + "'";
  graded_line line;
  if (m == nullptr) {
    line = health_line(grade::warn, {gpu}, "Xid", reading,
                       "Xid " + std::to_string(xid) + ", which hdbench has no meaning for: look it up in NVIDIA's Xid catalogue" +
                           (processes.empty() ? "" : " (" + processes + ")") + logged);
  } else if (m->program) {
    line = health_line(m->result, {gpu}, "Xid", reading,
                       std::string(m->meaning) + (processes.empty() ? "" : " (" + processes + ")") +
                           ": usually the program's own fault, not the GPU's; " + std::string(m->todo) + logged);
  } else {
    line = health_line(m->result, {gpu}, "Xid", reading,
                       std::string(m->meaning) + (processes.empty() ? "" : " (" + processes + ")") + "; " +
                           std::string(m->todo) + logged);
  }
  line.counters.push_back(counter("xid_events", "xid", std::to_string(xid), static_cast<double>(events.size())));
  return line;
}

void xids(const std::vector<gpu_identity>& gpus, const json& health, std::vector<graded_line>& out) {
  const auto& log = field(health, "kernel_log");
  if (!log.is_object()) return;  // a run of an older hdbench: the "not recorded" line says so
  const auto window = kernel_log_window_from_json(log);
  if (!window.read) {
    const auto why = window.source.empty() ? window.error : window.read_error;
    out.push_back(health_line(grade::not_graded, {}, "Xid", "not read",
                              "the kernel log could not be read (" + (why.empty() ? std::string("no reason recorded") : why) +
                                  "): Xid events during the run are unknown; run hdbench as root (or with CAP_SYSLOG), "
                                  "or let its user read the journal (group systemd-journal)"));
    return;
  }
  std::map<int, std::map<int, std::vector<xid_event>>> on_gpu;         // GPU index -> Xid -> its events
  std::map<std::string, std::map<int, std::vector<xid_event>>> elsewhere;  // PCI address -> Xid -> events
  std::vector<std::string> unparsed;
  for (const auto& text : window.xid_lines) {
    const auto event = parse_xid_line(text);
    if (!event) {
      unparsed.push_back(text);
      continue;
    }
    const auto key = pci_device_key(event->pci);
    const auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const gpu_identity& g) { return !key.empty() && g.pci_key == key; });
    if (gpu != gpus.end()) on_gpu[gpu->index][event->xid].push_back(*event);
    else elsewhere[key.empty() ? event->pci : key][event->xid].push_back(*event);
  }
  const auto source = window.source + ", " + std::to_string(window.messages) + " kernel messages in the run";
  for (const auto& gpu : gpus) {
    if (gpu.pci_key.empty()) {
      out.push_back(health_line(grade::not_graded, {gpu.index}, "Xid", "not matched",
                                "meta.json records no PCI address for this GPU, so no Xid line can be matched to it (" + source + ")"));
      continue;
    }
    const auto it = on_gpu.find(gpu.index);
    if (it == on_gpu.end()) {
      out.push_back(health_line(grade::pass, {gpu.index}, "Xid", "none",
                                "no Xid for PCI " + gpu.pci_key + " in the kernel log during the run (" + source + ")"));
      continue;
    }
    for (const auto& [xid, events] : it->second) out.push_back(xid_line(gpu.index, xid, events));
  }
  std::vector<std::string> addresses;
  for (const auto& gpu : gpus) {
    if (!gpu.pci_key.empty()) addresses.push_back(gpu.pci_key);
  }
  for (const auto& [pci, by_xid] : elsewhere) {
    std::vector<std::string> numbers;
    for (const auto& [xid, events] : by_xid) {
      numbers.push_back(std::to_string(xid) + (events.size() > 1 ? " x" + std::to_string(events.size()) : ""));
    }
    out.push_back(health_line(grade::not_graded, {}, "Xid", join(numbers),
                              "on PCI " + pci + ", none of this run's GPUs (" + (addresses.empty() ? "none recorded" : join(addresses)) +
                                  "): not blamed on them; the driver's line: '" + by_xid.begin()->second.front().message + "'"));
  }
  if (!unparsed.empty()) {
    out.push_back(health_line(grade::not_graded, {}, "Xid", std::to_string(unparsed.size()) + " unreadable",
                              "Xid line(s) without a PCI address and a number, not matched to a GPU: '" + unparsed.front() + "'"));
  }
}

// fabric.state/status words that mean "this GPU has no fabric", not "its fabric is not ready".
bool no_fabric(const std::string* state) {
  if (state == nullptr) return true;
  std::string word;
  for (const char c : *state) {
    if (c != '[' && c != ']') word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return word.empty() || word == "n/a" || word == "not supported";
}

void fabric(const gpu_identity& gpu, const record_pair& r, std::vector<graded_line>& out, std::vector<unread_item>& unread) {
  const auto* state = r.latest("fabric.state");
  if (no_fabric(state)) {
    not_read(unread, "fabric", "no fabric", "no NVSwitch fabric (" + r.described("fabric.state") + ")", gpu.index);
    return;
  }
  const auto* status = r.latest("fabric.status");
  const auto reading = *state + (status != nullptr && !no_fabric(status) ? ", " + *status : std::string());
  const bool joined = *state == "Completed" && (status == nullptr || no_fabric(status) || *status == "Success");
  if (joined) {
    out.push_back(health_line(grade::pass, {gpu.index}, "fabric", reading,
                              "joined the NVSwitch fabric (fabric.state Completed, " + r.described("fabric.status") + ")"));
  } else {
    out.push_back(health_line(grade::fail, {gpu.index}, "fabric", reading,
                              "the GPU has not joined the NVSwitch fabric (fabric.state " + quoted(*state) + ", " +
                                  r.described("fabric.status") +
                                  "): NVLink traffic through the switches cannot flow; check nvidia-fabricmanager "
                                  "(systemctl status nvidia-fabricmanager, its log), then reset the GPU"));
  }
}

void reset_status(const gpu_identity& gpu, const record_pair& r, std::vector<graded_line>& out,
                  std::vector<unread_item>& unread) {
  const auto required = r.latest_flag("reset_status.reset_required");
  const auto drain = r.latest_flag("reset_status.drain_and_reset_recommended");
  if (!required && !drain) {
    not_read(unread, "reset status", "not read",
             r.described("reset_status.reset_required") + " and " + r.described("reset_status.drain_and_reset_recommended"),
             gpu.index);
    return;
  }
  std::vector<health_counter> counters;
  if (required) counters.push_back(counter("reset_status", "flag", "reset_required", *required ? 1 : 0));
  if (drain) counters.push_back(counter("reset_status", "flag", "drain_and_reset_recommended", *drain ? 1 : 0));
  std::vector<graded_line> found;
  if (required && *required) {
    found.push_back(health_line(grade::fail, {gpu.index}, "reset status", "reset required",
                                "the driver says the GPU must be reset before it is used again (reset_status.reset_required "
                                "Yes): drain it, then nvidia-smi -r or a reboot"));
  }
  if (drain && *drain) {
    found.push_back(health_line(grade::fail, {gpu.index}, "reset status", "drain and reset",
                                "the driver recommends draining the GPU's work and resetting it "
                                "(reset_status.drain_and_reset_recommended Yes): drain it, then nvidia-smi -r or a reboot"));
  }
  if (found.empty()) {
    found.push_back(health_line(grade::pass, {gpu.index}, "reset status", "none asked",
                                "the driver asks for no reset (" + r.described("reset_status.reset_required") + ", " +
                                    r.described("reset_status.drain_and_reset_recommended") + ")"));
  }
  found.front().counters = std::move(counters);
  out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
}

const gpu_health_record* record_in(const std::optional<gpu_record_snapshot>& snapshot, const std::string& uuid) {
  if (!snapshot || !snapshot->available) return nullptr;
  const auto it = std::find_if(snapshot->gpus.begin(), snapshot->gpus.end(), [&](const gpu_health_record& g) { return g.uuid == uuid; });
  return it == snapshot->gpus.end() ? nullptr : &*it;
}

}  // namespace

std::vector<graded_line> gpu_record_lines(const json& meta, std::vector<std::string>* notes) {
  std::vector<graded_line> out;
  const auto& health = field(meta, "health");
  const auto start = gpu_record_snapshot_from_json(field(health, "start"));
  const auto end = gpu_record_snapshot_from_json(field(health, "end"));
  if (!start && !end && !field(health, "kernel_log").is_object()) {
    out.push_back(health_line(grade::not_graded, {}, "GPU health record", "not recorded",
                              "this run's meta.json has no ECC, row remap, fabric, reset or Xid readings (a run of an older "
                              "hdbench): run it again to have them graded"));
    return out;
  }
  const auto gpus = identities(meta);
  const bool start_read = start && start->available, end_read = end && end->available;
  if (!start_read && !end_read) {
    const auto why = [](const std::optional<gpu_record_snapshot>& s) { return s ? s->error : std::string("not recorded"); };
    out.push_back(health_line(grade::not_graded, {}, "GPU health record", "not read",
                              "ECC, row remap, fabric and reset status not read at the run's start (" + why(start) +
                                  ") or end (" + why(end) + ")"));
  } else {
    std::set<std::string> refused;
    for (const auto* s : {&start, &end}) {
      if (*s) refused.insert((*s)->refused.begin(), (*s)->refused.end());
    }
    std::vector<unread_item> unread;
    for (const auto& gpu : gpus) {
      const record_pair r{record_in(start, gpu.uuid), record_in(end, gpu.uuid), &refused};
      ecc(gpu, r, out, unread);
      row_remap(gpu, r, out, unread);
      fabric(gpu, r, out, unread);
      reset_status(gpu, r, out, unread);
    }
    // No GPU on a fabric (a PCIe node): the fabric does not apply, which a note says once (an INFO
    // line for a caller without notes). Where some GPUs are on one, a GPU without is a line.
    const bool fabric_here = std::any_of(out.begin(), out.end(), [](const graded_line& l) { return l.figure == "fabric"; });
    for (auto& u : unread) {
      if (u.item == "fabric" && !fabric_here && notes != nullptr) {
        notes->push_back("fabric not graded: " + gpu_text(u.gpus) + ": " + u.reason);
        continue;
      }
      out.push_back(health_line(grade::not_graded, std::move(u.gpus), u.item, u.reading, u.reason + ": not graded"));
    }
  }
  xids(gpus, health, out);
  return out;
}

}  // namespace hdb
