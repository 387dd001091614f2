// The one Catch2 main for every test binary (Catch2 v2 needs it defined once; v3 ships its own
// in Catch2WithMain, but linking ours keeps one code path).
#include "catch_compat.hpp"

#if defined(HDB_CATCH2_V3)
#include <catch2/catch_session.hpp>
int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
#endif
