#include "hdb/gpu_topology.hpp"

#include "hdb/cuda_check.hpp"
#include "hdb/devices.hpp"
#include "hdb/fingerprint.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/nvlink_rates.hpp"
#include "hdb/shell.hpp"
#include "hdb/host_placement.hpp"
#include "nvml_loader.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace hdb {
namespace {

using nlohmann::json;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string token; in >> token;) out.push_back(token);
  return out;
}

// nvidia-smi underlines and bolds its headers when it thinks it writes to a terminal.
std::string strip_escapes(std::string_view text) {
  static const std::regex escape("\x1b\\[[0-9;]*[A-Za-z]");
  return std::regex_replace(std::string(text), escape, "");
}

std::optional<int> device_column_index(std::string_view token, std::string_view prefix) {
  if (token.substr(0, prefix.size()) != prefix) return std::nullopt;
  return to_int(token.substr(prefix.size()));
}

json optional_json(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

// --- parsers ---------------------------------------------------------------------------------

topo_cell parse_topo_cell(std::string_view cell) {
  const std::string text = trim(cell);
  if (text == "X") return {topo_cell::kind::self, 0, ""};
  if (text.size() > 2 && text.substr(0, 2) == "NV") {
    if (const auto links = to_int(std::string_view(text).substr(2)); links && *links > 0) {
      return {topo_cell::kind::nvlink, *links, ""};
    }
  }
  for (const char* path : {"PIX", "PXB", "PHB", "NODE", "SYS"}) {
    if (text == path) return {topo_cell::kind::pcie, 0, text};
  }
  return {};
}

std::optional<smi_topology> parse_smi_topology(std::string_view text) {
  std::istringstream lines(strip_escapes(text));
  std::size_t device_columns = 0;
  int gpu_columns = 0;
  bool header_seen = false;
  smi_topology topology;
  for (std::string line; std::getline(lines, line);) {
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (t.front().rfind("Legend", 0) == 0) break;
    if (!header_seen) {
      if (t.front() != "GPU0") continue;
      // The header lists device columns (GPU0.., NIC0..) before "CPU Affinity ...".
      header_seen = true;
      for (const auto& token : t) {
        if (device_column_index(token, "GPU")) {
          ++gpu_columns;
        } else if (!device_column_index(token, "NIC")) {
          break;
        }
        ++device_columns;
      }
      continue;
    }
    const auto row = device_column_index(t.front(), "GPU");
    if (!row) continue;  // NIC rows
    if (*row != static_cast<int>(topology.gpus.size()) || t.size() < 1 + device_columns) return std::nullopt;
    smi_topology::gpu_row parsed;
    for (int j = 0; j < gpu_columns; ++j) parsed.to_gpu.push_back(parse_topo_cell(t[1 + static_cast<std::size_t>(j)]));
    if (t.size() > 1 + device_columns && t[1 + device_columns] != "N/A") parsed.cpu_affinity = t[1 + device_columns];
    if (t.size() > 2 + device_columns) parsed.numa_node = to_int(t[2 + device_columns]).value_or(-1);
    topology.gpus.push_back(std::move(parsed));
  }
  if (!header_seen || topology.gpus.size() != static_cast<std::size_t>(gpu_columns) || gpu_columns == 0) return std::nullopt;
  return topology;
}

std::map<std::string, std::vector<std::optional<double>>> parse_smi_nvlink_status(std::string_view text) {
  static const std::regex gpu_line(R"(^GPU\s+\d+:.*\(UUID:\s*(GPU-[0-9A-Fa-f-]+)\))");
  static const std::regex link_line(R"(^\s*Link\s+(\d+):\s*(.*)$)");
  static const std::regex rate(R"(^([0-9]+(\.[0-9]+)?)\s*GB/s)");
  std::map<std::string, std::vector<std::optional<double>>> links;
  std::string current;
  std::istringstream lines(strip_escapes(text));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, gpu_line)) {
      current = lower(m[1].str());
      links[current];
    } else if (!current.empty() && std::regex_search(line, m, link_line)) {
      const auto index = static_cast<std::size_t>(std::stoul(m[1].str()));
      auto& list = links[current];
      if (list.size() <= index) list.resize(index + 1);
      std::smatch r;
      const std::string value = trim(m[2].str());
      if (std::regex_search(value, r, rate)) list[index] = std::stod(r[1].str());
    }
  }
  return links;
}

std::map<int, std::string> parse_smi_bus_ids(std::string_view text) {
  std::map<int, std::string> ids;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    const auto fields = split_list(line);
    if (fields.size() < 2) continue;
    if (const auto index = to_int(fields[0])) ids[*index] = normalize_pci_bus_id(fields[1]);
  }
  return ids;
}

std::string normalize_pci_bus_id(std::string_view id) {
  static const std::regex address(R"(^([0-9a-f]+):([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$)");
  const std::string text = lower(trim(id));
  std::smatch m;
  if (!std::regex_match(text, m, address)) return text;
  char out[32];
  std::snprintf(out, sizeof out, "%04lx:%02lx:%02lx.%s", std::stoul(m[1].str(), nullptr, 16),
                std::stoul(m[2].str(), nullptr, 16), std::stoul(m[3].str(), nullptr, 16), m[4].str().c_str());
  return out;
}

std::string pcie_path_from_nvml_level(unsigned int level) {
  switch (static_cast<nvml::topology_level>(level)) {
    case nvml::topology_level::internal: return "PIX";  // one board: no wider path than a single switch
    case nvml::topology_level::single: return "PIX";
    case nvml::topology_level::multiple: return "PXB";
    case nvml::topology_level::host_bridge: return "PHB";
    case nvml::topology_level::node: return "NODE";
    case nvml::topology_level::system: return "SYS";
  }
  return "";
}

namespace {
// The rate most of a GPU's active links report (they are all equal on a healthy GPU).
std::optional<double> common_rate(const std::vector<std::optional<double>>& rates) {
  std::map<double, int> votes;
  for (const auto& r : rates) {
    if (r) ++votes[*r];
  }
  if (votes.empty()) return std::nullopt;
  return std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
}
}  // namespace

std::optional<double> nvlink_per_link_rate(const std::vector<std::optional<double>>* smi_rates, int links_active,
                                           int cc_major, int cc_minor, std::string& rate_source) {
  if (smi_rates != nullptr) {
    if (const auto rate = common_rate(*smi_rates)) {
      rate_source = "nvidia-smi nvlink -s";
      return rate;
    }
  }
  if (links_active <= 0) return std::nullopt;
  const auto generation = nvlink_generation_of(cc_major, cc_minor);
  if (!generation) return std::nullopt;
  rate_source = "table by compute capability";
  return generation->reported_GBps;
}

nvlink_summary summarize_nvlinks(const std::vector<std::optional<double>>& smi_rates, int cc_major, int cc_minor) {
  nvlink_summary s;
  s.links_active = static_cast<int>(std::count_if(smi_rates.begin(), smi_rates.end(), [](const auto& r) { return r.has_value(); }));
  s.per_link_GBps = nvlink_per_link_rate(&smi_rates, s.links_active, cc_major, cc_minor, s.rate_source);
  return s;
}

// --- assembly ----------------------------------------------------------------------------------

namespace {

struct smi_view {
  std::optional<smi_topology> topology;
  std::map<std::string, int> index_of_bus;  // normalised bus id -> nvidia-smi index
  std::map<std::string, std::vector<std::optional<double>>> nvlink;
  std::set<std::string> gpu_buses;  // every GPU of the node nvidia-smi lists
};

const smi_topology::gpu_row* smi_row(const smi_view& smi, const std::string& bus) {
  if (!smi.topology) return nullptr;
  const auto it = smi.index_of_bus.find(bus);
  if (it == smi.index_of_bus.end() || it->second >= static_cast<int>(smi.topology->gpus.size())) return nullptr;
  return &smi.topology->gpus[static_cast<std::size_t>(it->second)];
}

struct nvlink_facts {
  std::optional<int> links_active;
  std::optional<double> per_link_GBps;
  std::string source;
  std::string rate_source;
};

nvlink_facts gpu_nvlink(const gpu_topology_input& gpu, const smi_view& smi) {
  nvlink_facts facts;
  const auto smi_links = smi.nvlink.find(lower(gpu.uuid));
  if (gpu.nvml_ok) {
    facts.links_active = static_cast<int>(gpu.nvlink_remotes.size());
    facts.source = "nvml";
  } else if (smi_links != smi.nvlink.end()) {
    facts.links_active = static_cast<int>(std::count_if(smi_links->second.begin(), smi_links->second.end(),
                                                        [](const auto& r) { return r.has_value(); }));
    facts.source = "nvidia-smi nvlink -s";
  } else {
    facts.source = "unknown";
  }
  facts.per_link_GBps = nvlink_per_link_rate(smi_links != smi.nvlink.end() ? &smi_links->second : nullptr,
                                             facts.links_active.value_or(0), gpu.cc_major, gpu.cc_minor, facts.rate_source);
  return facts;
}

json gpu_json(const gpu_topology_input& gpu, const smi_view& smi, const nvlink_facts& nvlink) {
  json pcie;
  if (gpu.pcie_gen_max || gpu.pcie_width_max || gpu.pcie_gen_current || gpu.pcie_width_current) {
    pcie = {{"gen_current", optional_json(gpu.pcie_gen_current)},
            {"gen_max", optional_json(gpu.pcie_gen_max)},
            {"width_current", optional_json(gpu.pcie_width_current)},
            {"width_max", optional_json(gpu.pcie_width_max)},
            {"source", "nvml (current may be trained down at idle)"}};
  } else if (gpu.sysfs_gen_max || gpu.sysfs_width_max) {
    pcie = {{"gen_current", optional_json(gpu.sysfs_gen_current)},
            {"gen_max", optional_json(gpu.sysfs_gen_max)},
            {"width_current", optional_json(gpu.sysfs_width_current)},
            {"width_max", optional_json(gpu.sysfs_width_max)},
            {"source", "sysfs (current may be trained down at idle)"}};
  } else {
    pcie = {{"gen_current", nullptr}, {"gen_max", nullptr}, {"width_current", nullptr}, {"width_max", nullptr},
            {"source", "unknown"}};
  }
  json numa_node = nullptr;
  json cpu_affinity = nullptr;
  std::string placement_source = "unknown";
  if (gpu.numa_node >= 0 || !gpu.cpu_affinity.empty()) {
    numa_node = gpu.numa_node >= 0 ? json(gpu.numa_node) : json(nullptr);
    cpu_affinity = gpu.cpu_affinity.empty() ? json(nullptr) : json(gpu.cpu_affinity);
    placement_source = "sysfs";
  } else if (const auto* row = smi_row(smi, gpu.pci_bus_id)) {
    numa_node = row->numa_node >= 0 ? json(row->numa_node) : json(nullptr);
    cpu_affinity = row->cpu_affinity.empty() ? json(nullptr) : json(row->cpu_affinity);
    placement_source = "nvidia-smi topo -m";
  }
  return {{"index", gpu.index},
          {"uuid", gpu.uuid},
          {"pci_bus_id", gpu.pci_bus_id},
          {"compute_capability", std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor)},
          {"pcie", pcie},
          {"numa_node", numa_node},
          {"cpu_affinity", cpu_affinity},
          {"placement_source", placement_source},
          {"nvlink",
           {{"links_active", optional_json(nvlink.links_active)},
            {"per_link_GBps", nvlink.per_link_GBps ? json(*nvlink.per_link_GBps) : json(nullptr)},
            {"version", gpu.nvlink_version ? json(*gpu.nvlink_version) : json(nullptr)},
            {"source", nvlink.source},
            {"rate_source", nvlink.rate_source.empty() ? json(nullptr) : json(nvlink.rate_source)}}}};
}

json pair_link(const gpu_topology_input& src, const gpu_topology_input& dst, const peer_input& peer,
               const smi_view& smi, const nvlink_facts& src_links, const nvlink_facts& dst_links,
               const std::set<std::string>& gpu_buses) {
  json link = {{"type", "unknown"}, {"links", nullptr}, {"per_link_GBps", nullptr}, {"peak_GBps", nullptr},
               {"via", nullptr}, {"pcie_path", peer.nvml_pcie_path.empty() ? json(nullptr) : json(peer.nvml_pcie_path)},
               {"source", "unknown"}, {"rate_source", nullptr}};
  int links = 0;
  if (src.nvml_ok && dst.nvml_ok) {
    link["source"] = "nvml";
    links = static_cast<int>(std::count(src.nvlink_remotes.begin(), src.nvlink_remotes.end(), dst.pci_bus_id));
    if (links > 0) {
      link["via"] = "direct";
    } else {
      // Links whose far end is no GPU of this node end at an NVSwitch: every pair of GPUs that
      // both reach the switches talks through them at the smaller of their link counts.
      const auto switch_links = [&](const gpu_topology_input& g) {
        return static_cast<int>(std::count_if(g.nvlink_remotes.begin(), g.nvlink_remotes.end(),
                                              [&](const std::string& bus) { return gpu_buses.count(bus) == 0; }));
      };
      links = std::min(switch_links(src), switch_links(dst));
      if (links > 0) link["via"] = "nvswitch";
    }
    link["type"] = links > 0 ? "nvlink" : (peer.nvml_pcie_path.empty() ? "unknown" : "pcie");
  } else if (const auto* row = smi_row(smi, src.pci_bus_id)) {
    const auto column = smi.index_of_bus.find(dst.pci_bus_id);
    if (column != smi.index_of_bus.end() && column->second < static_cast<int>(row->to_gpu.size())) {
      const topo_cell& cell = row->to_gpu[static_cast<std::size_t>(column->second)];
      link["source"] = "nvidia-smi topo -m";
      if (cell.what == topo_cell::kind::nvlink) {
        links = cell.nvlinks;
        link["type"] = "nvlink";  // nvidia-smi does not say whether an NVSwitch sits between
      } else if (cell.what == topo_cell::kind::pcie) {
        link["type"] = "pcie";
        if (link["pcie_path"].is_null()) link["pcie_path"] = cell.pcie_path;
      }
    }
  }
  if (links > 0) {
    link["links"] = links;
    // A link runs at its slower end: the smaller reported rate, and the smaller data rate.
    const auto slower = [](std::optional<double> a, std::optional<double> b) {
      return a && b ? std::optional<double>(std::min(*a, *b)) : a ? a : b;
    };
    const auto data_rate = [](const gpu_topology_input& gpu, const nvlink_facts& facts) {
      return facts.per_link_GBps ? nvlink_data_rate(*facts.per_link_GBps, gpu.cc_major, gpu.cc_minor) : std::nullopt;
    };
    if (const auto reported = slower(src_links.per_link_GBps, dst_links.per_link_GBps)) {
      link["per_link_GBps"] = *reported;
      link["rate_source"] = src_links.per_link_GBps ? src_links.rate_source : dst_links.rate_source;
    }
    if (const auto data = slower(data_rate(src, src_links), data_rate(dst, dst_links))) link["peak_GBps"] = *data * links;
  }
  return link;
}

}  // namespace

json assemble_topology(const topology_inputs& inputs) {
  smi_view smi;
  if (inputs.smi_topo) smi.topology = parse_smi_topology(*inputs.smi_topo);
  if (inputs.smi_bus_ids) {
    for (const auto& [index, bus] : parse_smi_bus_ids(*inputs.smi_bus_ids)) {
      smi.index_of_bus[bus] = index;
      smi.gpu_buses.insert(bus);
    }
  }
  if (inputs.smi_nvlink) smi.nvlink = parse_smi_nvlink_status(*inputs.smi_nvlink);

  std::set<std::string> gpu_buses = smi.gpu_buses;
  for (const auto& g : inputs.gpus) gpu_buses.insert(g.pci_bus_id);

  std::string smi_status = "ok";
  if (!inputs.smi_topo && !inputs.smi_nvlink) {
    smi_status = "unavailable (nvidia-smi did not run)";
  } else if (inputs.smi_topo && !smi.topology) {
    smi_status = "topo -m output not recognised";
  } else if (smi.topology && smi.index_of_bus.empty()) {
    smi_status = "topo -m not used: nvidia-smi's GPU order could not be matched to CUDA's (no bus ids)";
  }

  std::vector<nvlink_facts> links;
  json gpus = json::array();
  for (const auto& g : inputs.gpus) {
    links.push_back(gpu_nvlink(g, smi));
    gpus.push_back(gpu_json(g, smi, links.back()));
  }
  const auto position = [&](int index) {
    const auto it = std::find_if(inputs.gpus.begin(), inputs.gpus.end(), [index](const auto& g) { return g.index == index; });
    return static_cast<std::size_t>(it - inputs.gpus.begin());
  };
  json pairs = json::array();
  for (const auto& p : inputs.pairs) {
    const std::size_t s = position(p.src);
    const std::size_t d = position(p.dst);
    if (s >= inputs.gpus.size() || d >= inputs.gpus.size()) continue;
    pairs.push_back({{"src", p.src},
                     {"dst", p.dst},
                     {"can_access_peer", p.can_access_peer},
                     {"performance_rank", p.performance_rank},
                     {"native_atomics", p.native_atomics},
                     {"access_supported", p.access_supported},
                     {"peer_source", "cuda"},
                     {"link", pair_link(inputs.gpus[s], inputs.gpus[d], p, smi, links[s], links[d], gpu_buses)}});
  }
  return {{"sources", {{"cuda", "ok"}, {"nvml", inputs.nvml_status}, {"nvidia_smi", smi_status}}},
          {"gpus", gpus},
          {"pairs", pairs}};
}

// --- gathering -----------------------------------------------------------------------------------

namespace {

void read_nvml(const nvml::library& lib, std::vector<gpu_topology_input>& gpus, std::vector<peer_input>& pairs) {
  std::vector<nvml::device> handles(gpus.size(), nullptr);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    auto& g = gpus[i];
    if (lib.handle_by_pci_bus_id(g.pci_bus_id.c_str(), &handles[i]) != nvml::success) continue;
    g.nvml_ok = true;
    for (unsigned int link = 0; link < nvml::max_links; ++link) {
      unsigned int active = 0;
      if (lib.nvlink_state(handles[i], link, &active) != nvml::success || active == 0) continue;
      nvml::pci_info remote{};
      if (lib.nvlink_remote_pci(handles[i], link, &remote) != nvml::success) continue;
      g.nvlink_remotes.push_back(normalize_pci_bus_id(remote.bus_id[0] != '\0' ? remote.bus_id : remote.bus_id_legacy));
      unsigned int version = 0;
      if (!g.nvlink_version && lib.nvlink_version(handles[i], link, &version) == nvml::success) g.nvlink_version = version;
    }
    unsigned int value = 0;
    if (lib.pcie_generation(handles[i], false, &value) == nvml::success) g.pcie_gen_current = static_cast<int>(value);
    if (lib.pcie_generation(handles[i], true, &value) == nvml::success) g.pcie_gen_max = static_cast<int>(value);
    if (lib.pcie_width(handles[i], false, &value) == nvml::success) g.pcie_width_current = static_cast<int>(value);
    if (lib.pcie_width(handles[i], true, &value) == nvml::success) g.pcie_width_max = static_cast<int>(value);
  }
  for (auto& p : pairs) {
    const auto at = [&](int index) {
      return static_cast<std::size_t>(
          std::find_if(gpus.begin(), gpus.end(), [index](const auto& g) { return g.index == index; }) - gpus.begin());
    };
    const std::size_t s = at(p.src);
    const std::size_t d = at(p.dst);
    if (!gpus[s].nvml_ok || !gpus[d].nvml_ok) continue;
    nvml::topology_level level{};
    if (lib.common_ancestor(handles[s], handles[d], &level) == nvml::success) {
      p.nvml_pcie_path = pcie_path_from_nvml_level(static_cast<unsigned int>(level));
    }
  }
}

std::optional<int> sysfs_int(const std::string& bus, const char* attribute) {
  return to_int(trim(read_pci_attribute("/sys", bus, attribute)));
}

std::optional<int> sysfs_generation(const std::string& bus, const char* attribute) {
  const int gen = pcie_generation_from_speed(read_pci_attribute("/sys", bus, attribute));
  return gen > 0 ? std::optional<int>(gen) : std::nullopt;
}

}  // namespace

json read_gpu_topology(const std::vector<int>& devices) {
  topology_inputs inputs;
  for (int index : devices) {
    const device_info info = read_device_info(index);
    gpu_topology_input g;
    g.index = index;
    g.uuid = info.uuid;
    g.pci_bus_id = normalize_pci_bus_id(info.pci_bus_id);
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&g.cc_major, cudaDevAttrComputeCapabilityMajor, index));
    HDB_CUDA_CALL(cudaDeviceGetAttribute(&g.cc_minor, cudaDevAttrComputeCapabilityMinor, index));
    g.numa_node = read_pci_numa_node("/sys", g.pci_bus_id);
    g.cpu_affinity = trim(read_pci_attribute("/sys", g.pci_bus_id, "local_cpulist"));
    g.sysfs_gen_current = sysfs_generation(g.pci_bus_id, "current_link_speed");
    g.sysfs_gen_max = sysfs_generation(g.pci_bus_id, "max_link_speed");
    g.sysfs_width_current = sysfs_int(g.pci_bus_id, "current_link_width");
    g.sysfs_width_max = sysfs_int(g.pci_bus_id, "max_link_width");
    inputs.gpus.push_back(std::move(g));
  }
  for (int src : devices) {
    for (int dst : devices) {
      if (src == dst) continue;
      peer_input p;
      p.src = src;
      p.dst = dst;
      int value = 0;
      HDB_CUDA_CALL(cudaDeviceCanAccessPeer(&value, src, dst));
      p.can_access_peer = value != 0;
      HDB_CUDA_CALL(cudaDeviceGetP2PAttribute(&p.performance_rank, cudaDevP2PAttrPerformanceRank, src, dst));
      HDB_CUDA_CALL(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrNativeAtomicSupported, src, dst));
      p.native_atomics = value != 0;
      HDB_CUDA_CALL(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, src, dst));
      p.access_supported = value != 0;
      inputs.pairs.push_back(std::move(p));
    }
  }
  std::string why;
  if (const auto lib = nvml::library::open(why)) {
    read_nvml(*lib, inputs.gpus, inputs.pairs);
    const bool any = std::any_of(inputs.gpus.begin(), inputs.gpus.end(), [](const auto& g) { return g.nvml_ok; });
    inputs.nvml_status = any ? "ok" : "loaded, but no GPU found by its PCI bus id";
  } else {
    inputs.nvml_status = why;
  }
  inputs.smi_topo = run_command("nvidia-smi topo -m");
  inputs.smi_nvlink = run_command("nvidia-smi nvlink -s");
  inputs.smi_bus_ids = run_command("nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader");
  return assemble_topology(inputs);
}

}  // namespace hdb
