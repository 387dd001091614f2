#pragma once
// Node facts that only a tool reports (nvidia-smi topo, lscpu, ...): one way to run it, so every
// reader treats a missing tool or a failing one the same.
#include <optional>
#include <string>

namespace hdb {

// stdout of a shell command (its stderr discarded), or nullopt when it cannot run or exits non-zero.
[[nodiscard]] std::optional<std::string> run_command(const std::string& command);

}  // namespace hdb
