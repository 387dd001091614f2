// The one Catch2 main for every test binary: Catch2 v2 needs its runner compiled exactly once;
// v3 ships a main too, but one file for both keeps a single code path.
#if defined(HDB_CATCH2_V3)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
