#include "hdb/harness/data/gpu_health.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/data/run_dir.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/process.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<unsigned long long> hex_number(std::string_view text) {
  unsigned long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string json_text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The kernel message every Xid line carries, wherever the log's own prefix ends.
constexpr std::string_view xid_marker = "NVRM: Xid";

// Where the kernel log's records are: /dev/kmsg, or the tests' stand-in ($HDBENCH_KMSG, beside
// their stand-in nvidia-smi and /proc).
fs::path kmsg_path() {
  const char* path = std::getenv("HDBENCH_KMSG");
  return path != nullptr && *path != '\0' ? fs::path(path) : fs::path("/dev/kmsg");
}

struct kmsg_read {
  std::optional<std::string> text;
  std::string error;
};

// Every record /dev/kmsg holds, as text. Opened non-blocking, it hands out one record per read()
// and EAGAIN after the last; EPIPE says records were overwritten while it read, and the next read
// goes on from the oldest left. A regular file (the tests') reads to its end.
kmsg_read read_kmsg(const fs::path& path) {
  const unique_fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return {std::nullopt, errno_text(path.string())};
  constexpr std::size_t limit = std::size_t{64} << 20;  // far above any kernel's log buffer
  std::string text;
  std::vector<char> buffer(16384);  // above the longest record the kernel hands out
  while (text.size() < limit) {
    const auto n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      text.append(buffer.data(), static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    if (errno == EINTR || errno == EPIPE) continue;
    return {std::nullopt, errno_text(path.string())};
  }
  return {std::move(text), {}};
}

struct journal_read {
  std::optional<std::string> text;
  std::string error;
};

journal_read run_journalctl(const std::vector<std::string>& arguments) {
  const auto program = find_in_path("journalctl");
  if (!program) return {std::nullopt, "journalctl not found in PATH"};
  child_spec spec;
  spec.argv = {program->string(), "-k", "-q", "--no-pager", "-o", "cat"};
  spec.argv.insert(spec.argv.end(), arguments.begin(), arguments.end());
  spec.timeout = smi_timeout;
  const auto result = run_with_deadline(spec);
  if (!result.succeeded()) return {std::nullopt, "journalctl -k " + result.describe()};
  return {result.output, {}};
}

void keep_xid_lines(const std::vector<std::string_view>& messages, kernel_log_window& window) {
  window.messages = messages.size();
  window.xid_lines.clear();
  for (const auto message : messages) {
    if (message.find(xid_marker) != std::string_view::npos) window.xid_lines.emplace_back(trimmed(message));
  }
}

}  // namespace

const std::vector<std::string>& gpu_record_fields() {
  static const std::vector<std::string> fields = {
      "uuid",
      "ecc.mode.current",
      "ecc.errors.corrected.volatile.total",
      "ecc.errors.uncorrected.volatile.total",
      "ecc.errors.corrected.aggregate.total",
      "ecc.errors.uncorrected.aggregate.total",
      "retired_pages.pending",
      "retired_pages.single_bit_ecc.count",
      "retired_pages.double_bit.count",
      "remapped_rows.correctable",
      "remapped_rows.uncorrectable",
      "remapped_rows.pending",
      "remapped_rows.failure",
      "fabric.state",
      "fabric.status",
      "reset_status.reset_required",
      "reset_status.drain_and_reset_recommended",
  };
  return fields;
}

const std::string* gpu_health_record::text(std::string_view field) const {
  const auto it = fields.find(field);
  return it == fields.end() ? nullptr : &it->second;
}

gpu_record_snapshot gpu_record_from(const smi_field_query& query, std::string_view query_text) {
  gpu_record_snapshot snapshot;
  snapshot.error = query.error;
  snapshot.refused = query.refused;
  snapshot.calls = query.calls;
  const auto histograms = parse_remap_histograms(query_text);
  for (const auto& row : query.gpus) {
    gpu_health_record record;
    record.uuid = row.text("uuid");
    for (const auto& [field, text] : row.fields) {
      if (field != "uuid") record.fields[field] = text;
    }
    const auto histogram = std::find_if(histograms.begin(), histograms.end(),
                                        [&](const smi_remap_histogram& h) { return h.uuid == record.uuid; });
    if (histogram != histograms.end()) record.remap_banks.insert(histogram->banks.begin(), histogram->banks.end());
    if (!record.uuid.empty()) snapshot.gpus.push_back(std::move(record));
  }
  snapshot.available = snapshot.error.empty() && !snapshot.gpus.empty();
  if (!snapshot.available && snapshot.error.empty()) snapshot.error = "nvidia-smi --query-gpu named no GPU by its UUID";
  return snapshot;
}

health_snapshot take_health_snapshot() {
  health_snapshot snapshot;
  const auto taken = utc_timestamp(std::chrono::system_clock::now());
  const auto query = run_nvidia_smi({"-q"});
  const auto nvlink = run_nvidia_smi({"nvlink", "-e"});
  snapshot.links = link_health_from(query, nvlink);
  snapshot.links.taken_utc = taken;
  const auto asked = std::chrono::steady_clock::now();
  snapshot.record = gpu_record_from(query_gpu_fields(gpu_record_fields()), query.text.value_or(""));
  snapshot.record.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  snapshot.record.taken_utc = taken;
  return snapshot;
}

json to_json(const gpu_record_snapshot& s) {
  json gpus = json::array();
  for (const auto& g : s.gpus) {
    json fields = json::object();
    for (const auto& [field, text] : g.fields) fields[field] = text;
    json banks = json::object();
    for (const auto& [level, count] : g.remap_banks) banks[level] = count;
    gpus.push_back({{"uuid", g.uuid}, {"fields", std::move(fields)}, {"remap_banks", std::move(banks)}});
  }
  return {{"available", s.available}, {"error", s.error},   {"taken_utc", s.taken_utc}, {"refused", s.refused},
          {"calls", s.calls},         {"elapsed_s", s.elapsed_s}, {"gpus", std::move(gpus)}};
}

json to_json(const health_snapshot& snapshot) {
  auto out = to_json(snapshot.links);
  out["gpu_record"] = to_json(snapshot.record);
  return out;
}

std::optional<gpu_record_snapshot> gpu_record_snapshot_from_json(const json& moment) {
  const auto& j = field(moment, "gpu_record");
  if (!j.is_object()) return std::nullopt;
  gpu_record_snapshot s;
  s.available = j.value("available", false);
  s.error = json_text(j, "error");
  s.taken_utc = json_text(j, "taken_utc");
  if (const auto it = j.find("refused"); it != j.end() && it->is_array()) {
    for (const auto& f : *it) {
      if (f.is_string()) s.refused.push_back(f.get<std::string>());
    }
  }
  s.calls = static_cast<int>(number_field(j, "calls").value_or(0));
  s.elapsed_s = number_field(j, "elapsed_s").value_or(0);
  if (const auto it = j.find("gpus"); it != j.end() && it->is_array()) {
    for (const auto& g : *it) {
      if (!g.is_object()) continue;
      gpu_health_record record;
      record.uuid = json_text(g, "uuid");
      if (const auto fields = g.find("fields"); fields != g.end() && fields->is_object()) {
        for (const auto& [name, text] : fields->items()) {
          if (text.is_string()) record.fields[name] = text.get<std::string>();
        }
      }
      if (const auto banks = g.find("remap_banks"); banks != g.end() && banks->is_object()) {
        for (const auto& [level, count] : banks->items()) {
          if (count.is_number_unsigned()) record.remap_banks[level] = count.get<unsigned long long>();
        }
      }
      s.gpus.push_back(std::move(record));
    }
  }
  return s;
}

std::optional<xid_event> parse_xid_line(std::string_view line) {
  const auto at = line.find(xid_marker);
  if (at == std::string_view::npos) return std::nullopt;
  auto rest = trimmed(line.substr(at + xid_marker.size()));
  // "(PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus."
  const auto close = rest.find("):");
  if (!rest.starts_with('(') || close == std::string_view::npos) return std::nullopt;
  xid_event event;
  event.pci = trimmed(rest.substr(1, close - 1));
  if (lower(event.pci).starts_with("pci:")) event.pci.erase(0, 4);
  rest = trimmed(rest.substr(close + 2));
  const auto [number_end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), event.xid);
  if (ec != std::errc() || event.pci.empty()) return std::nullopt;
  rest = trimmed(rest.substr(static_cast<std::size_t>(number_end - rest.data())));
  if (rest.starts_with(',')) rest = trimmed(rest.substr(1));
  // The optional "pid=..." and "name=..." fields, each up to its comma.
  const auto take_field = [&rest](std::string_view key) -> std::optional<std::string> {
    if (!rest.starts_with(key)) return std::nullopt;
    const auto comma = rest.find(',');
    std::string value(trimmed(rest.substr(key.size(), comma == std::string_view::npos ? std::string_view::npos : comma - key.size())));
    rest = comma == std::string_view::npos ? std::string_view() : trimmed(rest.substr(comma + 1));
    return value;
  };
  if (const auto pid = take_field("pid=")) {
    long value = 0;
    const auto [end, pid_ec] = std::from_chars(pid->data(), pid->data() + pid->size(), value);
    if (pid_ec == std::errc() && end == pid->data() + pid->size() && value > 0) event.pid = value;
  }
  if (const auto name = take_field("name=")) {
    if (!name->empty() && *name != "<unknown>" && *name != "'<unknown>'") event.process = *name;
  }
  event.message = rest;
  return event;
}

std::string pci_device_key(std::string_view address) {
  auto text = lower(trimmed(address));
  if (text.starts_with("pci:")) text.erase(0, 4);
  const auto parts = split_list(text, ':');
  if (parts.size() != 2 && parts.size() != 3) return {};
  const std::string domain = parts.size() == 3 ? parts[0] : "0";
  const auto& bus = parts[parts.size() - 2];
  const auto device_function = std::string_view(parts.back());
  const auto device = device_function.substr(0, device_function.find('.'));
  const auto d = hex_number(domain), b = hex_number(bus), v = hex_number(device);
  if (!d || !b || !v || *b > 0xff || *v > 0x1f) return {};
  char key[40];
  std::snprintf(key, sizeof key, "%04llx:%02llx:%02llx", *d, *b, *v);
  return key;
}

std::vector<kmsg_record> parse_kmsg_records(std::string_view text) {
  std::vector<kmsg_record> records;
  for (std::string_view rest = text; !rest.empty();) {
    const auto end = rest.find('\n');
    const auto line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const auto semicolon = line.find(';');
    if (line.starts_with(' ') || semicolon == std::string_view::npos) continue;  // " KEY=value": a record's dictionary
    const auto prefix = split_list(line.substr(0, semicolon), ',');
    if (prefix.size() < 3 || !all_digits(prefix[1])) continue;
    kmsg_record record;
    const auto& sequence = prefix[1];
    if (std::from_chars(sequence.data(), sequence.data() + sequence.size(), record.sequence).ec != std::errc()) continue;
    record.message = trimmed(line.substr(semicolon + 1));
    records.push_back(std::move(record));
  }
  return records;
}

kernel_log_window open_kernel_log_window() {
  kernel_log_window window;
  const auto now = std::chrono::system_clock::now();
  window.opened_utc = utc_timestamp(now);
  window.opened_unix = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const auto path = kmsg_path();
  const auto kmsg = read_kmsg(path);
  if (kmsg.text) {
    window.source = path.string();
    for (const auto& record : parse_kmsg_records(*kmsg.text)) {
      window.after_sequence = std::max(window.after_sequence.value_or(0), record.sequence);
    }
    return window;
  }
  // A journal that answers, but with nothing, is one this user may not read: not a source.
  const auto journal = run_journalctl({"-n", "1"});
  if (journal.text && !trimmed(*journal.text).empty()) {
    window.source = "journalctl -k";
    return window;
  }
  window.error = kmsg.error + "; " + (journal.text ? "journalctl -k printed no kernel message (no permission to read the journal?)"
                                                   : journal.error);
  return window;
}

void read_kernel_log_window(kernel_log_window& window) {
  window.read = false;
  window.read_error.clear();
  if (window.source.empty()) return;
  if (window.source == "journalctl -k") {
    const auto journal = run_journalctl({"--since=@" + std::to_string(window.opened_unix)});
    if (!journal.text) {
      window.read_error = journal.error;
      return;
    }
    std::vector<std::string_view> messages;
    for (std::string_view rest = *journal.text; !rest.empty();) {
      const auto end = rest.find('\n');
      if (const auto line = trimmed(rest.substr(0, end)); !line.empty()) messages.push_back(line);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    keep_xid_lines(messages, window);
  } else {
    const auto kmsg = read_kmsg(window.source);
    if (!kmsg.text) {
      window.read_error = kmsg.error;
      return;
    }
    const auto records = parse_kmsg_records(*kmsg.text);
    std::vector<std::string_view> messages;
    for (const auto& record : records) {
      if (!window.after_sequence || record.sequence > *window.after_sequence) messages.push_back(record.message);
    }
    keep_xid_lines(messages, window);
  }
  window.read = true;
}

json to_json(const kernel_log_window& w) {
  return {{"source", w.source},
          {"error", w.error},
          {"after_sequence", w.after_sequence ? json(*w.after_sequence) : json(nullptr)},
          {"opened_unix", w.opened_unix},
          {"opened_utc", w.opened_utc},
          {"read", w.read},
          {"read_error", w.read_error},
          {"messages", w.messages},
          {"xid_lines", w.xid_lines}};
}

kernel_log_window kernel_log_window_from_json(const json& j) {
  kernel_log_window w;
  if (!j.is_object()) return w;
  w.source = json_text(j, "source");
  w.error = json_text(j, "error");
  if (const auto it = j.find("after_sequence"); it != j.end() && it->is_number_unsigned()) {
    w.after_sequence = it->get<unsigned long long>();
  }
  w.opened_unix = static_cast<long long>(number_field(j, "opened_unix").value_or(0));
  w.opened_utc = json_text(j, "opened_utc");
  w.read = j.value("read", false);
  w.read_error = json_text(j, "read_error");
  w.messages = static_cast<std::size_t>(number_field(j, "messages").value_or(0));
  if (const auto it = j.find("xid_lines"); it != j.end() && it->is_array()) {
    for (const auto& line : *it) {
      if (line.is_string()) w.xid_lines.push_back(line.get<std::string>());
    }
  }
  return w;
}

void record_health_start(json& health) {
  // The window first: an Xid the start's own reading provokes belongs to the run.
  const auto window = open_kernel_log_window();
  health["start"] = to_json(take_health_snapshot());
  health["kernel_log"] = to_json(window);
}

void record_health_end(json& health) {
  health["end"] = to_json(take_health_snapshot());
  auto window = kernel_log_window_from_json(field(health, "kernel_log"));
  read_kernel_log_window(window);
  health["kernel_log"] = to_json(window);
}

}  // namespace hdb
