// The GPU health record on a real node (label gpu; skipped without nvidia-smi or a GPU): what this
// driver answers to the record's query (one call where it knows every field), the remap
// histogram of its -q, the kernel log window, and an item line (or an INFO line saying why) for
// every GPU. It grades nothing about the node: a faulty GPU is its lines' business, not this test's.
// The messages (WARN) say what the reads cost here.
#include <algorithm>
#include <set>
#include <string>

#include "catch_compat.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/data/gpu_health.hpp"
#include "hdb/harness/verdict/check.hpp"
#include "hdb/util/process.hpp"
#include "test_support.hpp"

namespace {

using json = nlohmann::json;

// The node's GPUs as meta.json's node.gpus names them (index, uuid, pci_bus_id), from nvidia-smi.
json node_gpus() {
  const auto query = hdb::query_gpus({"index", "uuid", "pci.bus_id"});
  if (!query.error.empty() || query.gpus.empty()) hdb_test::skip_test(("no GPU through nvidia-smi: " + query.error).c_str());
  json gpus = json::array();
  for (const auto& row : query.gpus) {
    gpus.push_back({{"index", row.number("index").value_or(-1)}, {"uuid", row.text("uuid")}, {"pci_bus_id", row.text("pci.bus_id")}});
  }
  return gpus;
}

}  // namespace

TEST_CASE("the GPU health record of this node: one query, every GPU, each item a line or a reason", "[gpu][gpu_health]") {
  if (!hdb::find_in_path("nvidia-smi")) hdb_test::skip_test("no nvidia-smi on PATH");
  const auto gpus = node_gpus();
  auto window = hdb::open_kernel_log_window();
  const auto start = hdb::take_health_snapshot();
  const auto end = hdb::take_health_snapshot();
  hdb::read_kernel_log_window(window);
  const auto& record = end.record;
  WARN("record query: " << record.calls << " call(s), " << record.elapsed_s * 1000 << " ms; refused: "
                        << (record.refused.empty() ? std::string("none") : record.refused.front() + " ...")
                        << "; kernel log: " << (window.source.empty() ? window.error : window.source) << ", "
                        << window.messages << " messages in the window");
  REQUIRE(record.available);
  CHECK(record.gpus.size() == gpus.size());
  if (record.refused.empty()) CHECK(record.calls == 1);  // one call where the driver knows every field
  for (const auto& gpu : record.gpus) {
    CHECK(gpu.fields.size() + record.refused.size() == hdb::gpu_record_fields().size() - 1);
  }
  json meta = {{"node", {{"gpus", gpus}}},
               {"health", {{"start", hdb::to_json(start)}, {"end", hdb::to_json(end)}, {"kernel_log", hdb::to_json(window)}}}};
  std::vector<std::string> notes;
  const auto lines = hdb::gpu_record_lines(meta, &notes);
  std::string text;
  for (const auto& l : lines) {
    text += std::string(to_string(l.result)) + " " + hdb::gpu_text(l.gpus) + " " + l.figure + " [" + l.reading + "] " + l.reason + "\n";
  }
  for (const auto& note : notes) text += "note: " + note + "\n";
  WARN(text);
  for (const auto& gpu : gpus) {
    const int index = gpu["index"].get<int>();
    std::set<std::string> items;
    for (const auto& l : lines) {
      if (std::find(l.gpus.begin(), l.gpus.end(), index) != l.gpus.end()) items.insert(l.figure);
    }
    INFO("GPU " << index);
    CHECK(items.contains("ECC"));
    CHECK((items.contains("row remap") || items.contains("retired pages")));
    CHECK(items.contains("reset status"));
  }
  CHECK(std::none_of(lines.begin(), lines.end(), [](const hdb::graded_line& l) { return l.reason.empty(); }));
}
