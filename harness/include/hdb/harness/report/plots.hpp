#pragma once
// Drawing plots is delegated to plots/plot_run.py; a missing Python, matplotlib or script
// is explained on the log and never fails a run.
#include <csignal>
#include <filesystem>
#include <ostream>

#include "hdb/harness/common/plot_python.hpp"

namespace hdb {

// Runs `<python> plots/plot_run.py run_dir`, after update_meta_tables(run_dir) (meta.hpp): plot_run
// reads results.csv's core columns and each GPU's link rates from meta.json. Returns true when
// plots were drawn. `cancel` (set on SIGTERM or SIGINT; nullptr: never) ends the drawing.
bool draw_plots(const std::filesystem::path& run_dir, const plot_options& options, std::ostream& log,
                const volatile std::sig_atomic_t* cancel = nullptr);

}  // namespace hdb
