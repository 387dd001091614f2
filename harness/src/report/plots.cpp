#include "hdb/harness/report/plots.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "hdb/harness/data/meta.hpp"
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

bool draw_plots(const fs::path& run_dir, const plot_options& options, std::ostream& log) {
  // The plots read results.csv's columns and the link rates from meta.json: an older run gets them first.
  update_meta_tables(run_dir);
  const auto script = options.plots_dir / "plot_run.py";
  if (!fs::exists(script)) {
    log << "plots: skipped, " << script.string() << " not found (set HDBENCH_PLOTS_DIR)\n";
    return false;
  }
  const auto found = find_plot_python(options);
  if (!found.python && !found.override_problem.empty()) {
    log << "plots: skipped, " << found.override_problem
        << ", and no other Python has matplotlib (python3 on PATH, /usr/bin/python3); point HDBENCH_PYTHON at one that "
           "has it (or install python3-matplotlib), then run: hdbench plot "
        << run_dir.string() << "\n";
    return false;
  }
  if (!found.python) {
    log << "plots: skipped, no Python with matplotlib; install it (apt install python3-matplotlib, or "
           "pip install matplotlib) or point HDBENCH_PYTHON at a Python that has it, then run: hdbench plot "
        << run_dir.string() << "\n";
    return false;
  }
  if (!found.override_problem.empty()) log << "plots: " << found.override_problem << "; falling back to " << *found.python << "\n";
  const auto& python = found.python;
  child_spec spec;
  spec.argv = {*python, script.string(), run_dir.string()};
  if (options.per_gpu) spec.argv.emplace_back("--per-gpu-plots");
  spec.stdout_path = run_dir / "plots" / "plot_run.log";
  spec.stderr_path = run_dir / "plots" / "plot_run.stderr.log";
  spec.timeout = std::chrono::minutes(10);
  fs::create_directories(run_dir / "plots");
  const auto result = run_with_deadline(spec);
  if (result.succeeded()) {
    log << "plots: written to " << (run_dir / "plots").string() << "\n";
    return true;
  }
  log << "plots: plot_run.py did not finish cleanly; see " << spec.stderr_path.string() << "\n";
  return false;
}

}  // namespace hdb
