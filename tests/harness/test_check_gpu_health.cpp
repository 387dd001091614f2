// hdbench check on the GPU's own health record (check_gpu_record.cpp): ECC, row remap or retired
// pages, NVSwitch fabric, the driver's reset flags and the Xid lines of the run's kernel log, read
// from nvidia-smi and /dev/kmsg text in the formats they print, hand-written and a real H200's
// (fixtures/gpu_health/README.md). Each faulty reading is its line with its grade and words; what
// is not read is INFO, never a PASS; an Xid on another GPU's address is not blamed on one of ours;
// and the lines reach check.txt, check.json, fleet and the Prometheus text with their counters.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/data/gpu_health.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/harness/verdict/fleet.hpp"
#include "hdb/harness/verdict/prometheus_render.hpp"
#include "hdb/util/process.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using hdb::grade;

const std::string gpu0_uuid = "GPU-3b0a11e2-5f4d-4c1e-9d7a-0c3b00000000";
const std::string gpu1_uuid = "GPU-5e0b22f3-6a5e-4d2f-8e8b-1d5e00000001";

std::string fixture_text(const std::string& name) { return hdb::read_text_file(hdb_test::fixture("gpu_health/" + name)); }

// What take_health_snapshot makes of a --query-gpu answer (and the -q text) that named every field.
hdb::gpu_record_snapshot record_of(const std::string& csv, const std::string& query_text = "") {
  hdb::smi_field_query query;
  query.gpus = hdb::parse_smi_query(fixture_text(csv), hdb::gpu_record_fields());
  query.calls = 1;
  auto snapshot = hdb::gpu_record_from(query, query_text.empty() ? "" : fixture_text(query_text));
  snapshot.taken_utc = "2026-12-02T14:20:11Z";
  return snapshot;
}

// The window of a run that read `records` of kmsg_run.txt (the first line is the log before the run).
hdb::kernel_log_window window_of(const std::string& records) {
  const hdb_test::temp_dir dir;
  const auto kmsg = dir.path() / "kmsg";
  const hdb_test::scoped_env stand_in("HDBENCH_KMSG", kmsg.string());
  const auto text = fixture_text(records);
  hdb::atomic_write_file(kmsg, text.substr(0, text.find('\n') + 1));
  auto window = hdb::open_kernel_log_window();
  hdb::atomic_write_file(kmsg, text);  // the run's messages after the opening
  hdb::read_kernel_log_window(window);
  return window;
}

hdb::kernel_log_window quiet_window() {
  hdb::kernel_log_window window;
  window.source = "/dev/kmsg";
  window.read = true;
  window.messages = 12;
  return window;
}

// Two GPUs whose addresses are written as nvidia-smi and as the probe write them.
json two_gpus() {
  return json::array({{{"index", 0}, {"uuid", gpu0_uuid}, {"pci_bus_id", "00000000:3B:00.0"}},
                      {{"index", 1}, {"uuid", gpu1_uuid}, {"pci_bus_id", "0000:5e:00.0"}}});
}

json meta_of(const std::optional<hdb::gpu_record_snapshot>& start, const std::optional<hdb::gpu_record_snapshot>& end,
             const hdb::kernel_log_window& window) {
  json health = {{"start", json::object()}, {"end", json::object()}, {"kernel_log", hdb::to_json(window)}};
  if (start) health["start"]["gpu_record"] = hdb::to_json(*start);
  if (end) health["end"]["gpu_record"] = hdb::to_json(*end);
  return {{"run_id", "gpu-health"}, {"node", {{"gpus", two_gpus()}}}, {"health", health}};
}

std::vector<const hdb::graded_line*> lines_of(const std::vector<hdb::graded_line>& lines, const std::string& item,
                                              std::vector<int> gpus) {
  std::vector<const hdb::graded_line*> found;
  for (const auto& line : lines) {
    if (line.figure == item && line.gpus == gpus) found.push_back(&line);
  }
  return found;
}

// The one line of `item` on `gpus` with `reading`; fails the test when there is not exactly one. A copy,
// not a reference into `lines`: g++ 13 warns of a dangling reference wherever a reference returned by a
// call that was passed temporaries (the item and reading) is bound to a name.
hdb::graded_line line_of(const std::vector<hdb::graded_line>& lines, const std::string& item, std::vector<int> gpus,
                         const std::string& reading) {
  std::vector<const hdb::graded_line*> found;
  for (const auto* line : lines_of(lines, item, gpus)) {
    if (line->reading == reading) found.push_back(line);
  }
  INFO(item << " " << reading);
  REQUIRE(found.size() == 1);
  return *found.front();
}

std::string all_lines(const std::vector<hdb::graded_line>& lines) {
  std::string text;
  for (const auto& l : lines) {
    text += std::string(to_string(l.result)) + " " + hdb::gpu_text(l.gpus) + " " + l.figure + " [" + l.reading + "] " + l.reason + "\n";
  }
  return text;
}

hdb::health_counter counter(const std::string& name, const std::string& label, const std::string& value, double number) {
  return {name, {{label, value}}, number};
}

bool carries(const hdb::graded_line& line, const hdb::health_counter& c) {
  return std::find(line.counters.begin(), line.counters.end(), c) != line.counters.end();
}

}  // namespace

TEST_CASE("GPU record: a clean reading is PASS per item, a node without a fabric one note", "[check][gpu_health]") {
  const auto clean = record_of("query_clean.csv");
  REQUIRE(clean.available);
  std::vector<std::string> notes;
  const auto lines = hdb::gpu_record_lines(meta_of(clean, clean, quiet_window()), &notes);
  INFO(all_lines(lines));
  for (const int gpu : {0, 1}) {
    CHECK(line_of(lines, "ECC", {gpu}, "on, 0 uncorrectable").result == grade::pass);
    CHECK(line_of(lines, "row remap", {gpu}, "none pending").result == grade::pass);
    CHECK(line_of(lines, "reset status", {gpu}, "none asked").result == grade::pass);
    CHECK(line_of(lines, "Xid", {gpu}, "none").result == grade::pass);
  }
  const auto ecc = line_of(lines, "ECC", {0}, "on, 0 uncorrectable");
  CHECK_THAT(ecc.reason, hdb_test::contains_text("corrected errors did not grow (volatile 0 -> 0, aggregate 3 -> 3)"));
  CHECK(carries(ecc, counter("ecc_errors", "type", "corrected_aggregate", 3)));
  CHECK(carries(line_of(lines, "row remap", {1}, "none pending"), counter("remapped_rows", "state", "correctable", 1)));
  CHECK_THAT(line_of(lines, "Xid", {0}, "none").reason, hdb_test::contains_text("no Xid for PCI 0000:3b:00"));
  CHECK(std::all_of(lines.begin(), lines.end(), [](const auto& l) { return l.result == grade::pass; }));
  CHECK(notes == std::vector<std::string>{"fabric not graded: GPU 0,1: no NVSwitch fabric (fabric.state '[N/A]')"});
  // Without a place for notes, the same is one INFO line, never nothing.
  const auto without_notes = hdb::gpu_record_lines(meta_of(clean, clean, quiet_window()));
  CHECK(line_of(without_notes, "fabric", {0, 1}, "no fabric").result == grade::not_graded);
  // Where one GPU is on a fabric, another without is a line of its own.
  auto one_joined = clean;
  one_joined.gpus[0].fields["fabric.state"] = "Completed";
  one_joined.gpus[0].fields["fabric.status"] = "Success";
  notes.clear();
  const auto mixed = hdb::gpu_record_lines(meta_of(one_joined, one_joined, quiet_window()), &notes);
  CHECK(notes.empty());
  CHECK(line_of(mixed, "fabric", {0}, "Completed, Success").result == grade::pass);
  CHECK_THAT(line_of(mixed, "fabric", {1}, "no fabric").reason, hdb_test::contains_text("no NVSwitch fabric (fabric.state '[N/A]')"));
}

TEST_CASE("GPU record: a real H200 (driver 580.159.04) as its nvidia-smi and kernel log answered: clean, its refusals INFO",
          "[check][gpu_health]") {
  // The driver's own answers, captured on the GPU machine (fixtures/gpu_health/README.md): the whole
  // `nvidia-smi -q`, each record field's value, its refusal of the reset flags (on stdout, exit 2)
  // and the kernel's last records, NVRM's among them.
  const hdb_test::temp_dir dir;
  const auto fixtures = hdb_test::fixture("gpu_health").string();
  auto refusal_of = [](const std::string& field) {
    return "  --query-gpu=*reset_status." + field + "*) printf 'Field \"reset_status." + field +
           "\" is not a valid field to query.\\n\\n'; exit 2 ;;\n";
  };
  const hdb_test::fake_nvidia_smi smi(dir.path(),
                                      "  -q) cat '" + fixtures + "/h200_q.txt' ;;\n"
                                      "  nvlink) ;;\n" +
                                          refusal_of("reset_required") + refusal_of("drain_and_reset_recommended") +
                                          "  --query-gpu=*) line=''\n"
                                          "    for f in $(echo \"${1#--query-gpu=}\" | tr , ' '); do\n"
                                          "      line=\"$line${line:+, }$(sed -n \"s/^$f=//p\" '" + fixtures +
                                          "/h200_query_answers.txt')\"\n"
                                          "    done\n"
                                          "    echo \"$line\" ;;\n");
  const auto snapshot = hdb::take_health_snapshot();
  const auto& record = snapshot.record;
  REQUIRE(record.available);
  CHECK(record.refused == std::vector<std::string>{"reset_status.reset_required", "reset_status.drain_and_reset_recommended"});
  CHECK(record.calls == 3);  // one refusal a call, then the answer
  REQUIRE(record.gpus.size() == 1);
  const auto& gpu = record.gpus.front();
  CHECK(gpu.uuid == "GPU-31930ab1-1fdf-aa66-0fc7-b0ccd9729a9a");
  CHECK(*gpu.text("ecc.mode.current") == "Enabled");
  CHECK(*gpu.text("retired_pages.pending") == "[N/A]");  // an H200 remaps rows; it retires no pages
  CHECK(gpu.remap_banks == decltype(gpu.remap_banks){{"max", 3072}, {"high", 0}, {"partial", 0}, {"low", 0}, {"none", 0}});

  const json gpus = json::array({{{"index", 0}, {"uuid", gpu.uuid}, {"pci_bus_id", "00000000:00:06.0"}}});
  const json meta = {{"run_id", "h200"},
                     {"node", {{"gpus", gpus}}},
                     {"health",
                      {{"start", {{"gpu_record", hdb::to_json(record)}}},
                       {"end", {{"gpu_record", hdb::to_json(record)}}},
                       {"kernel_log", hdb::to_json(window_of("h200_kmsg.txt"))}}}};
  std::vector<std::string> notes;
  const auto lines = hdb::gpu_record_lines(meta, &notes);
  INFO(all_lines(lines));
  CHECK(line_of(lines, "ECC", {0}, "on, 0 uncorrectable").result == grade::pass);
  CHECK(line_of(lines, "row remap", {0}, "none pending").result == grade::pass);
  const auto xid = line_of(lines, "Xid", {0}, "none");
  CHECK(xid.result == grade::pass);
  CHECK_THAT(xid.reason, hdb_test::contains_text("no Xid for PCI 0000:00:06 in the kernel log during the run ("));
  CHECK_THAT(xid.reason, hdb_test::contains_text("11 kernel messages in the run"));
  const auto reset = line_of(lines, "reset status", {0}, "not read");
  CHECK(reset.result == grade::not_graded);
  CHECK_THAT(reset.reason, hdb_test::contains_text("reset_status.reset_required unknown to this driver"));
  CHECK(lines.size() == 4);
  CHECK(notes == std::vector<std::string>{"fabric not graded: GPU 0: no NVSwitch fabric (fabric.state 'N/A')"});
}

TEST_CASE("GPU record: faults at the run's start and end, each its line with its grade, evidence and advice", "[check][gpu_health]") {
  const auto start = record_of("query_faulty_start.csv", "q_two_gpus.txt");
  const auto end = record_of("query_faulty_end.csv", "q_two_gpus.txt");
  const auto lines = hdb::gpu_record_lines(meta_of(start, end, quiet_window()));
  INFO(all_lines(lines));
  SECTION("GPU 0: uncorrectable and corrected ECC errors, a row remap pending, a reset required") {
    const auto uncorrectable = line_of(lines, "ECC", {0}, "2 uncorrectable");
    CHECK(uncorrectable.result == grade::fail);
    CHECK_THAT(uncorrectable.reason, hdb_test::contains_text("2 since the driver loaded (ecc.errors.uncorrected.volatile.total)"));
    CHECK_THAT(uncorrectable.reason, hdb_test::contains_text("2 during the run (ecc.errors.uncorrected.aggregate.total 1 -> 3)"));
    CHECK_THAT(uncorrectable.reason, hdb_test::contains_text("drain the GPU and reset it"));
    CHECK(carries(uncorrectable, counter("ecc_errors", "type", "uncorrected_volatile", 2)));
    const auto corrected = line_of(lines, "ECC", {0}, "corrected +5");
    CHECK(corrected.result == grade::warn);
    CHECK_THAT(corrected.reason, hdb_test::contains_text("(volatile 4 -> 9, aggregate 10 -> 15)"));
    const auto remap = line_of(lines, "row remap", {0}, "pending");
    CHECK(remap.result == grade::fail);
    CHECK_THAT(remap.reason, hdb_test::contains_text(
                                 "row remap pending (remapped_rows.pending Yes): the GPU needs a reset (nvidia-smi -r, or a "
                                 "reboot) before the remap takes effect; drain it"));
    CHECK(carries(remap, counter("remapped_rows", "state", "pending", 1)));
    CHECK(carries(remap, counter("remap_banks", "availability", "max", 2558)));
    CHECK(line_of(lines, "fabric", {0}, "Completed, Success").result == grade::pass);
    const auto reset = line_of(lines, "reset status", {0}, "reset required");
    CHECK(reset.result == grade::fail);
    CHECK(carries(reset, counter("reset_status", "flag", "reset_required", 1)));
    CHECK(lines_of(lines, "reset status", {0}).size() == 1);
  }
  SECTION("GPU 1: ECC off, a remap failure and scarce banks, a fabric not joined, drain recommended") {
    const auto off = line_of(lines, "ECC", {1}, "off");
    CHECK(off.result == grade::warn);
    CHECK_THAT(off.reason, hdb_test::contains_text("nvidia-smi -e 1 -i 1"));
    CHECK(line_of(lines, "row remap", {1}, "failed").result == grade::fail);
    const auto scarce = line_of(lines, "row remap", {1}, "3 banks low");
    CHECK(scarce.result == grade::warn);
    CHECK_THAT(scarce.reason, hdb_test::contains_text("max 2550, high 4, partial 3, low 2, none 1"));
    const auto fabric = line_of(lines, "fabric", {1}, "In Progress");
    CHECK(fabric.result == grade::fail);
    CHECK_THAT(fabric.reason, hdb_test::contains_text("nvidia-fabricmanager"));
    CHECK(line_of(lines, "reset status", {1}, "drain and reset").result == grade::fail);
  }
}

TEST_CASE("GPU record: Xid lines, each on the GPU at its address, with its meaning, another address not blamed",
          "[check][gpu_health]") {
  const auto clean = record_of("query_clean.csv");
  const auto window = window_of("kmsg_run.txt");
  REQUIRE(window.read);
  CHECK(window.messages == 9);  // the records after the first, dictionary lines not counted
  CHECK(window.xid_lines.size() == 7);
  const auto lines = hdb::gpu_record_lines(meta_of(clean, clean, window));
  INFO(all_lines(lines));
  const auto fell_off = line_of(lines, "Xid", {0}, "79");
  CHECK(fell_off.result == grade::fail);
  CHECK_THAT(fell_off.reason, hdb_test::contains_text("the GPU fell off the bus"));
  CHECK_THAT(fell_off.reason, hdb_test::contains_text("drain the node and power-cycle it"));
  CHECK(carries(fell_off, counter("xid_events", "xid", "79", 1)));
  const auto program = line_of(lines, "Xid", {1}, "13 x2");
  CHECK(program.result == grade::warn);
  CHECK_THAT(program.reason, hdb_test::contains_text("(pid 20417 python3): usually the program's own fault, not the GPU's"));
  CHECK(carries(program, counter("xid_events", "xid", "13", 2)));
  CHECK(line_of(lines, "Xid", {1}, "94").result == grade::fail);
  const auto unknown = line_of(lines, "Xid", {1}, "154");
  CHECK(unknown.result == grade::warn);
  CHECK_THAT(unknown.reason, hdb_test::contains_text("no meaning for: look it up in NVIDIA's Xid catalogue"));
  // The double-bit error of a GPU at 0000:86:00 is named for the node, not graded on ours.
  const auto elsewhere = line_of(lines, "Xid", {}, "48");
  CHECK(elsewhere.result == grade::not_graded);
  CHECK_THAT(elsewhere.reason, hdb_test::contains_text("on PCI 0000:86:00, none of this run's GPUs (0000:3b:00, 0000:5e:00): not blamed"));
  CHECK(elsewhere.counters.empty());
  for (const int gpu : {0, 1}) {
    for (const auto* line : lines_of(lines, "Xid", {gpu})) CHECK(line->reading.find("48") == std::string::npos);
  }
  CHECK(line_of(lines, "Xid", {}, "1 unreadable").result == grade::not_graded);
}

TEST_CASE("GPU record: N/A, Not Supported, empty and garbage are INFO with the reason, never PASS", "[check][gpu_health]") {
  const auto unsupported = record_of("query_unsupported.csv");
  REQUIRE(unsupported.available);
  hdb::kernel_log_window unreadable;
  unreadable.error = "/dev/kmsg: Operation not permitted; journalctl -k printed no kernel message (no permission to read the journal?)";
  const auto lines = hdb::gpu_record_lines(meta_of(unsupported, unsupported, unreadable));
  INFO(all_lines(lines));
  REQUIRE_FALSE(lines.empty());
  for (const auto& line : lines) CHECK(line.result == grade::not_graded);
  CHECK_THAT(line_of(lines, "ECC", {0}, "not read").reason, hdb_test::contains_text("ecc.mode.current '[N/A]' and no error counter read"));
  CHECK_THAT(line_of(lines, "ECC", {1}, "not read").reason, hdb_test::contains_text("ecc.mode.current 'garbage'"));
  CHECK_THAT(line_of(lines, "row remap", {0}, "not read").reason, hdb_test::contains_text("retired_pages.pending '[N/A]'"));
  CHECK_THAT(line_of(lines, "fabric", {0}, "no fabric").reason, hdb_test::contains_text("fabric.state '[Not Supported]'"));
  CHECK_THAT(line_of(lines, "fabric", {1}, "no fabric").reason, hdb_test::contains_text("fabric.state empty"));
  CHECK_THAT(line_of(lines, "reset status", {1}, "not read").reason, hdb_test::contains_text("reset_status.reset_required 'Sometimes'"));
  const auto log = line_of(lines, "Xid", {}, "not read");
  CHECK_THAT(log.reason, hdb_test::contains_text("the kernel log could not be read (/dev/kmsg: Operation not permitted"));
  CHECK(lines_of(lines, "Xid", {0}).empty());
}

TEST_CASE("GPU record: fields a driver refused and a GPU missing from the answer are INFO naming why", "[check][gpu_health]") {
  auto old_driver = record_of("query_clean.csv");
  old_driver.refused = {"fabric.state", "fabric.status", "reset_status.reset_required", "reset_status.drain_and_reset_recommended"};
  for (auto& gpu : old_driver.gpus) {
    for (const auto& f : old_driver.refused) gpu.fields.erase(f);
  }
  old_driver.gpus.pop_back();  // GPU 1 not in the answer
  const auto lines = hdb::gpu_record_lines(meta_of(old_driver, old_driver, quiet_window()));
  INFO(all_lines(lines));
  CHECK_THAT(line_of(lines, "fabric", {0}, "no fabric").reason, hdb_test::contains_text("fabric.state unknown to this driver"));
  CHECK_THAT(line_of(lines, "reset status", {0}, "not read").reason,
             hdb_test::contains_text("reset_status.reset_required unknown to this driver"));
  CHECK(line_of(lines, "ECC", {0}, "on, 0 uncorrectable").result == grade::pass);
  for (const auto* item : {"ECC", "row remap", "reset status"}) {
    CHECK_THAT(line_of(lines, item, {1}, "not read").reason, hdb_test::contains_text("nvidia-smi printed no record for this GPU"));
  }
}

TEST_CASE("GPU record: at the boundaries, one uncorrectable error FAILs and one more corrected error WARNs", "[check][gpu_health]") {
  const auto clean = record_of("query_clean.csv");
  auto one_more = clean;
  one_more.gpus[0].fields["ecc.errors.corrected.aggregate.total"] = "4";  // 3 at the start
  one_more.gpus[1].fields["ecc.errors.uncorrected.volatile.total"] = "1";
  const auto lines = hdb::gpu_record_lines(meta_of(clean, one_more, quiet_window()));
  INFO(all_lines(lines));
  CHECK(line_of(lines, "ECC", {0}, "corrected +1").result == grade::warn);
  CHECK(lines_of(lines, "ECC", {0}).size() == 1);
  CHECK(line_of(lines, "ECC", {1}, "1 uncorrectable").result == grade::fail);
  // Fewer at the end than at the start (a counter reset with the driver) is no growth.
  const auto fewer = hdb::gpu_record_lines(meta_of(one_more, clean, quiet_window()));
  CHECK(line_of(fewer, "ECC", {0}, "on, 0 uncorrectable").result == grade::pass);
}

TEST_CASE("GPU record: a GPU that retires pages is graded by them, a pending retirement FAILs", "[check][gpu_health]") {
  const auto retiring = record_of("query_retired_pages.csv");
  const auto lines = hdb::gpu_record_lines(meta_of(retiring, retiring, quiet_window()));
  INFO(all_lines(lines));
  const auto pending = line_of(lines, "retired pages", {0}, "pending");
  CHECK(pending.result == grade::fail);
  CHECK_THAT(pending.reason, hdb_test::contains_text("2 pages retired for single-bit and 1 for double-bit ECC errors"));
  CHECK(carries(pending, counter("retired_pages", "cause", "pending", 1)));
  CHECK(line_of(lines, "retired pages", {1}, "none pending").result == grade::pass);
  CHECK(lines_of(lines, "row remap", {0}).empty());
}

TEST_CASE("GPU record: read at one end of the run only, growth is not judged and the line says so", "[check][gpu_health]") {
  const auto end = record_of("query_faulty_end.csv");
  auto failed = end;
  failed.available = false;
  failed.error = "nvidia-smi --query-gpu=uuid failed (timed out after 30 s (killed))";
  failed.gpus.clear();
  const auto lines = hdb::gpu_record_lines(meta_of(failed, end, quiet_window()));
  INFO(all_lines(lines));
  const auto ecc = line_of(lines, "ECC", {0}, "2 uncorrectable");  // the volatile count alone decides
  CHECK(ecc.result == grade::fail);
  CHECK_THAT(ecc.reason, hdb_test::contains_text("2 since the driver loaded"));
  CHECK(lines_of(lines, "ECC", {0}).size() == 1);  // no growth of corrected errors without the start
  CHECK(line_of(lines, "row remap", {0}, "pending").result == grade::fail);
  // Neither end read: one line for the node, and the Xid lines still graded.
  const auto neither = hdb::gpu_record_lines(meta_of(failed, failed, quiet_window()));
  INFO(all_lines(neither));
  CHECK_THAT(line_of(neither, "GPU health record", {}, "not read").reason,
             hdb_test::contains_text("at the run's start (nvidia-smi --query-gpu=uuid failed (timed out"));
  CHECK(line_of(neither, "Xid", {0}, "none").result == grade::pass);
}

TEST_CASE("GPU record: a run of an older hdbench says it has no record, in one INFO line", "[check][gpu_health]") {
  const json meta = {{"node", {{"gpus", two_gpus()}}}, {"health", {{"start", json::object()}, {"end", json::object()}}}};
  const auto lines = hdb::gpu_record_lines(meta);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].result == grade::not_graded);
  CHECK(lines[0].figure == "GPU health record");
  CHECK(lines[0].reading == "not recorded");
}

TEST_CASE("GPU record: Xid lines as drivers print them, and PCI addresses in every width", "[gpu_health]") {
  const auto fell = hdb::parse_xid_line("[ 9126.1] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
  REQUIRE(fell);
  CHECK(fell->xid == 79);
  CHECK(fell->pci == "0000:3b:00");
  CHECK_FALSE(fell->pid);
  CHECK(fell->process.empty());
  CHECK(fell->message == "GPU has fallen off the bus.");
  const auto fault = hdb::parse_xid_line("NVRM: Xid (PCI:0000:5E:00): 31, pid=8361, name=train.py, Ch 00000010, intr 10000000. MMU Fault");
  REQUIRE(fault);
  CHECK(fault->pid == 8361);
  CHECK(fault->process == "train.py");
  CHECK(fault->message == "Ch 00000010, intr 10000000. MMU Fault");
  const auto old = hdb::parse_xid_line("kernel: NVRM: Xid (0000:03:00): 14, Channel 00000001");  // no "PCI:", no pid
  REQUIRE(old);
  CHECK(old->xid == 14);
  CHECK(old->pci == "0000:03:00");
  CHECK(old->message == "Channel 00000001");
  for (const char* not_xid : {"NVRM: GPU at PCI:0000:3b:00: GPU-...", "NVRM: Xid (garbled", "NVRM: Xid (PCI:0000:3b:00): x, pid=1", ""}) {
    CHECK_FALSE(hdb::parse_xid_line(not_xid));
  }
  CHECK(hdb::pci_device_key("00000000:3B:00.0") == "0000:3b:00");
  CHECK(hdb::pci_device_key("0000:3b:00.0") == "0000:3b:00");
  CHECK(hdb::pci_device_key("PCI:0000:3b:00") == "0000:3b:00");
  CHECK(hdb::pci_device_key("3b:00.0") == "0000:3b:00");
  CHECK(hdb::pci_device_key(" 0001:C1:1f.7 ") == "0001:c1:1f");
  for (const char* not_address : {"", "N/A", "0000:3g:00.0", "0000:100:00.0", "3b"}) CHECK(hdb::pci_device_key(not_address).empty());
}

TEST_CASE("GPU record: the kernel log window, from /dev/kmsg by sequence number, else journalctl -k, else why not",
          "[gpu_health]") {
  const hdb_test::temp_dir dir;
  SECTION("kmsg records and their dictionary lines") {
    const auto records = hdb::parse_kmsg_records(fixture_text("kmsg_run.txt"));
    REQUIRE(records.size() == 10);
    CHECK(records[1].sequence == 4102);
    CHECK(records[1].message.starts_with("NVRM: Xid (PCI:0000:3b:00): 79"));
    CHECK(records[2].sequence == 4103);  // " SUBSYSTEM=pci" and " DEVICE=..." belong to 4102
  }
  SECTION("journalctl -k where /dev/kmsg is not readable") {
    const hdb_test::scoped_env no_kmsg("HDBENCH_KMSG", (dir.path() / "no-kmsg").string());
    hdb::atomic_write_file(dir.path() / "journalctl",
                           "#!/bin/sh\n"
                           "echo \"$@\" >> \"$(dirname \"$0\")/calls\"\n"
                           "case \"$*\" in\n"
                           "  *--since=@*) echo 'NVRM: loading'; echo 'NVRM: Xid (PCI:0000:5e:00): 74, pid=1, name=x, NVLink: fatal' ;;\n"
                           "  *' -n 1'*) echo 'Linux version 6.8.0' ;;\n"
                           "esac\n");
    std::filesystem::permissions(dir.path() / "journalctl", std::filesystem::perms::owner_all);
    const hdb_test::scoped_env path("PATH", dir.path().string() + ":/usr/bin:/bin");
    auto window = hdb::open_kernel_log_window();
    CHECK(window.source == "journalctl -k");
    hdb::read_kernel_log_window(window);
    CHECK(window.read);
    CHECK(window.messages == 2);
    REQUIRE(window.xid_lines.size() == 1);
    CHECK(window.xid_lines[0].starts_with("NVRM: Xid (PCI:0000:5e:00): 74"));
    CHECK_THAT(hdb::read_text_file(dir.path() / "calls"),
               hdb_test::contains_text("-k -q --no-pager -o cat --since=@" + std::to_string(window.opened_unix)));
    // It round-trips through meta.json.
    const auto again = hdb::kernel_log_window_from_json(hdb::to_json(window));
    CHECK(again.xid_lines == window.xid_lines);
    CHECK(again.opened_unix == window.opened_unix);
  }
  SECTION("neither: the reason of each, and nothing read") {
    const hdb_test::scoped_env no_kmsg("HDBENCH_KMSG", (dir.path() / "no-kmsg").string());
    const hdb_test::scoped_env path("PATH", dir.path().string());
    auto window = hdb::open_kernel_log_window();
    CHECK(window.source.empty());
    CHECK_THAT(window.error, hdb_test::contains_text("no-kmsg: No such file or directory"));
    CHECK_THAT(window.error, hdb_test::contains_text("journalctl not found in PATH"));
    hdb::read_kernel_log_window(window);
    CHECK_FALSE(window.read);
  }
}

TEST_CASE("GPU record: the lines reach check.txt, check.json, fleet and Prometheus with their counters", "[check][gpu_health]") {
  const hdb_test::temp_dir dir;
  // The Gen4 fixture run (one H200), its link at Gen5, its GPU the faulty GPU 0 of the fixtures.
  const auto run = dir.path() / "gpu-health";
  fs::create_directories(run);
  const auto gen4 = hdb_test::fixture("check_runs/gen4");
  fs::copy_file(gen4 / "results.csv", run / "results.csv");
  auto meta = *hdb::read_meta(gen4 / "meta.json");
  meta["run_id"] = "gpu-health";
  meta["node"]["hostname"] = "gpu01";
  auto& gpu = meta["node"]["gpus"][0];
  gpu["uuid"] = gpu0_uuid;
  gpu["pci_bus_id"] = "00000000:3B:00.0";
  gpu["pcie"]["gen_current"] = 5.0;
  for (auto* moment : {&meta["health"]["start"], &meta["health"]["end"]}) {
    for (auto& g : (*moment)["gpus"]) g["uuid"] = gpu0_uuid;
  }
  meta["health"]["start"]["gpu_record"] = hdb::to_json(record_of("query_faulty_start.csv", "q_two_gpus.txt"));
  meta["health"]["end"]["gpu_record"] = hdb::to_json(record_of("query_faulty_end.csv", "q_two_gpus.txt"));
  meta["health"]["kernel_log"] = hdb::to_json(window_of("kmsg_run.txt"));
  hdb::write_meta(run / "meta.json", meta);
  fs::create_directories(dir.path() / "no-sets");
  const auto report = hdb::check_run(run, {dir.path() / "no-sets", 0.05, HDB_TEST_SCHEMA_DIR});
  hdb::write_check_files(run, report);
  CHECK(report.exit_code() == 1);

  const auto text = hdb::read_text_file(run / "check.txt");
  INFO(text);
  for (const char* words : {"row remap pending (remapped_rows.pending Yes): the GPU needs a reset (nvidia-smi -r, or a reboot)",
                            "the GPU fell off the bus", "on PCI 0000:5e:00, none of this run's GPUs (0000:3b:00)"}) {
    CHECK_THAT(text, hdb_test::contains_text(words));
  }
  const auto written = json::parse(hdb::read_text_file(run / "check.json"));
  const auto remap = std::find_if(written["lines"].begin(), written["lines"].end(),
                                  [](const json& l) { return l["figure"] == "row remap" && l["reading"] == "pending"; });
  REQUIRE(remap != written["lines"].end());
  CHECK((*remap)["grade"] == "FAIL");
  CHECK((*remap)["gpus"] == json::array({0}));
  CHECK(std::count((*remap)["counters"].begin(), (*remap)["counters"].end(),
                   json{{"name", "remapped_rows"}, {"labels", {{"state", "pending"}}}, {"value", 1.0}}) == 1);

  const std::vector<std::string> series = {
      R"(hdbench_figure_grade{node="gpu01",family="health",figure="row remap",gpu="0"} 2)",
      R"(hdbench_gpu_remapped_rows{node="gpu01",gpu="0",state="pending"} 1)",
      R"(hdbench_gpu_remap_banks{node="gpu01",gpu="0",availability="high"} 2)",
      R"(hdbench_gpu_ecc_errors{node="gpu01",gpu="0",type="uncorrected_volatile"} 2)",
      R"(hdbench_gpu_xid_events{node="gpu01",gpu="0",xid="79"} 1)",
      R"(hdbench_gpu_reset_status{node="gpu01",gpu="0",flag="reset_required"} 1)",
  };
  hdb::fleet_options options;
  options.reference = dir.path() / "no-sets";
  options.plots = false;
  options.schema_dir = HDB_TEST_SCHEMA_DIR;
  const auto fleet = hdb::grade_fleet({run}, options);
  REQUIRE(fleet.nodes.size() == 1);
  const auto& node = fleet.nodes[0];
  const auto fleet_remap = std::find_if(node.lines.begin(), node.lines.end(),
                                        [](const auto& l) { return l.figure == "row remap" && l.reading == "pending"; });
  REQUIRE(fleet_remap != node.lines.end());
  CHECK(fleet_remap->result == grade::fail);
  CHECK(fleet_remap->counters == std::find_if(report.lines.begin(), report.lines.end(), [](const auto& l) {
                                   return l.figure == "row remap" && l.reading == "pending";
                                 })->counters);
  CHECK_THAT(hdb::render_fleet(fleet, hdb::output_format::text), hdb_test::contains_text("row remap"));
  for (const auto& prometheus : {hdb::render_prometheus(report), hdb::render_prometheus(fleet)}) {
    INFO(prometheus);
    for (const auto& line : series) CHECK_THAT(prometheus, hdb_test::contains_text(line + "\n"));
    // The other GPU's Xid is no series of ours.
    CHECK(prometheus.find(R"(xid="48")") == std::string::npos);
    CHECK_THAT(prometheus, hdb_test::contains_text("# TYPE hdbench_gpu_xid_events gauge\n"));
  }
  // What node_exporter would serve is valid exposition text, where promtool is there to say so.
  const auto promtool = hdb::find_in_path("promtool");
  const char* required = std::getenv("HDB_PROMETHEUS_TEST_REQUIRED");
  if (!promtool) {
    CHECK_FALSE((required != nullptr && std::string(required) == "1"));
    return;
  }
  hdb::atomic_write_file(dir.path() / "hdbench.prom", hdb::render_prometheus(report));
  hdb::child_spec spec;
  spec.argv = {"/bin/sh", "-c", "\"$0\" check metrics < \"$1\"", promtool->string(), (dir.path() / "hdbench.prom").string()};
  spec.stderr_to = hdb::child_stream::capture;
  const auto checked = hdb::run_with_deadline(spec);
  INFO(checked.output << checked.error_output);
  CHECK(checked.succeeded());
}
