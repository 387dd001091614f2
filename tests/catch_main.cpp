// The one Catch2 main for every test binary: Catch2 v2 needs its runner compiled exactly once;
// v3 ships a main too, but one file for both keeps a single code path.
#if defined(HDB_CATCH2_V3)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdlib>

int main(int argc, char* argv[]) {
  // Every kernel module loads when a GPU test's context is created, as in the family binaries
  // (hdb::family_main): a module loaded lazily at a kernel's first launch behind a held spin gate
  // would wait for the gated device forever. Before any CUDA call; a value the caller set wins.
  setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
