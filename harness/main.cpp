// hdbench: runs the benchmark families, collects, compares and reports (docs/harness.md).
#include "hdb/harness/cli.hpp"

int main(int argc, char** argv) { return hdb::cli_main(argc, argv); }
