#include "catch_compat.hpp"

#include "hdb/fingerprint.hpp"
#include "hdb/sizes.hpp"
#include "hdb/host_placement.hpp"

#include <filesystem>
#include <string>

using hdb::numa_request;

namespace {
const std::filesystem::path two_socket = std::filesystem::path(HDB_TEST_FIXTURES) / "sysfs_two_socket";
const std::vector<hdb::numa_node_info> nodes = {{0, "0-15,32-47"}, {1, "16-31,48-63"}};
}  // namespace

TEST_CASE("CPU lists parse like sysfs writes them", "[topology]") {
  CHECK(hdb::parse_cpu_list("0") == std::vector<int>{0});
  CHECK(hdb::parse_cpu_list("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  for (const char* bad : {"", "3-1", "a", "1,,2", "-1"}) {
    INFO(bad);
    CHECK_THROWS_AS(hdb::parse_cpu_list(bad), hdb::usage_error);
  }
}

TEST_CASE("numa flag values", "[topology]") {
  CHECK(hdb::parse_numa_request("auto").how == numa_request::mode::automatic);
  CHECK(hdb::parse_numa_request("none").how == numa_request::mode::none);
  CHECK(hdb::parse_numa_request("1").node == 1);
  CHECK_THROWS_AS(hdb::parse_numa_request("near"), hdb::usage_error);
}

TEST_CASE("placement follows the GPU's node by default", "[topology]") {
  const auto p = hdb::choose_numa_placement({numa_request::mode::automatic, -1}, 1, nodes);
  CHECK(p.bind);
  CHECK(p.node == 1);
  CHECK(p.cpu_list == "16-31,48-63");
}

TEST_CASE("placement without a known GPU node leaves the OS in charge", "[topology]") {
  CHECK_FALSE(hdb::choose_numa_placement({numa_request::mode::automatic, -1}, -1, nodes).bind);
  CHECK_FALSE(hdb::choose_numa_placement({numa_request::mode::automatic, -1}, 7, nodes).bind);
  CHECK_FALSE(hdb::choose_numa_placement({numa_request::mode::none, -1}, 1, nodes).bind);
}

TEST_CASE("an explicit node is honoured, or refused when absent", "[topology]") {
  const auto p = hdb::choose_numa_placement({numa_request::mode::node, 0}, 1, nodes);
  CHECK(p.bind);
  CHECK(p.node == 0);
  CHECK(p.cpu_list == "0-15,32-47");
  try {
    static_cast<void>(hdb::choose_numa_placement({numa_request::mode::node, 3}, 1, nodes));
    FAIL("expected a usage_error");
  } catch (const hdb::usage_error& e) {
    CHECK(std::string(e.what()).find("0,1") != std::string::npos);
  }
}

TEST_CASE("sysfs readers on a two-socket fixture", "[topology]") {
  const auto read = hdb::read_numa_nodes(two_socket);
  REQUIRE(read.size() == 2);
  CHECK(read[1].id == 1);
  CHECK(read[1].cpu_list == "16-31,48-63");
  CHECK(hdb::read_pci_numa_node(two_socket, "0000:C1:00.0") == 1);  // CUDA writes the bus id in upper case
  CHECK(hdb::read_pci_numa_node(two_socket, "0000:01:00.0") == -1);
  CHECK(hdb::pcie_generation_from_speed(hdb::read_pci_attribute(two_socket, "0000:c1:00.0", "current_link_speed")) == 5);
}

TEST_CASE("fingerprint helpers", "[topology]") {
  CHECK(hdb::pcie_generation_from_speed("2.5 GT/s PCIe") == 1);
  CHECK(hdb::pcie_generation_from_speed("16.0 GT/s PCIe") == 4);
  CHECK(hdb::pcie_generation_from_speed("64.0 GT/s PCIe") == 6);
  CHECK(hdb::pcie_generation_from_speed("Unknown") == 0);
  // The clock event reason names: tests/host/nvidia_smi_test.cpp (hdb_util).
}
