// Report rules of the p2p family. % of peak comes from each case's traffic class
// (bench/p2p/schema.json): an NVLink pair against its link count x per-link rate per direction
// (meta.json node.topology), the host-staged pipeline against the smaller PCIe link of its two GPUs.
// Anomalies: a pair far below the pairs with the same link, direct P2P no faster than staging
// through the host, NVLink far below its peak, GPUs with fewer active links than their peers,
// pairs without peer access. The section renders the per-pair matrices at the largest size and
// the direct / staged ratio, the topology and the latencies.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"  // all_digits
#include "hdb/util/stats.hpp"

namespace hdb {
namespace {

using json = nlohmann::json;

// A pair this far below the median of the other pairs with the same link is flagged.
constexpr double peer_shortfall = 0.8;
// NVLink copy engines reach ~80-85 % of links x rate; below half something is wrong.
constexpr double nvlink_floor = 0.5;

const std::vector<std::string> matrix_methods = {"ce_peer", "sm_read", "sm_write", "ce_no_peer", "staged"};

std::string method_title(const std::string& api) {
  if (api == "ce_peer") return "cudaMemcpyPeerAsync, peer access on (copy engine)";
  if (api == "ce_no_peer") return "cudaMemcpyPeerAsync, peer access off (what the driver does instead)";
  if (api == "staged") return "host-staged pipeline (pinned bounce buffers, best chunk)";
  if (api == "sm_read") return "SM kernel on the destination reading peer memory";
  if (api == "sm_write") return "SM kernel on the source writing peer memory";
  return api;
}

std::optional<int> to_index(const std::string& text) {
  if (!all_digits(text)) return std::nullopt;
  return std::stoi(text);
}

std::optional<std::size_t> size_of(const result_row& row) {
  const auto& text = row.param("size_bytes");
  if (!all_digits(text)) return std::nullopt;
  return static_cast<std::size_t>(std::stoull(text));
}

const json& topology_of(const json& meta) {
  static const json none = json::object();
  if (meta.contains("node") && meta["node"].is_object() && meta["node"].contains("topology") &&
      meta["node"]["topology"].is_object()) {
    return meta["node"]["topology"];
  }
  return none;
}

const json* pair_record(const json& topology, int src, int dst) {
  if (!topology.contains("pairs") || !topology["pairs"].is_array()) return nullptr;
  for (const auto& p : topology["pairs"]) {
    if (p.value("src", -1) == src && p.value("dst", -1) == dst) return &p;
  }
  return nullptr;
}

std::optional<double> number(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return std::nullopt;
  return object[key].get<double>();
}

// --- the matrices ------------------------------------------------------------------------------

struct pair_value {
  int src;
  int dst;
  double value;
};

// Medians of `metric` of uni bandwidth rows of one method at one size.
std::vector<pair_value> pair_values(const median_index& m, const std::string& api, const std::string& metric,
                                    std::size_t size) {
  std::vector<pair_value> values;
  for (const auto& [row, value] : medians_of(m, "bandwidth", metric)) {
    if (row->param("api") != api || row->param("direction") != "uni" || size_of(*row) != size) continue;
    const auto src = to_index(row->param("src"));
    const auto dst = to_index(row->param("dst"));
    if (src && dst) values.push_back({*src, *dst, value});
  }
  return values;
}

// The largest size with a measured uni bandwidth median (any method), or nullopt.
std::optional<std::size_t> largest_uni_size(const median_index& m) {
  std::optional<std::size_t> largest;
  for (const auto& [row, value] : medians_of(m, "bandwidth", "bandwidth")) {
    if (row->param("direction") != "uni") continue;
    if (const auto size = size_of(*row)) largest = std::max(largest.value_or(0), *size);
  }
  return largest;
}

std::vector<int> devices_of(const std::vector<result_row>& rows, const json& meta) {
  std::set<int> devices;
  for (const auto& row : rows) {
    for (const char* key : {"src", "dst"}) {
      if (const auto d = to_index(row.param(key))) devices.insert(*d);
    }
  }
  const json& topology = topology_of(meta);
  if (topology.contains("gpus") && topology["gpus"].is_array()) {
    for (const auto& g : topology["gpus"]) devices.insert(g.value("index", -1));
  }
  devices.erase(-1);
  return {devices.begin(), devices.end()};
}

// Row = source, column = destination; "—" on the diagonal, "n/a" where nothing was measured.
std::string matrix(const std::vector<int>& devices, const std::vector<pair_value>& cells, int decimals) {
  std::vector<std::string> header = {"src \\ dst"};
  for (int d : devices) header.push_back("GPU " + std::to_string(d));
  table_rows out;
  for (int src : devices) {
    std::vector<std::string> line = {"GPU " + std::to_string(src)};
    for (int dst : devices) {
      if (src == dst) {
        line.emplace_back("—");
        continue;
      }
      const auto it = std::find_if(cells.begin(), cells.end(), [&](const pair_value& c) { return c.src == src && c.dst == dst; });
      line.push_back(it == cells.end() ? "n/a" : (decimals < 0 ? format_figure(it->value) : format_fixed(it->value, decimals)));
    }
    out.push_back(std::move(line));
  }
  return markdown_table(header, out);
}

std::vector<pair_value> ratio(const std::vector<pair_value>& top, const std::vector<pair_value>& bottom) {
  std::vector<pair_value> out;
  for (const auto& t : top) {
    for (const auto& b : bottom) {
      if (t.src == b.src && t.dst == b.dst && b.value > 0) out.push_back({t.src, t.dst, t.value / b.value});
    }
  }
  return out;
}

std::string topology_table(const json& topology) {
  if (!topology.contains("pairs") || !topology["pairs"].is_array() || topology["pairs"].empty()) return "";
  table_rows out;
  for (const auto& p : topology["pairs"]) {
    const json link = p.value("link", json::object());
    std::string what = link.value("type", "unknown");
    if (what == "nvlink" && link.contains("links") && link["links"].is_number()) {
      what = "NVLink x" + std::to_string(link["links"].get<int>());
      if (link.contains("via") && link["via"].is_string()) what += " (" + link["via"].get<std::string>() + ")";
    }
    if (link.contains("pcie_path") && link["pcie_path"].is_string()) what += ", PCIe " + link["pcie_path"].get<std::string>();
    const auto peak = number(link, "peak_GBps");
    out.push_back({std::to_string(p.value("src", -1)) + " -> " + std::to_string(p.value("dst", -1)), what,
                   peak ? format_figure(*peak) : "n/a", p.value("can_access_peer", false) ? "yes" : "no",
                   p.contains("performance_rank") ? p["performance_rank"].dump() : "n/a",
                   p.value("native_atomics", false) ? "yes" : "no", link.value("source", "unknown")});
  }
  return markdown_table({"pair", "link", "peak GB/s per direction", "peer access", "perf rank", "native atomics", "source"},
                        out);
}

std::string p2p_section(const std::vector<result_row>& rows, const json& meta) {
  std::string md;
  const median_index m = ok_medians(rows);
  const auto devices = devices_of(rows, meta);
  const auto largest = largest_uni_size(m);
  if (largest) {
    md += "**P2P bandwidth per pair at " + format_size(*largest) + "** (GB/s, median; row = source GPU, column = destination GPU)\n\n";
    std::map<std::string, std::vector<pair_value>> by_method;
    for (const auto& api : matrix_methods) {
      by_method[api] = pair_values(m, api, "bandwidth", *largest);
      if (by_method[api].empty()) continue;
      md += "*" + api + "*: " + method_title(api) + "\n\n" + matrix(devices, by_method[api], -1) + "\n";
    }
    const auto direct_over_staged = ratio(by_method["ce_peer"], by_method["staged"]);
    if (!direct_over_staged.empty()) {
      md += "*direct / staged*: ce_peer bandwidth ÷ staged bandwidth (how much P2P gains over the best a program "
            "can do through host memory)\n\n" + matrix(devices, direct_over_staged, 1) + "\n";
    }
    const auto chunks = pair_values(m, "staged", "best_chunk_bytes", *largest);
    if (!chunks.empty()) {
      std::string list;
      for (const auto& c : chunks) {
        list += (list.empty() ? "" : ", ") + std::to_string(c.src) + "->" + std::to_string(c.dst) + ": " +
                format_size(static_cast<std::size_t>(c.value));
      }
      md += "Best staged chunk at " + format_size(*largest) + ": " + list + ".\n\n";
    }
  }
  // Bidirectional pairs and all pairs at once, at each one's largest size.
  table_rows together;
  std::map<std::pair<std::string, std::string>, std::pair<std::size_t, const result_row*>> best;
  for (const auto& row : rows) {
    const std::string& direction = row.param("direction");
    if (!is_ok_median(row) || row.metric != "bandwidth" || (direction != "bidir" && direction != "all_pairs")) continue;
    const std::string who = direction == "bidir" ? row.param("src") + " <-> " + row.param("dst") : "all pairs";
    auto& slot = best[{who, row.param("api")}];
    if (const auto size = size_of(row); size && (!slot.second || *size >= slot.first)) slot = {*size, &row};
  }
  for (const auto& [key, entry] : best) {
    together.push_back({key.first, key.second, format_size(entry.first), format_figure(*entry.second->value)});
  }
  if (!together.empty()) {
    md += "**Both directions and all pairs at once** (total GB/s, median, at the largest size)\n\n" +
          markdown_table({"pairs", "method", "size", "GB/s"}, together) + "\n";
  }
  // Latency: the smallest size per pair and method.
  table_rows latency;
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::pair<std::size_t, double>>> lat;
  for (const char* metric : {"latency", "host_latency"}) {
    for (const auto& [row, value] : medians_of(m, "latency", metric)) {
      const auto size = size_of(*row);
      if (!size) continue;
      auto& slot = lat[{row->param("src") + " -> " + row->param("dst"), row->param("api")}][metric];
      if (slot.first == 0 || *size < slot.first) slot = {*size, value};
    }
  }
  for (const auto& [key, metrics] : lat) {
    const auto device = metrics.find("latency");
    const auto host = metrics.find("host_latency");
    latency.push_back({key.first, key.second,
                       device != metrics.end() ? format_size(device->second.first) : "n/a",
                       device != metrics.end() ? format_figure(device->second.second) : "n/a",
                       host != metrics.end() ? format_figure(host->second.second) : "n/a"});
  }
  if (!latency.empty()) {
    md += "**Small-transfer latency** (µs, median, smallest size)\n\n" +
          markdown_table({"pair", "method", "size", "device µs", "host µs"}, latency) + "\n";
  }
  // One GPU: what was measured instead, and why the matrices are empty.
  std::set<std::string> reasons;
  for (const auto& row : rows) {
    if (row.status == row_status::skipped && !row.reason.empty() && row.reason.find("needs >= 2 GPUs") != std::string::npos) {
      reasons.insert(row.reason);
    }
  }
  for (const auto& reason : reasons) md += "Pair cases skipped: " + reason + "; the loopback below is the only path measured.\n\n";
  table_rows loopback;
  std::map<std::pair<std::string, std::string>, std::pair<std::size_t, double>> loop_best;  // (gpu, api) -> largest size
  for (const auto& [row, value] : medians_of(m, "bandwidth", "bandwidth")) {
    if (row->param("direction") != "loopback") continue;
    auto& slot = loop_best[{row->param("src"), row->param("api")}];
    if (const auto size = size_of(*row); size && *size >= slot.first) slot = {*size, value};
  }
  for (const auto& [key, entry] : loop_best) {
    const auto& [gpu, api] = key;
    const std::string path = api == "staged" ? "GPU " + gpu + " -> host -> GPU " + gpu
                                             : "GPU " + gpu + " -> GPU " + gpu + " (" + api + ", within its memory)";
    loopback.push_back({path, format_size(entry.first), format_figure(entry.second)});
  }
  if (!loopback.empty()) {
    md += "**Loopback** (each GPU to itself, through host memory and directly; GB/s at the largest size)\n\n" +
          markdown_table({"path", "size", "GB/s"}, loopback) + "\n";
  }
  const std::string topology = topology_table(topology_of(meta));
  if (!topology.empty()) md += "**Topology** (meta.json node.topology)\n\n" + topology + "\n";
  return md;
}

// --- anomalies -----------------------------------------------------------------------------------

std::string link_class(const json& topology, int src, int dst) {
  const json* pair = pair_record(topology, src, dst);
  if (pair == nullptr || !pair->contains("link")) return "unknown link";
  const json& link = (*pair)["link"];
  std::string what = link.value("type", "unknown");
  if (link.contains("links") && link["links"].is_number()) what += " x" + std::to_string(link["links"].get<int>());
  if (link.contains("pcie_path") && link["pcie_path"].is_string()) what += " " + link["pcie_path"].get<std::string>();
  return what;
}

void p2p_anomalies(const std::vector<result_row>& rows, const json& meta, std::vector<std::string>& out) {
  const json& topology = topology_of(meta);
  const median_index m = ok_medians(rows);
  const auto largest = largest_uni_size(m);
  if (largest) {
    const std::string at = " at " + format_size(*largest);
    for (const auto& api : matrix_methods) {
      const auto values = pair_values(m, api, "bandwidth", *largest);
      // A pair far below the other pairs with the same link.
      for (const auto& v : values) {
        std::vector<double> peers;
        for (const auto& o : values) {
          if ((o.src != v.src || o.dst != v.dst) && link_class(topology, o.src, o.dst) == link_class(topology, v.src, v.dst)) {
            peers.push_back(o.value);
          }
        }
        if (peers.empty()) continue;
        const double reference = median(peers);
        if (v.value < peer_shortfall * reference) {
          out.push_back("GPU " + std::to_string(v.src) + " -> GPU " + std::to_string(v.dst) + " " + api + at + ": " +
                        format_figure(v.value) + " GB/s, " + format_figure(100 * (1 - v.value / reference)) +
                        " % below the median of the " + std::to_string(peers.size()) + " other pair(s) with the same link (" +
                        link_class(topology, v.src, v.dst) + ", " + format_figure(reference) + " GB/s)");
        }
      }
    }
    const auto direct = pair_values(m, "ce_peer", "bandwidth", *largest);
    const auto staged = pair_values(m, "staged", "bandwidth", *largest);
    for (const auto& r : ratio(direct, staged)) {
      if (r.value <= 1.0) {
        out.push_back("GPU " + std::to_string(r.src) + " -> GPU " + std::to_string(r.dst) + at +
                      ": direct P2P (ce_peer) is no faster than staging through host memory (ratio " +
                      format_fixed(r.value, 2) + "); P2P may be routed through the CPU or disabled by the platform");
      }
    }
    for (const auto& [row, value] : medians_of(m, "bandwidth", "bandwidth")) {
      if (row->param("api") != "ce_peer" || row->param("direction") != "uni" || size_of(*row) != *largest ||
          row->traffic != "nvlink_per_direction") {
        continue;
      }
      const auto peak = row_peak(*row, meta);
      if (peak && value < nvlink_floor * peak->value) {
        out.push_back("GPU " + row->param("src") + " -> GPU " + row->param("dst") + " ce_peer" + at + ": " +
                      format_figure(value) + " GB/s is " + format_figure(percent_of_peak(value, *peak)) +
                      " % of its " + peak->basis + " (expected ~80 %); a link may be down or the copy not using NVLink");
      }
    }
  }
  // Fewer active NVLinks than the other GPUs of the node.
  if (topology.contains("gpus") && topology["gpus"].is_array()) {
    std::vector<double> counts;
    for (const auto& g : topology["gpus"]) {
      if (const auto n = number(g.value("nvlink", json::object()), "links_active")) counts.push_back(*n);
    }
    if (counts.size() >= 2) {
      const double most = *std::max_element(counts.begin(), counts.end());
      for (const auto& g : topology["gpus"]) {
        const auto n = number(g.value("nvlink", json::object()), "links_active");
        if (n && *n < most) {
          out.push_back("GPU " + std::to_string(g.value("index", -1)) + " has " + format_figure(*n) +
                        " active NVLinks, another GPU of this node has " + format_figure(most) + " (a link is down)");
        }
      }
    }
  }
  if (topology.contains("pairs") && topology["pairs"].is_array()) {
    for (const auto& p : topology["pairs"]) {
      if (!p.value("can_access_peer", true)) {
        out.push_back("GPU " + std::to_string(p.value("src", -1)) + " cannot access GPU " + std::to_string(p.value("dst", -1)) +
                      "'s memory (cudaDeviceCanAccessPeer = 0): its peer-access and SM cases are skipped");
      }
    }
  }
}

}  // namespace

family_rules p2p_report_rules() {
  return {
      .family = "p2p",
      .anomalies = p2p_anomalies,
      .section = p2p_section,
      .footnote = "% of peak for p2p: NVLink pairs against link count x per-link rate per direction (meta.json "
                  "node.topology; x2 for both directions at once), the host-staged pipeline against the smaller PCIe "
                  "link of the two GPUs (a loopback against its GPU's own link). All pairs at once, and "
                  "cudaMemcpyPeerAsync without peer access (the driver chooses its path), have no peak.",
  };
}

}  // namespace hdb
