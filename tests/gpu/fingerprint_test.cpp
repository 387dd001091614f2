// The fingerprint on a real GPU: the card's configuration that `hdbench compare` and `check` name
// when it differs from the baselines' (harness what_changed.hpp) is recorded where nvidia-smi answers.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include "hdb/fingerprint.hpp"
#include "hdb/util/process.hpp"

#include <string>

TEST_CASE("the fingerprint records each GPU's VBIOS, MIG mode and application clocks beside its link and clocks", "[gpu][fingerprint]") {
  const int device = hdb_test::test_devices().front();
  static_cast<void>(hdb_test::gpu_env());
  if (!hdb::find_in_path("nvidia-smi")) hdb_test::skip_test("no nvidia-smi on PATH: the fingerprint has the CUDA runtime's facts only");
  const auto gpu = hdb::read_gpu_fingerprint(device).facts;
  INFO(gpu.dump(2));
  CHECK_FALSE(gpu.value("vbios_version", std::string()).empty());
  CHECK_FALSE(gpu.value("mig_mode", std::string()).empty());  // "Disabled", "Enabled" or "[N/A]"
  CHECK(gpu["clocks"].contains("applications_sm_mhz"));
  CHECK(gpu["clocks"].contains("applications_mem_mhz"));
  // Asked apart, the configuration never costs the link, clocks and ECC their own query.
  CHECK(gpu["clocks"]["power_limit_w"].is_number());
  CHECK(gpu["pcie"]["gen_max"].is_number());
  CHECK_FALSE(gpu.value("ecc_mode", std::string()).empty());
}
