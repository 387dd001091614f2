#pragma once
// nvidia-smi, one way for the bench fingerprint and the harness's activity check: the program
// found in PATH, run under a deadline (run_with_deadline), its `--query-gpu` CSV read per GPU,
// and the clock event (throttle) reason bits named from one table.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// The clock event reason mask field. Drivers before 535 call it clocks_throttle_reasons.active
// and refuse the new name; query_gpus asks for the old one then, under the new name.
inline constexpr std::string_view smi_clock_event_reasons = "clocks_event_reasons.active";

// "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "" and anything else that is not a whole
// number read as unknown.
[[nodiscard]] std::optional<double> smi_number(std::string_view text);
// "0x0000000000000004" -> 4; anything without the 0x prefix or with other characters: unknown.
[[nodiscard]] std::optional<unsigned long long> smi_mask(std::string_view text);
// "Yes" -> true, "No" -> false (a flag such as remapped_rows.pending); anything else: unknown.
[[nodiscard]] std::optional<bool> smi_yes_no(std::string_view text);

// One GPU's line of a --query-gpu answer: field name -> its text, trimmed.
struct smi_row {
  std::map<std::string, std::string, std::less<>> fields;

  [[nodiscard]] const std::string& text(std::string_view field) const;  // "" when not queried
  [[nodiscard]] std::optional<double> number(std::string_view field) const { return smi_number(text(field)); }
  [[nodiscard]] std::optional<unsigned long long> mask(std::string_view field) const { return smi_mask(text(field)); }
};

// The lines of `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`, one row per GPU
// in nvidia-smi's order. A line without exactly fields.size() values is skipped.
[[nodiscard]] std::vector<smi_row> parse_smi_query(std::string_view csv, const std::vector<std::string>& fields);

inline constexpr std::chrono::seconds smi_timeout{30};

struct smi_output {
  std::optional<std::string> text;  // stdout when it exited with status 0
  std::string error;                // else why: "nvidia-smi not found in PATH", "nvidia-smi --query-gpu=... failed (timed out after 30 s (killed))"
  std::string refusal;              // else what it printed (stdout, then stderr): 'Field "x" is not a valid field to query.'
};

// Runs nvidia-smi with `arguments` (stderr discarded). Never throws.
[[nodiscard]] smi_output run_nvidia_smi(const std::vector<std::string>& arguments,
                                        std::chrono::seconds timeout = smi_timeout);

struct smi_query {
  std::vector<smi_row> gpus;
  std::string error;  // non-empty: nvidia-smi missing or failing, and `gpus` is empty
};

// `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits [-i <gpu>]` (gpu: an index or
// UUID; empty: every GPU). Never throws.
[[nodiscard]] smi_query query_gpus(const std::vector<std::string>& fields, const std::string& gpu = {},
                                   std::chrono::seconds timeout = smi_timeout);

// A --query-gpu of fields that some drivers do not know (remapped_rows.*, fabric.*,
// reset_status.*): an older driver refuses the whole query for one unknown field ('Field "x" is
// not a valid field to query.'). Asked in one call; a field refused by name is left out and the
// rest asked again; a refusal that names none of the fields asks each field alone with the key.
// fields.front() is that key ("uuid"): it joins the answers of separate calls. Never throws.
struct smi_field_query {
  std::vector<smi_row> gpus;         // a refused field is not among a row's fields
  std::vector<std::string> refused;  // the fields this driver does not know
  std::string error;                 // non-empty: nvidia-smi missing or failing otherwise, and `gpus` is empty
  int calls = 0;                     // nvidia-smi runs it took: 1 where the driver knows every field
};
[[nodiscard]] smi_field_query query_gpu_fields(const std::vector<std::string>& fields,
                                               std::chrono::seconds timeout = smi_timeout);

// One GPU's PCIe replay counters, as `nvidia-smi -q` prints them under "PCI": a replay is a
// packet the link had to send again (a bad CRC or a lost acknowledgement); the count grows on a
// marginal link or riser long before copies fail. nvidia-smi counts replays since the driver
// loaded, and "Replay Number Rollovers" how often the (small) hardware counter wrapped.
struct smi_pcie_replays {
  std::string uuid;
  std::optional<unsigned long long> replays;    // "Replays Since Reset"
  std::optional<unsigned long long> rollovers;  // "Replay Number Rollovers"
};

// Every GPU section of `nvidia-smi -q` (all GPUs, or one with -i): a section starts at an
// unindented "GPU <bus id>" line and names its card in "GPU UUID". Lines are "key : value" with
// any indentation; other sections, unknown keys and values that are not whole numbers ("N/A")
// are ignored, so a driver that adds or drops fields reads as unknown, never as an error. A
// section without a UUID is dropped.
[[nodiscard]] std::vector<smi_pcie_replays> parse_pcie_replays(std::string_view query_text);

// One GPU's bank remap availability histogram, as `nvidia-smi -q` prints it under "Remapped Rows"
// (GPUs that remap HBM rows): how many memory banks have each level of spare rows left, "max",
// "high", "partial", "low" or "none" -> banks ("2560 bank(s)" -> 2560). Only -q prints it.
struct smi_remap_histogram {
  std::string uuid;
  std::map<std::string, unsigned long long, std::less<>> banks;  // empty: no histogram printed
};

// Every GPU section of `nvidia-smi -q`, as parse_pcie_replays reads them; a level that is not a
// whole number of banks (N/A) is left out.
[[nodiscard]] std::vector<smi_remap_histogram> parse_remap_histograms(std::string_view query_text);

// One counter of one NVLink: link index, the counter's name in lower snake case ("Replay
// Errors" -> "replay_errors") and its value.
struct smi_nvlink_counter {
  int link = 0;
  std::string name;
  unsigned long long value = 0;

  auto operator<=>(const smi_nvlink_counter&) const = default;
};

struct smi_nvlink_errors {
  std::string uuid;
  std::optional<int> index;                 // nvidia-smi's GPU index from the header line
  std::vector<smi_nvlink_counter> counters;  // in output order
};

// `nvidia-smi nvlink -e [-i <gpu>]`: a "GPU <n>: <name> (UUID: GPU-...)" line per GPU, then
// "Link <l>: <Counter name>: <value>" lines. Some drivers fold quiet links into one line,
// "Links 0-2, 4-5: Replay/Recovery/CRC Errors: 0", which sets each named counter of each listed
// link. Counters whose value is not a whole number (N/A) and lines of any other shape are skipped.
[[nodiscard]] std::vector<smi_nvlink_errors> parse_nvlink_error_counters(std::string_view text);

// nvmlClocksEventReason* bits, in bit order, with the names used in meta.json and report.md.
struct clock_event_reason {
  unsigned long long bit;
  std::string_view name;
};
[[nodiscard]] const std::vector<clock_event_reason>& clock_event_reason_table();

inline constexpr unsigned long long clock_event_gpu_idle = 0x1;

// "sw_power_cap,hw_slowdown" for a mask ("none" for 0; bits not in the table as "unknown 0x...").
[[nodiscard]] std::string describe_clock_event_reasons(unsigned long long mask);

// Held back by anything but idleness (an idle GPU lowers its clocks by design).
[[nodiscard]] constexpr bool clocks_held_back(unsigned long long mask) { return (mask & ~clock_event_gpu_idle) != 0; }

}  // namespace hdb
