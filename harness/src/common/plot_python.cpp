#include "hdb/harness/common/plot_python.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "hdb/util/process.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// Empty when `python` runs and imports matplotlib; otherwise why not, in a few words: "cannot run:
// No such file or directory", "cannot import matplotlib: ModuleNotFoundError: No module named ...".
std::string python_problem(const std::string& python) {
  if (::access(python.c_str(), X_OK) != 0) return "cannot run: " + std::string(std::strerror(errno));
  child_spec spec;
  spec.argv = {python, "-c", "import matplotlib"};
  spec.stdout_to = child_stream::discard;
  spec.stderr_to = child_stream::capture;
  spec.output_limit = 64 << 10;
  spec.timeout = std::chrono::seconds(60);
  const auto result = run_with_deadline(spec);
  if (result.succeeded()) return {};
  if (result.end == child_end::not_started) {  // start_error is "<path>: <reason>"
    const auto own = python + ": ";
    return "cannot run: " + (result.start_error.starts_with(own) ? result.start_error.substr(own.size()) : result.start_error);
  }
  // Python's traceback ends with the exception ("ModuleNotFoundError: No module named 'matplotlib'").
  std::string last;
  std::size_t start = 0;
  while (start < result.error_output.size()) {
    auto end = result.error_output.find('\n', start);
    if (end == std::string::npos) end = result.error_output.size();
    auto line = result.error_output.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = std::move(line);
    start = end + 1;
  }
  return "cannot import matplotlib: " + (last.empty() ? result.describe() : last);
}

// An installed hdbench's own copy (share/hdbench/plots beside its bin/, wherever the prefix was
// moved), else the source tree's, which a build-tree binary uses.
fs::path default_plots_dir() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  const auto installed = (exe.parent_path() / HDB_INSTALLED_DATA_FROM_BIN / "plots").lexically_normal();
  if (!ec && fs::exists(installed / "plot_run.py")) return installed;
  return HDB_PLOTS_SOURCE_DIR;
}

}  // namespace

plot_options plot_options_from_environment() {
  return {env("HDBENCH_PYTHON"), env("HDBENCH_PLOTS_DIR").value_or(default_plots_dir())};
}

plot_python find_plot_python(const plot_options& options) {
  plot_python found;
  if (options.python_override) {
    const auto problem = python_problem(*options.python_override);
    if (problem.empty()) {
      found.python = *options.python_override;
      return found;
    }
    found.override_problem = "HDBENCH_PYTHON=" + *options.python_override + " " + problem;
  }
  std::vector<std::string> candidates;
  if (const auto python3 = find_in_path("python3")) candidates.push_back(python3->string());
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& python : candidates) {
    if (python == options.python_override) continue;  // already tried
    if (python_problem(python).empty()) {
      found.python = python;
      return found;
    }
  }
  return found;
}

}  // namespace hdb
