#include "hdb/harness/data/run_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "hdb/harness/common/error.hpp"

namespace hdb {
namespace {

std::string format_utc(std::chrono::system_clock::time_point when, const char* format) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  std::array<char, 64> buffer{};
  const auto n = std::strftime(buffer.data(), buffer.size(), format, &utc);
  return std::string(buffer.data(), n);
}

}  // namespace

std::string make_run_id(std::chrono::system_clock::time_point when, std::string_view hostname) {
  std::string host(hostname.substr(0, hostname.find('.')));
  for (char& c : host) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!safe) c = '_';
  }
  if (host.empty()) host = "unknown";
  return format_utc(when, "%Y%m%dT%H%M%SZ") + "-" + host;
}

std::string utc_timestamp(std::chrono::system_clock::time_point when) { return format_utc(when, "%Y-%m-%dT%H:%M:%SZ"); }

std::string local_hostname() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "unknown";
  return name.data();
}

std::filesystem::path create_run_dir(const std::filesystem::path& base, const std::string& run_id) {
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  if (ec) throw harness_error("cannot create " + base.string() + ": " + ec.message());
  for (int attempt = 1;; ++attempt) {
    const auto dir = base / (attempt == 1 ? run_id : run_id + "-" + std::to_string(attempt));
    if (::mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST) throw harness_error("cannot create " + dir.string() + ": " + std::strerror(errno));
  }
}

}  // namespace hdb
