#include "hdb/shell.hpp"

#include "hdb/util/process.hpp"

namespace hdb {

std::optional<std::string> run_command(const std::string& command) {
  child_spec spec;
  spec.argv = {"/bin/sh", "-c", command};
  spec.timeout = std::chrono::seconds(120);  // nvidia-smi topo can take long on a busy 8-GPU node
  auto result = run_with_deadline(spec);
  if (!result.succeeded()) return std::nullopt;
  return std::move(result.output);
}

}  // namespace hdb
