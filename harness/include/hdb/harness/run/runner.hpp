#pragma once
// `hdbench run`: starts each family binary of the manifest under a timeout, keeps what it
// wrote, and turns the run directory into results.csv, meta.json, plots and report.md.
#include <csignal>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hdb/harness/data/family_status.hpp"
#include "hdb/harness/data/manifest.hpp"
#include "hdb/harness/run/plan.hpp"
#include "hdb/harness/run/tiers.hpp"
#include "hdb/harness/report/plots.hpp"

namespace hdb {

// "10,30" -> {10, 30}; "off" -> {}. Throws harness_error for anything else: a pause is a number of
// seconds in [0, 600], at most 5 of them.
[[nodiscard]] std::vector<double> parse_confirm_pauses(const std::string& text);

// The pauses before the second and third tries of a FAIL (--confirm's default): a transient
// measured on the H200s read 2-6 % low for tens of seconds, so the tries span about 45 s.
inline constexpr std::string_view default_confirm = "10,30";

struct suite_run_options {
  std::vector<std::string> families;      // empty: every family of the manifest
  bool quick = false;
  std::filesystem::path out_base = "results";
  double timeout_scale = 1;
  std::vector<std::string> extra_flags;   // after `--`, passed to every binary
  std::filesystem::path manifest;
  std::filesystem::path bin_dir;          // where hdbench-<family> and hdbench-probe live
  std::vector<std::string> command_line;  // recorded in meta.json
  // Non-empty: the run directory's path is written to this file as soon as the directory exists,
  // so a script (run_all.sh) can find the run it started without parsing the log.
  std::filesystem::path run_dir_file;
  plot_options plots;
  const volatile std::sig_atomic_t* cancel = nullptr;  // set on SIGINT/SIGTERM
  bool full = false;         // --full: every GPU and pair the whole sweep (no tiers)
  // --verdict: every family only the cases its declaration's checks and gates select (the
  // binaries' --verdict), what check grades and compare gates
  bool verdict = false;
  // --stopping: how each case's repetitions end (the binaries' --stopping); "" leaves their
  // default, auto: by precision on a verdict run, a fixed count otherwise
  std::string stopping;
  // --confirm: the pause before each further measurement of the cases behind figures that FAIL
  // (seconds; empty: --confirm=off, every figure measured once). A figure FAILs only when it fails
  // on every try (check's weigh_attempts); a neighbour's burst passes within these pauses, a fault
  // does not (docs/evidence.md).
  std::vector<double> confirm_pauses = parse_confirm_pauses(std::string(default_confirm));
  bool plan_only = false;    // --plan: print the plan, measure nothing
  int assume_gpus = 0;       // --assume-gpus=N with --plan: N copies of this node's (or the set's) GPU
  std::optional<std::filesystem::path> reference;  // --reference: where the plan's costs come from
};

// `hdbench run --plan`: prints each family's cases and estimated time for this node (or the
// assumed one) and the total; throws harness_error (exit 2) when the node cannot be known.
int print_plan(const suite_run_options& options, std::ostream& out);

// `hdbench check RUN` with its defaults, written as RUN/check.txt and RUN/check.json (the node
// figures and fleet read it); a run the check cannot grade gets neither and a line in `log`.
void write_check(const std::filesystem::path& run_dir, std::ostream& log);

// The flags a family binary gets, before the output flags the runner adds itself: the manifest's,
// the quick ones with --quick, every flag after `--`, and "--<family>.flag" as "--flag" for that
// family only.
[[nodiscard]] std::vector<std::string> family_flags(const family_entry& family, const suite_run_options& options);

// The flags that choose which of its cases a family binary measures on this node, the same for
// every family: the tiers' (sweep_flags; none with --full) and --verdict with --verdict.
[[nodiscard]] std::vector<std::string> selection_flags(const node_tiers& tiers, const suite_run_options& options);

// Throws harness_error naming the flag when a "--<family>.flag" names no family of the manifest
// (a typo would otherwise reach no family without a word).
void check_routed_flags(const std::vector<family_entry>& manifest, const std::vector<std::string>& extra_flags);

// Runs one family into raw_dir and returns its (reconciled) status; also writes
// raw/<family>.status.json. `selection`: the flags that choose its cases (selection_flags);
// `plan`: its plan (the cases as listed, their prices), for the progress lines (nullptr: its cases
// could not be listed). Progress goes to `log`.
family_status run_family(const family_entry& family, const suite_run_options& options,
                         const std::vector<std::string>& selection, const family_plan* plan,
                         const std::filesystem::path& raw_dir, std::ostream& log);

// The whole `run`. Returns the exit status: 0 when every family is ok, else 1.
// Throws harness_error for bad options (unknown family, unreadable manifest).
[[nodiscard]] int run_suite(const suite_run_options& options, std::ostream& log);

}  // namespace hdb
