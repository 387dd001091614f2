#pragma once
// Which Python draws the figures (a run's and a fleet's), and where the plot scripts are: a missing
// Python, matplotlib or script is explained on the log and never fails a command.
#include <filesystem>
#include <optional>
#include <string>

namespace hdb {

struct plot_options {
  std::optional<std::string> python_override;  // $HDBENCH_PYTHON
  std::filesystem::path plots_dir;             // $HDBENCH_PLOTS_DIR, else the source tree's plots/
  bool per_gpu = false;                        // --per-gpu-plots: sweeps for every GPU, not one per class
};

// The options from the environment, defaulting plots_dir to the configure-time source dir.
[[nodiscard]] plot_options plot_options_from_environment();

// The first of $HDBENCH_PYTHON, python3 on PATH, /usr/bin/python3 that can import matplotlib,
// and why $HDBENCH_PYTHON was passed over when it was set and unusable.
struct plot_python {
  std::optional<std::string> python;  // the Python to draw with; nullopt: none imports matplotlib
  // "HDBENCH_PYTHON=/x cannot run: No such file or directory" or "HDBENCH_PYTHON=/x cannot import
  // matplotlib: ModuleNotFoundError: No module named 'matplotlib'"; empty when it was unset or used.
  std::string override_problem;
};
[[nodiscard]] plot_python find_plot_python(const plot_options& options);

}  // namespace hdb
