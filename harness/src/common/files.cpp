#include "hdb/harness/common/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "hdb/harness/common/error.hpp"
#include "hdb/util/process.hpp"  // unique_fd

namespace hdb {
namespace {

[[noreturn]] void throw_io(const std::string& what, const std::filesystem::path& path) {
  throw harness_error(what + " " + path.string() + ": " + std::strerror(errno));
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path) {
  auto text = try_read_text_file(path);
  if (!text) throw_io("cannot read", path);
  return *std::move(text);
}

std::optional<std::string> try_read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(buffer).str();
}

std::string read_file_tail(const std::filesystem::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<std::size_t>(in.tellg());
  const auto start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string tail(size - start, '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail;
}

void atomic_write_file(const std::filesystem::path& path, std::string_view content) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  unique_fd fd(::mkstemp(tmp.data()));
  if (fd.get() < 0) throw_io("cannot create a temporary file for", path);
  const auto remove_tmp = [&] { ::unlink(tmp.c_str()); };
  for (std::size_t done = 0; done < content.size();) {
    const auto n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      remove_tmp();
      throw_io("cannot write", path);
    }
    done += static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; published results are ordinary files. A failing close is a deferred
  // write error, so it is closed here, not by the owner.
  if (::fchmod(fd.get(), 0644) != 0 || ::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    remove_tmp();
    throw_io("cannot write", path);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    remove_tmp();
    throw_io("cannot replace", path);
  }
  // The rename itself is durable only once the directory is synced; best effort.
  unique_fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

void write_json_file(const std::filesystem::path& path, const nlohmann::json& value) {
  atomic_write_file(path, value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::string display_path(const std::filesystem::path& path) {
  std::error_code ec;
  const auto relative = std::filesystem::proximate(path, std::filesystem::current_path(ec), ec);
  if (ec || relative.empty() || *relative.begin() == "..") return path.string();
  return relative.string();
}

std::filesystem::path own_directory() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

}  // namespace hdb
