#include "catch_compat.hpp"
#include "hdb/gpu_topology.hpp"
#include "hdb/util/nvlink_rates.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using nlohmann::json;

namespace {

std::string fixture(const char* name) {
  std::ifstream in(std::filesystem::path(HDB_TEST_FIXTURES) / name);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* const uuid0 = "GPU-11111111-2222-3333-4444-555555555555";
const char* const uuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

hdb::gpu_topology_input gpu(int index, const std::string& bus, const std::string& uuid = "") {
  hdb::gpu_topology_input g;
  g.index = index;
  g.pci_bus_id = bus;
  g.uuid = uuid.empty() ? "GPU-" + std::to_string(index) : uuid;
  g.cc_major = 9;
  g.cc_minor = 0;
  return g;
}

std::vector<hdb::peer_input> all_pairs(const std::vector<hdb::gpu_topology_input>& gpus) {
  std::vector<hdb::peer_input> pairs;
  for (const auto& a : gpus) {
    for (const auto& b : gpus) {
      if (a.index == b.index) continue;
      hdb::peer_input p;
      p.src = a.index;
      p.dst = b.index;
      p.can_access_peer = true;
      pairs.push_back(p);
    }
  }
  return pairs;
}

const json& pair_of(const json& topology, int src, int dst) {
  for (const auto& p : topology.at("pairs")) {
    if (p.at("src") == src && p.at("dst") == dst) return p;
  }
  FAIL("no pair " << src << "->" << dst);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("topo -m cells", "[p2p][topology]") {
  CHECK(hdb::parse_topo_cell(" X ").what == hdb::topo_cell::kind::self);
  const auto nv = hdb::parse_topo_cell("NV18");
  CHECK(nv.what == hdb::topo_cell::kind::nvlink);
  CHECK(nv.nvlinks == 18);
  for (const char* path : {"PIX", "PXB", "PHB", "NODE", "SYS"}) {
    const auto cell = hdb::parse_topo_cell(path);
    CHECK(cell.what == hdb::topo_cell::kind::pcie);
    CHECK(cell.pcie_path == path);
  }
  CHECK(hdb::parse_topo_cell("NV").what == hdb::topo_cell::kind::unknown);
  CHECK(hdb::parse_topo_cell("SOC").what == hdb::topo_cell::kind::unknown);
}

TEST_CASE("topo -m of two H200s joined by 18 NVLinks (escape codes in the header)", "[p2p][topology]") {
  const auto topo = hdb::parse_smi_topology(fixture("topo_h200x2_nv18.txt"));
  REQUIRE(topo);
  REQUIRE(topo->gpus.size() == 2);
  CHECK(topo->gpus[0].to_gpu[0].what == hdb::topo_cell::kind::self);
  CHECK(topo->gpus[0].to_gpu[1].nvlinks == 18);
  CHECK(topo->gpus[1].to_gpu[0].nvlinks == 18);
  CHECK(topo->gpus[1].cpu_affinity == "0-31");
  CHECK(topo->gpus[1].numa_node == 0);
}

TEST_CASE("topo -m of four PCIe GPUs with NICs", "[p2p][topology]") {
  const auto topo = hdb::parse_smi_topology(fixture("topo_4gpu_pcie.txt"));
  REQUIRE(topo);
  REQUIRE(topo->gpus.size() == 4);
  CHECK(topo->gpus[0].to_gpu.size() == 4);  // NIC columns are not GPU links
  CHECK(topo->gpus[0].to_gpu[1].pcie_path == "PIX");
  CHECK(topo->gpus[0].to_gpu[2].pcie_path == "NODE");
  CHECK(topo->gpus[2].to_gpu[3].pcie_path == "SYS");
  CHECK(topo->gpus[3].cpu_affinity == "24-47,72-95");  // after the NIC columns
  CHECK(topo->gpus[3].numa_node == 1);
}

TEST_CASE("topo -m of eight NVSwitch GPUs", "[p2p][topology]") {
  const auto topo = hdb::parse_smi_topology(fixture("topo_8gpu_nvswitch.txt"));
  REQUIRE(topo);
  REQUIRE(topo->gpus.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t j = 0; j < 8; ++j) {
      CHECK(topo->gpus[i].to_gpu[j].what == (i == j ? hdb::topo_cell::kind::self : hdb::topo_cell::kind::nvlink));
    }
  }
  CHECK(topo->gpus[7].numa_node == 1);
}

TEST_CASE("topo -m output that is not a matrix", "[p2p][topology]") {
  CHECK_FALSE(hdb::parse_smi_topology(""));
  CHECK_FALSE(hdb::parse_smi_topology("NVIDIA-SMI has failed because it couldn't communicate with the driver.\n"));
  CHECK_FALSE(hdb::parse_smi_topology("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-3\n"));  // GPU1 row missing
}

TEST_CASE("nvlink -s: rates per link, inactive links as none", "[p2p][topology]") {
  const auto links = hdb::parse_smi_nvlink_status(fixture("nvlink_degraded.txt"));
  REQUIRE(links.size() == 2);
  const auto& g0 = links.at("gpu-11111111-2222-3333-4444-555555555555");
  REQUIRE(g0.size() == 18);
  CHECK(g0[0] == hdb_test::Approx(26.562));
  CHECK_FALSE(g0[3].has_value());
  CHECK_FALSE(g0[17].has_value());
  CHECK(std::count_if(g0.begin(), g0.end(), [](const auto& r) { return r.has_value(); }) == 16);
  CHECK(hdb::parse_smi_nvlink_status("").empty());
}

TEST_CASE("one GPU's NVLinks: active links and the rate most report, else the table", "[p2p][topology]") {
  const auto links = hdb::parse_smi_nvlink_status(fixture("nvlink_degraded.txt"));
  const auto h200 = hdb::summarize_nvlinks(links.at("gpu-11111111-2222-3333-4444-555555555555"), 9, 0);
  CHECK(h200.links_active == 16);
  REQUIRE(h200.per_link_GBps);
  CHECK(*h200.per_link_GBps == hdb_test::Approx(26.562));
  CHECK(h200.rate_source == "nvidia-smi nvlink -s");
  // Links counted elsewhere (NVML) without nvidia-smi: the table's rate for the generation.
  std::string source;
  CHECK(*hdb::nvlink_per_link_rate(nullptr, 18, 9, 0, source) == hdb_test::Approx(26.5625));
  CHECK(source == "table by compute capability");
  // No active link: no rate, whatever the generation.
  const auto none = hdb::summarize_nvlinks({std::nullopt, std::nullopt}, 9, 0);
  CHECK(none.links_active == 0);
  CHECK_FALSE(none.per_link_GBps);
  CHECK(none.rate_source.empty());
}

TEST_CASE("PCI bus ids normalise across NVML, CUDA and nvidia-smi spellings", "[p2p][topology]") {
  CHECK(hdb::normalize_pci_bus_id("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(hdb::normalize_pci_bus_id("0000:3b:00.0") == "0000:3b:00.0");
  CHECK(hdb::normalize_pci_bus_id(" 0001:C1:1F.7 ") == "0001:c1:1f.7");
  CHECK(hdb::normalize_pci_bus_id("N/A") == "n/a");
  const auto ids = hdb::parse_smi_bus_ids(fixture("bus_ids_4gpu.csv"));
  REQUIRE(ids.size() == 4);
  CHECK(ids.at(3) == "0000:9a:00.0");
}

TEST_CASE("NVML topology levels", "[p2p][topology]") {
  CHECK(hdb::pcie_path_from_nvml_level(10) == "PIX");
  CHECK(hdb::pcie_path_from_nvml_level(20) == "PXB");
  CHECK(hdb::pcie_path_from_nvml_level(30) == "PHB");
  CHECK(hdb::pcie_path_from_nvml_level(40) == "NODE");
  CHECK(hdb::pcie_path_from_nvml_level(50) == "SYS");
  CHECK(hdb::pcie_path_from_nvml_level(7).empty());
}

TEST_CASE("NVLink rates: nvidia-smi's reported rate becomes the data rate of its generation", "[p2p][topology]") {
  // NVIDIA's totals, both directions: H100/H200 900 GB/s over 18 links, B200 1800, A100 600 over 12.
  CHECK(hdb::nvlink_generation_of(9, 0)->reported_GBps == hdb_test::Approx(26.5625));
  CHECK(18 * *hdb::nvlink_data_rate(26.5625, 9, 0) == hdb_test::Approx(450));
  CHECK(18 * *hdb::nvlink_data_rate(26.562, 9, 0) == hdb_test::Approx(450).epsilon(1e-4));  // as nvidia-smi rounds it
  CHECK(18 * *hdb::nvlink_data_rate(53.125, 10, 0) == hdb_test::Approx(900));
  CHECK(12 * *hdb::nvlink_data_rate(25.0, 8, 0) == hdb_test::Approx(300));
  CHECK(*hdb::nvlink_data_rate(26.5625 / 2, 9, 0) == hdb_test::Approx(12.5));  // a link at half its rate
  CHECK_FALSE(hdb::nvlink_generation_of(8, 9));  // L40: no NVLink
  CHECK_FALSE(hdb::nvlink_data_rate(26.5625, 8, 9));
  CHECK_FALSE(hdb::nvlink_data_rate(0, 9, 0));
}

TEST_CASE("assembly: NVML direct links, rate from nvidia-smi", "[p2p][topology]") {
  hdb::topology_inputs in;
  in.gpus = {gpu(0, "0000:18:00.0", uuid0), gpu(1, "0000:2a:00.0", uuid1)};
  for (auto& g : in.gpus) {
    g.nvml_ok = true;
    g.nvlink_remotes.assign(18, g.index == 0 ? "0000:2a:00.0" : "0000:18:00.0");
    g.nvlink_version = 4;
    g.pcie_gen_max = 5;
    g.pcie_width_max = 16;
    g.numa_node = 0;
    g.cpu_affinity = "0-31";
  }
  in.pairs = all_pairs(in.gpus);
  in.pairs[0].nvml_pcie_path = "SYS";
  in.nvml_status = "ok";
  in.smi_nvlink = fixture("nvlink_h200x2.txt");
  in.smi_topo = fixture("topo_h200x2_nv18.txt");
  in.smi_bus_ids = fixture("bus_ids_h200x2.csv");
  const json t = hdb::assemble_topology(in);
  CHECK(t.at("sources").at("nvml") == "ok");
  CHECK(t.at("sources").at("nvidia_smi") == "ok");
  const json& link = pair_of(t, 0, 1).at("link");
  CHECK(link.at("type") == "nvlink");
  CHECK(link.at("links") == 18);
  CHECK(link.at("via") == "direct");
  CHECK(link.at("source") == "nvml");
  CHECK(link.at("per_link_GBps").get<double>() == hdb_test::Approx(26.562));
  CHECK(link.at("peak_GBps").get<double>() == hdb_test::Approx(450).epsilon(1e-4));  // the data rate
  CHECK(link.at("rate_source") == "nvidia-smi nvlink -s");
  CHECK(link.at("pcie_path") == "SYS");
  const json& g1 = t.at("gpus").at(1);
  CHECK(g1.at("pcie").at("gen_max") == 5);
  CHECK(g1.at("pcie").at("source").get<std::string>().rfind("nvml", 0) == 0);
  CHECK(g1.at("nvlink").at("links_active") == 18);
  CHECK(g1.at("placement_source") == "sysfs");
  CHECK(pair_of(t, 1, 0).at("peer_source") == "cuda");
}

TEST_CASE("assembly without NVML: nvidia-smi matched to CUDA order by bus id", "[p2p][topology]") {
  hdb::topology_inputs in;
  // CUDA's order differs from nvidia-smi's (PCI order): CUDA 0 is nvidia-smi's GPU 3.
  in.gpus = {gpu(0, "0000:9a:00.0"), gpu(1, "0000:1b:00.0"), gpu(2, "0000:1c:00.0"), gpu(3, "0000:3d:00.0")};
  in.pairs = all_pairs(in.gpus);
  in.nvml_status = "libnvidia-ml.so.1 not loadable: not found";
  in.smi_topo = fixture("topo_4gpu_pcie.txt");
  in.smi_bus_ids = fixture("bus_ids_4gpu.csv");
  const json t = hdb::assemble_topology(in);
  CHECK(t.at("sources").at("nvml").get<std::string>().find("not loadable") != std::string::npos);
  CHECK(pair_of(t, 1, 2).at("link").at("pcie_path") == "PIX");   // smi 0 -> 1
  CHECK(pair_of(t, 1, 3).at("link").at("pcie_path") == "NODE");  // smi 0 -> 2
  CHECK(pair_of(t, 0, 1).at("link").at("pcie_path") == "SYS");   // smi 3 -> 0
  CHECK(pair_of(t, 0, 1).at("link").at("type") == "pcie");
  CHECK(pair_of(t, 0, 1).at("link").at("source") == "nvidia-smi topo -m");
  CHECK(pair_of(t, 0, 1).at("link").at("links").is_null());
  const json& g0 = t.at("gpus").at(0);
  CHECK(g0.at("placement_source") == "nvidia-smi topo -m");
  CHECK(g0.at("numa_node") == 1);
  CHECK(g0.at("cpu_affinity") == "24-47,72-95");
  CHECK(g0.at("pcie").at("source") == "unknown");
}

TEST_CASE("assembly through NVSwitches (NVML) and a degraded GPU", "[p2p][topology]") {
  hdb::topology_inputs in;
  for (int i = 0; i < 8; ++i) {
    char bus[16];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + i);
    in.gpus.push_back(gpu(i, bus));
    in.gpus.back().nvml_ok = true;
    // Every link ends at one of four switches, none of which is a GPU.
    for (int l = 0; l < (i == 5 ? 16 : 18); ++l) in.gpus.back().nvlink_remotes.push_back("0000:e" + std::to_string(l % 4) + ":00.0");
  }
  in.pairs = all_pairs(in.gpus);
  in.nvml_status = "ok";
  const json t = hdb::assemble_topology(in);
  CHECK(t.at("pairs").size() == 56);
  const json& healthy = pair_of(t, 0, 1).at("link");
  CHECK(healthy.at("via") == "nvswitch");
  CHECK(healthy.at("links") == 18);
  CHECK(healthy.at("rate_source") == "table by compute capability");
  CHECK(healthy.at("per_link_GBps").get<double>() == hdb_test::Approx(26.5625));
  CHECK(healthy.at("peak_GBps").get<double>() == hdb_test::Approx(18 * 25.0));
  CHECK(pair_of(t, 5, 2).at("link").at("links") == 16);  // the pair is as fast as its weaker GPU
  CHECK(pair_of(t, 2, 5).at("link").at("links") == 16);
}

TEST_CASE("assembly with no source but CUDA degrades to unknown", "[p2p][topology]") {
  hdb::topology_inputs in;
  in.gpus = {gpu(0, "0000:18:00.0"), gpu(1, "0000:2a:00.0")};
  in.pairs = all_pairs(in.gpus);
  in.pairs[1].can_access_peer = false;
  in.nvml_status = "libnvidia-ml.so.1 not loadable";
  const json t = hdb::assemble_topology(in);
  CHECK(t.at("sources").at("nvidia_smi").get<std::string>().rfind("unavailable", 0) == 0);
  const json& link = pair_of(t, 0, 1).at("link");
  CHECK(link.at("type") == "unknown");
  CHECK(link.at("source") == "unknown");
  CHECK(link.at("peak_GBps").is_null());
  CHECK(pair_of(t, 1, 0).at("can_access_peer") == false);
  CHECK(t.at("gpus").at(0).at("nvlink").at("source") == "unknown");
  CHECK(t.at("gpus").at(0).at("placement_source") == "unknown");
}

TEST_CASE("assembly of one GPU has no pairs", "[p2p][topology]") {
  hdb::topology_inputs in;
  in.gpus = {gpu(0, "0000:18:00.0", uuid0)};
  in.nvml_status = "ok";
  in.smi_nvlink = fixture("nvlink_h200x2.txt");
  const json t = hdb::assemble_topology(in);
  CHECK(t.at("pairs").empty());
  CHECK(t.at("gpus").size() == 1);
  CHECK(t.at("gpus").at(0).at("nvlink").at("links_active") == 18);
  CHECK(t.at("gpus").at(0).at("nvlink").at("source") == "nvidia-smi nvlink -s");
}
