// The shared main's promises, checked end to end on a GPU through hdbench-test-faulty.
#include "catch_compat.hpp"
#include "gpu_test_support.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

TEST_CASE("a sticky CUDA error ends the family with exit 3 and keeps every finished case", "[gpu][family]") {
  static_cast<void>(hdb_test::gpu_env());
  const auto dir = std::filesystem::temp_directory_path() / ("hdb_faulty_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto json = dir / "faulty.json";
  const std::string command = std::string(HDB_FAULTY_FAMILY) + " --benchmark_out=" + json.string() +
                              " --benchmark_out_format=json --benchmark_repetitions=1 >" + (dir / "out.txt").string() +
                              " 2>" + (dir / "err.txt").string();
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);

  const std::string results = read_all(json);
  CHECK(results.find("\"faulty/ok") != std::string::npos);
  CHECK(results.find("skipped: not on this node") != std::string::npos);
  CHECK(results.find("3 bytes differ from the pattern") != std::string::npos);
  CHECK(results.find("counter 'stray' is not a declared metric for case kind 'undeclared'") != std::string::npos);
  CHECK(results.find("faulty/after") == std::string::npos);  // nothing runs on a dead context
  const std::string errors = read_all(dir / "err.txt");
  CHECK(errors.find("CUDA context was lost in case faulty/faults") != std::string::npos);
  CHECK(errors.find("cudaErrorIllegalAddress") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a label value the schema does not declare stops the family at registration with exit 2", "[gpu][family]") {
  static_cast<void>(hdb_test::gpu_env());
  const auto dir = std::filesystem::temp_directory_path() / ("hdb_faulty_label_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string command = std::string(HDB_FAULTY_FAMILY) + " --bad-label=1 --benchmark_list_tests >" +
                              (dir / "out.txt").string() + " 2>" + (dir / "err.txt").string();
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  const std::string errors = read_all(dir / "err.txt");
  CHECK(errors.find("case faulty/ok/undeclared/gpu:") != std::string::npos);
  CHECK(errors.find("value 'undeclared' of parameter 'variant' is not one of its declared values") != std::string::npos);
  std::filesystem::remove_all(dir);
}
