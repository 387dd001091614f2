#include "hdb/shell.hpp"

#include <array>
#include <cstdio>
#include <memory>

namespace hdb {

std::optional<std::string> run_command(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>/dev/null").c_str(), "r"), pclose);
  if (!pipe) return std::nullopt;
  std::string out;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe.get()) != nullptr) out += chunk.data();
  if (pclose(pipe.release()) != 0) return std::nullopt;
  return out;
}

}  // namespace hdb
