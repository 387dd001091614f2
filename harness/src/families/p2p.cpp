// Report rules of the p2p family. Peaks come from the node's topology (meta.json node.topology,
// written by hdb::read_gpu_topology): an NVLink pair's peak is its link count x per-link rate per
// direction, a PCIe pair's (and the host-staged pipeline's) the smaller PCIe link of its two GPUs.
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

#include "hdb/harness/family_rules.hpp"
#include "hdb/harness/tables.hpp"

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
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(text);
}

std::optional<std::size_t> size_of(const result_row& row) {
  const auto& text = row.params.get("size_bytes");
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
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

// NVLink peak of one direction of a pair, with its basis; nullopt for a PCIe or unknown link.
std::optional<peak_ref> nvlink_peak(const json& topology, int src, int dst) {
  const json* pair = pair_record(topology, src, dst);
  if (pair == nullptr || !pair->contains("link")) return std::nullopt;
  const json& link = (*pair)["link"];
  const auto peak = number(link, "peak_GBps");
  if (link.value("type", "") != "nvlink" || !peak) return std::nullopt;
  const std::string via = link.contains("via") && link["via"].is_string() ? ", via " + link["via"].get<std::string>() : "";
  return peak_ref{*peak, 1,
                  "NVLink " + format_figure(*number(link, "links")) + " x " + format_figure(*number(link, "per_link_GBps")) +
                      " GB/s" + via + ", GPU " + std::to_string(src) + "->" + std::to_string(dst)};
}

std::optional<peak_ref> pcie_pair_peak(const json& meta, int src, int dst) {
  const auto a = gpu_pcie_peak_gbps(gpu_record(meta, src));
  const auto b = gpu_pcie_peak_gbps(gpu_record(meta, dst));
  if (!a || !b) return std::nullopt;
  const std::string who = src == dst ? "GPU " + std::to_string(src) + " (both directions of its link)"
                                     : "the smaller of GPU " + std::to_string(src) + " and GPU " + std::to_string(dst);
  return peak_ref{std::min(*a, *b), 1, "PCIe, " + who};
}

// Peak of the direct methods for a pair: its NVLinks, or PCIe P2P when it has none.
std::optional<peak_ref> direct_peak(const json& meta, int src, int dst) {
  const json& topology = topology_of(meta);
  if (auto peak = nvlink_peak(topology, src, dst)) return peak;
  const json* pair = pair_record(topology, src, dst);
  if (pair != nullptr && pair->contains("link") && (*pair)["link"].value("type", "") == "pcie") {
    return pcie_pair_peak(meta, src, dst);
  }
  return std::nullopt;
}

// All pairs at once: every GPU sends through all its NVLinks (or its PCIe link) at the same time.
std::optional<peak_ref> aggregate_peak(const json& meta, bool staged) {
  const json& topology = topology_of(meta);
  if (!topology.contains("gpus") || !topology["gpus"].is_array() || topology["gpus"].size() < 2) return std::nullopt;
  double total = 0;
  bool nvlink = !staged;
  for (const auto& g : topology["gpus"]) {
    const json links = g.value("nvlink", json::object());
    const auto count = number(links, "links_active");
    const auto rate = number(links, "per_link_GBps");
    nvlink = nvlink && count && rate && *count > 0;
  }
  for (const auto& g : topology["gpus"]) {
    const int index = g.value("index", -1);
    if (nvlink) {
      const json links = g["nvlink"];
      total += *number(links, "links_active") * *number(links, "per_link_GBps");
    } else if (const auto pcie = gpu_pcie_peak_gbps(gpu_record(meta, index))) {
      total += *pcie;
    } else {
      return std::nullopt;
    }
  }
  return peak_ref{total, 1, nvlink ? "every GPU's NVLinks sending at once" : "every GPU's PCIe link sending at once"};
}

std::optional<peak_ref> p2p_peak(const result_row& row, const json& meta) {
  static const std::set<std::string> rates = {"bandwidth", "bandwidth_fwd", "bandwidth_rev"};
  if (rates.count(row.metric) == 0 || row.case_name == "latency") return std::nullopt;
  const std::string& api = row.params.get("api");
  const std::string& direction = row.params.get("direction");
  if (direction == "all_pairs") {
    if (row.metric != "bandwidth" || api == "ce_no_peer") return std::nullopt;
    return aggregate_peak(meta, api == "staged");
  }
  const auto src = to_index(row.params.get("src"));
  const auto dst = to_index(row.params.get("dst"));
  if (!src || !dst) return std::nullopt;
  // Without peer access the driver's path is what this row measures; it has no agreed peak.
  if (api == "ce_no_peer") return std::nullopt;
  std::optional<peak_ref> peak = api == "staged" ? pcie_pair_peak(meta, *src, *dst) : direct_peak(meta, *src, *dst);
  if (peak && direction == "bidir" && row.metric == "bandwidth") {
    peak->value *= 2;  // both directions at once: the links are full duplex
    peak->basis += ", both directions";
  }
  return peak;
}

// --- the matrices ------------------------------------------------------------------------------

struct pair_value {
  int src;
  int dst;
  double value;
};

// Medians of `metric` of uni bandwidth rows of one method at one size.
std::vector<pair_value> pair_values(const std::vector<result_row>& rows, const std::string& api, const std::string& metric,
                                    std::size_t size, const std::string& case_name = "bandwidth") {
  std::vector<pair_value> values;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != case_name || row.metric != metric || row.params.get("api") != api ||
        row.params.get("direction") != "uni" || size_of(row) != size) {
      continue;
    }
    const auto src = to_index(row.params.get("src"));
    const auto dst = to_index(row.params.get("dst"));
    if (src && dst) values.push_back({*src, *dst, *row.value});
  }
  return values;
}

// The largest size with a measured uni bandwidth median (any method), or nullopt.
std::optional<std::size_t> largest_uni_size(const std::vector<result_row>& rows) {
  std::optional<std::size_t> largest;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != "bandwidth" || row.metric != "bandwidth" ||
        row.params.get("direction") != "uni") {
      continue;
    }
    if (const auto size = size_of(row)) largest = std::max(largest.value_or(0), *size);
  }
  return largest;
}

std::vector<int> devices_of(const std::vector<result_row>& rows, const json& meta) {
  std::set<int> devices;
  for (const auto& row : rows) {
    for (const char* key : {"src", "dst"}) {
      if (const auto d = to_index(row.params.get(key))) devices.insert(*d);
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
  const auto devices = devices_of(rows, meta);
  const auto largest = largest_uni_size(rows);
  if (largest) {
    md += "**P2P bandwidth per pair at " + format_size(*largest) + "** (GB/s, median; row = source GPU, column = destination GPU)\n\n";
    std::map<std::string, std::vector<pair_value>> by_method;
    for (const auto& api : matrix_methods) {
      by_method[api] = pair_values(rows, api, "bandwidth", *largest);
      if (by_method[api].empty()) continue;
      md += "*" + api + "*: " + method_title(api) + "\n\n" + matrix(devices, by_method[api], -1) + "\n";
    }
    const auto direct_over_staged = ratio(by_method["ce_peer"], by_method["staged"]);
    if (!direct_over_staged.empty()) {
      md += "*direct / staged*: ce_peer bandwidth ÷ staged bandwidth (how much P2P gains over the best a program "
            "can do through host memory)\n\n" + matrix(devices, direct_over_staged, 1) + "\n";
    }
    const auto chunks = pair_values(rows, "staged", "chunk_bytes", *largest);
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
    const std::string& direction = row.params.get("direction");
    if (!is_ok_median(row) || row.metric != "bandwidth" || (direction != "bidir" && direction != "all_pairs")) continue;
    const std::string who = direction == "bidir" ? row.params.get("src") + " <-> " + row.params.get("dst") : "all pairs";
    auto& slot = best[{who, row.params.get("api")}];
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
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != "latency") continue;
    const auto size = size_of(row);
    if (!size) continue;
    auto& slot = lat[{row.params.get("src") + " -> " + row.params.get("dst"), row.params.get("api")}][row.metric];
    if (slot.first == 0 || *size < slot.first) slot = {*size, *row.value};
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
  for (const auto& reason : reasons) md += "Pair cases skipped: " + reason + "; the staged loopback below is the only path measured.\n\n";
  table_rows loopback;
  std::map<std::string, std::pair<std::size_t, double>> loop_best;
  for (const auto& row : rows) {
    if (!is_ok_median(row) || row.case_name != "bandwidth" || row.metric != "bandwidth" ||
        row.params.get("direction") != "loopback") {
      continue;
    }
    auto& slot = loop_best[row.params.get("src")];
    if (const auto size = size_of(row); size && *size >= slot.first) slot = {*size, *row.value};
  }
  for (const auto& [gpu, entry] : loop_best) {
    loopback.push_back({"GPU " + gpu + " -> host -> GPU " + gpu, format_size(entry.first), format_figure(entry.second)});
  }
  if (!loopback.empty()) {
    md += "**Staged loopback** (each GPU through host memory and back, GB/s at the largest size)\n\n" +
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

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void p2p_anomalies(const std::vector<result_row>& rows, const json& meta, std::vector<std::string>& out) {
  const json& topology = topology_of(meta);
  const auto largest = largest_uni_size(rows);
  if (largest) {
    const std::string at = " at " + format_size(*largest);
    for (const auto& api : matrix_methods) {
      const auto values = pair_values(rows, api, "bandwidth", *largest);
      // A pair far below the other pairs with the same link.
      for (const auto& v : values) {
        std::vector<double> peers;
        for (const auto& o : values) {
          if ((o.src != v.src || o.dst != v.dst) && link_class(topology, o.src, o.dst) == link_class(topology, v.src, v.dst)) {
            peers.push_back(o.value);
          }
        }
        if (peers.empty()) continue;
        const double reference = median_of(peers);
        if (v.value < peer_shortfall * reference) {
          out.push_back("GPU " + std::to_string(v.src) + " -> GPU " + std::to_string(v.dst) + " " + api + at + ": " +
                        format_figure(v.value) + " GB/s, " + format_figure(100 * (1 - v.value / reference)) +
                        " % below the median of the " + std::to_string(peers.size()) + " other pair(s) with the same link (" +
                        link_class(topology, v.src, v.dst) + ", " + format_figure(reference) + " GB/s)");
        }
      }
    }
    const auto direct = pair_values(rows, "ce_peer", "bandwidth", *largest);
    const auto staged = pair_values(rows, "staged", "bandwidth", *largest);
    for (const auto& r : ratio(direct, staged)) {
      if (r.value <= 1.0) {
        out.push_back("GPU " + std::to_string(r.src) + " -> GPU " + std::to_string(r.dst) + at +
                      ": direct P2P (ce_peer) is no faster than staging through host memory (ratio " +
                      format_fixed(r.value, 2) + "); P2P may be routed through the CPU or disabled by the platform");
      }
    }
    for (const auto& d : direct) {
      const auto peak = nvlink_peak(topology, d.src, d.dst);
      if (peak && d.value < nvlink_floor * peak->value) {
        out.push_back("GPU " + std::to_string(d.src) + " -> GPU " + std::to_string(d.dst) + " ce_peer" + at + ": " +
                      format_figure(d.value) + " GB/s is " + format_figure(100 * d.value / peak->value) + " % of its " +
                      peak->basis + " (expected ~80 %); a link may be down or the copy not using NVLink");
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
  family_rules rules;
  rules.family = "p2p";
  rules.peak = p2p_peak;
  rules.anomalies = p2p_anomalies;
  rules.section = p2p_section;
  rules.footnote =
      "% of peak for p2p: NVLink pairs against link count x per-link rate per direction (meta.json node.topology; "
      "x2 for both directions at once), PCIe pairs and the host-staged pipeline against the smaller PCIe link of the "
      "two GPUs (a loopback against its GPU's own link), all pairs at once against every GPU's links sending "
      "together. cudaMemcpyPeerAsync without peer access has no peak: the driver chooses its path.";
  return rules;
}

}  // namespace hdb
