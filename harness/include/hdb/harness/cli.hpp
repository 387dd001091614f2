#pragma once
// The `hdbench` command line: parses arguments into option structs and calls the library.
namespace hdb {

// Exit status: 0 ok; 1 a family failed (run) or a headline regression (compare);
// 2 bad usage or input, with one line on stderr.
[[nodiscard]] int cli_main(int argc, char** argv);

}  // namespace hdb
