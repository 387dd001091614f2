#pragma once
// The GPU's own health record, read at a run's start and end beside the link counters
// (gpu_activity.hpp) into meta.json "health": ECC, retired pages, row remapping, NVSwitch fabric
// and the driver's reset flags (one `nvidia-smi --query-gpu` call, field by field only on a driver
// that refuses a field), the bank remap availability histogram (from the `nvidia-smi -q` the link
// counters read anyway), and the Xid events the driver logged in the kernel log between the two.
// `hdbench check` grades them (check_gpu_record.cpp). Nothing here throws: what cannot be read is
// recorded with the reason.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/gpu_activity.hpp"
#include "hdb/util/nvidia_smi.hpp"

namespace hdb {

// The --query-gpu fields of the record; the first, "uuid", joins the answers of separate calls.
[[nodiscard]] const std::vector<std::string>& gpu_record_fields();

// One GPU's record: each field's text as nvidia-smi printed it ("[N/A]" kept: check says why a
// field was not read), and the remap histogram's banks per availability ("max" ... "none"; empty
// when -q printed none).
struct gpu_health_record {
  std::string uuid;
  std::map<std::string, std::string, std::less<>> fields;
  std::map<std::string, unsigned long long, std::less<>> remap_banks;

  [[nodiscard]] const std::string* text(std::string_view field) const;  // nullptr: not in the answer
};

struct gpu_record_snapshot {
  bool available = false;  // false: nvidia-smi missing or failing; `error` says why
  std::string error;
  std::string taken_utc;
  std::vector<std::string> refused;  // fields this driver does not know
  int calls = 0;                     // nvidia-smi --query-gpu runs it took
  double elapsed_s = 0;              // what those runs cost
  std::vector<gpu_health_record> gpus;
};

// The record from a --query-gpu answer and the `nvidia-smi -q` text (for the histograms; empty:
// none). Pure, for the tests.
[[nodiscard]] gpu_record_snapshot gpu_record_from(const smi_field_query& query, std::string_view query_text);

// What a run reads at its start and end: the link counters and the record.
struct health_snapshot {
  link_health_snapshot links;
  gpu_record_snapshot record;
};

// Runs `nvidia-smi -q` (once, for both), `nvidia-smi nvlink -e` and the record's query.
[[nodiscard]] health_snapshot take_health_snapshot();

// The link counters' object (to_json(link_health_snapshot)) with the record as "gpu_record".
[[nodiscard]] nlohmann::json to_json(const health_snapshot& snapshot);
[[nodiscard]] nlohmann::json to_json(const gpu_record_snapshot& snapshot);
// Tolerant, as link_health_snapshot_from_json; nullopt: the object holds no "gpu_record" (a run
// of an older hdbench).
[[nodiscard]] std::optional<gpu_record_snapshot> gpu_record_snapshot_from_json(const nlohmann::json& moment);

// An Xid line of the kernel log: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU
// has fallen off the bus." (pid and name are optional; older drivers print "pid=<unknown>" or no
// name).
struct xid_event {
  int xid = 0;
  std::string pci;              // as printed, "0000:3b:00"
  std::optional<long> pid;
  std::string process;          // "" when the line names none
  std::string message;          // the driver's words after the number, pid and name
};
// nullopt: not an Xid line, or one without a PCI address and a number.
[[nodiscard]] std::optional<xid_event> parse_xid_line(std::string_view line);

// A PCI address reduced to domain, bus and device ("0000:3b:00"), the form Xid lines print:
// "00000000:3B:00.0", "0000:3b:00.0", "PCI:0000:3b:00" and "3b:00.0" all give "0000:3b:00". ""
// when it is not an address.
[[nodiscard]] std::string pci_device_key(std::string_view address);

// /dev/kmsg records as text: "prio,sequence,microseconds,flags;message" per line; continuation
// lines (" KEY=value", which start with a space) and lines of other shapes are skipped.
struct kmsg_record {
  unsigned long long sequence = 0;
  std::string message;
};
[[nodiscard]] std::vector<kmsg_record> parse_kmsg_records(std::string_view text);

// The part of the kernel log a run wrote, opened at its start and read at its end. /dev/kmsg
// ($HDBENCH_KMSG in the tests) is read by sequence number, so no clock is compared; where it
// cannot be read (kernel.dmesg_restrict without CAP_SYSLOG), `journalctl -k` since the opening
// second. Only the Xid lines are kept.
struct kernel_log_window {
  std::string source;  // "/dev/kmsg" (or $HDBENCH_KMSG's path), "journalctl -k"; "": neither could be read
  std::string error;   // why not, each source's reason
  std::optional<unsigned long long> after_sequence;  // kmsg: the last record's number at the opening
  long long opened_unix = 0;                         // journal: the opening second
  std::string opened_utc;
  bool read = false;       // the window was read at the end
  std::string read_error;  // why it was not
  std::size_t messages = 0;  // kernel messages in the window
  std::vector<std::string> xid_lines;
};

[[nodiscard]] kernel_log_window open_kernel_log_window();
// Reads the messages after the opening (again, after a confirmation: the lines are replaced).
void read_kernel_log_window(kernel_log_window& window);

[[nodiscard]] nlohmann::json to_json(const kernel_log_window& window);
[[nodiscard]] kernel_log_window kernel_log_window_from_json(const nlohmann::json& object);

// meta.json "health" at the run's start (start: the snapshot; kernel_log: the window opened) and
// at its end (end: the snapshot; kernel_log: read). `hdbench run` calls them.
void record_health_start(nlohmann::json& health);
void record_health_end(nlohmann::json& health);

}  // namespace hdb
