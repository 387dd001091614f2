#include "hdb/harness/report/plots.hpp"

#include "hdb/harness/data/meta.hpp"
#include "hdb/util/process.hpp"

namespace hdb {

namespace fs = std::filesystem;

bool draw_plots(const fs::path& run_dir, const plot_options& options, std::ostream& log, const volatile std::sig_atomic_t* cancel) {
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
  // A run killed while it draws (a batch system's or the health check's time limit) takes its
  // plot step with it: an orphan would draw on for minutes, holding what the run held.
  spec.die_with_parent = true;
  // And a run told to stop (SIGTERM, SIGINT) stops drawing at once.
  spec.cancel = cancel;
  fs::create_directories(run_dir / "plots");
  const auto result = run_with_deadline(spec);
  if (result.succeeded()) {
    log << "plots: written to " << (run_dir / "plots").string() << "\n";
    return true;
  }
  if (result.end == child_end::cancelled) {
    log << "plots: stopped (hdbench received a signal); draw them with: hdbench plot " << run_dir.string() << "\n";
    return false;
  }
  log << "plots: plot_run.py did not finish cleanly; see " << spec.stderr_path.string() << "\n";
  return false;
}

}  // namespace hdb
