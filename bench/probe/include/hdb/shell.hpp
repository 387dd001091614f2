#pragma once
// Node facts that only a tool reports (nvidia-smi topo, lscpu, ...): one way to run it, so every
// reader treats a missing tool or a failing one the same.
#include <optional>
#include <string>

namespace hdb {

// stdout of a shell command (its stderr discarded), or nullopt when it cannot run, exits non-zero
// or is still running after 120 s (then it is killed: run_with_deadline, hdb/util/process.hpp).
[[nodiscard]] std::optional<std::string> run_command(const std::string& command);

}  // namespace hdb
