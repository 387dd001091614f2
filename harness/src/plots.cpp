#include "hdb/harness/plots.hpp"

#include <unistd.h>

#include <cstdlib>

#include "hdb/harness/process.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// posix_spawn does not search PATH; this does, for "python3".
std::optional<std::string> on_path(const std::string& program) {
  const auto path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  for (std::size_t begin = 0; begin <= path.size();) {
    auto end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const auto candidate = fs::path(path.substr(begin, end - begin)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    begin = end + 1;
  }
  return std::nullopt;
}

bool imports_matplotlib(const std::string& python) {
  process_spec spec;
  spec.argv = {python, "-c", "import matplotlib"};
  spec.timeout = std::chrono::seconds(60);
  const auto result = run_process(spec);
  return result.end == process_end::exited && result.exit_code == 0;
}

}  // namespace

plot_options plot_options_from_environment() {
  return {env("HDBENCH_PYTHON"), env("HDBENCH_PLOTS_DIR").value_or(HDB_PLOTS_SOURCE_DIR)};
}

std::optional<std::string> find_plot_python(const plot_options& options) {
  std::vector<std::string> candidates;
  if (options.python_override) candidates.push_back(*options.python_override);
  if (const auto python3 = on_path("python3")) candidates.push_back(*python3);
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& python : candidates) {
    if (::access(python.c_str(), X_OK) == 0 && imports_matplotlib(python)) return python;
  }
  return std::nullopt;
}

bool draw_plots(const fs::path& run_dir, const plot_options& options, std::ostream& log) {
  const auto script = options.plots_dir / "plot_run.py";
  if (!fs::exists(script)) {
    log << "plots: skipped, " << script.string() << " not found (set HDBENCH_PLOTS_DIR)\n";
    return false;
  }
  const auto python = find_plot_python(options);
  if (!python) {
    log << "plots: skipped, no Python with matplotlib; install it (apt install python3-matplotlib, or "
           "pip install matplotlib) or point HDBENCH_PYTHON at a Python that has it, then run: hdbench plot "
        << run_dir.string() << "\n";
    return false;
  }
  process_spec spec;
  spec.argv = {*python, script.string(), run_dir.string()};
  spec.stdout_path = run_dir / "plots" / "plot_run.log";
  spec.stderr_path = run_dir / "plots" / "plot_run.stderr.log";
  spec.timeout = std::chrono::minutes(10);
  fs::create_directories(run_dir / "plots");
  const auto result = run_process(spec);
  if (result.end == process_end::exited && result.exit_code == 0) {
    log << "plots: written to " << (run_dir / "plots").string() << "\n";
    return true;
  }
  log << "plots: plot_run.py did not finish cleanly; see " << spec.stderr_path.string() << "\n";
  return false;
}

}  // namespace hdb
