#include "hdb/harness/plots.hpp"

#include <unistd.h>

#include <cstdlib>

#include "hdb/host/process.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool imports_matplotlib(const std::string& python) {
  child_spec spec;
  spec.argv = {python, "-c", "import matplotlib"};
  spec.timeout = std::chrono::seconds(60);
  const auto result = run_with_deadline(spec);
  return result.succeeded();
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

std::optional<std::string> find_plot_python(const plot_options& options) {
  std::vector<std::string> candidates;
  if (options.python_override) candidates.push_back(*options.python_override);
  if (const auto python3 = find_in_path("python3")) candidates.push_back(python3->string());
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
