#pragma once
// Reference sets (docs/harness.md, "Reference sets and the noise model"): results/reference/<kind>/
// holds one representative run in full (meta.json results.csv report.md plots/), every member
// run compactly under runs/<run_id>/{meta.json,results.csv}, and noise.json learned from runs/.
// A directory with noise.json and runs/ is a set; a plain run directory is not (old behaviour).
// compare and check read sets through this header; `hdbench reference` builds them.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hdb/harness/verdict/comparison.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/verdict/noise_model.hpp"

namespace hdb {

struct reference_set {
  std::filesystem::path dir;
  std::vector<loaded_run> runs;  // the members, runs/<run_id>/, in run id order
  noise_model model;
};

// noise.json and runs/ both present.
[[nodiscard]] bool is_reference_set(const std::filesystem::path& dir);

// Throws harness_error naming the file: not a set, a member unreadable, noise.json malformed.
[[nodiscard]] reference_set load_reference_set(const std::filesystem::path& dir);

// Where reference sets are looked for: explicit_dir (--reference), else $HDBENCH_REFERENCE_DIR,
// else the built-in results/reference. `named`: the user chose it, so it must exist.
struct reference_place {
  std::filesystem::path dir;
  bool named = false;
};
[[nodiscard]] reference_place reference_place_for(const std::optional<std::filesystem::path>& explicit_dir);

// The reference sets at `place`: the place itself when it is one, else its subdirectories that
// are, in name order; none when it does not exist.
[[nodiscard]] std::vector<std::filesystem::path> reference_sets_in(const std::filesystem::path& place);

// The set for this run's node kind (kind_of(run_meta)). Where to look: explicit_dir (--reference),
// else $HDBENCH_REFERENCE_DIR, else the built-in results/reference. The place may be a set itself
// or a directory of sets (each subdirectory with noise.json is a candidate; the first whose kind
// matches, in name order, is used). nullopt when none matches or the default place is missing.
// Throws harness_error when explicit_dir (or the environment's) does not exist, when explicit_dir
// is itself a set of another kind (asked for by name, so a mismatch is an error, not a fallback),
// or when the run meta has no node kind.
[[nodiscard]] std::optional<reference_set> find_reference_set(const nlohmann::json& run_meta,
                                                              const std::optional<std::filesystem::path>& explicit_dir);

// The set of the run's GPU model with the fewest GPUs (the first in name order among equals),
// whatever its kind otherwise: what prices a plan where no set of the node's own kind exists (an
// eight-GPU node beside a one-GPU set), never what a verdict is graded against. nullopt when
// none; throws harness_error for a run without a node or a named directory that does not exist.
[[nodiscard]] std::optional<reference_set> find_reference_set_of_gpu_model(
    const nlohmann::json& run_meta, const std::optional<std::filesystem::path>& explicit_dir);

// What a single healthy run of this kind reads for one metric: values inside [low, high] are
// what compare against the whole set calls SAME (the prediction interval of one new run at level
// alpha / tests, widened where the threshold says a smaller change does not matter). For
// better::higher, below low is SLOWER and above high FASTER; for better::lower the other way;
// neutral: the plain prediction interval. `detectable` is the smallest relative change in the bad
// direction that compare would flag. `runs`: how many members measured the metric. nullopt when
// the metric is in fewer than 2 members or its centre is not positive.
struct expected_band {
  double centre = 0;
  double low = 0, high = 0;
  std::size_t runs = 0;
  double detectable = 0;
};

[[nodiscard]] std::optional<expected_band> band_for(const reference_set& set, const metric_key& key, better direction,
                                                    std::size_t tests, double alpha,
                                                    double threshold = known_noise_threshold);

// --- building and validating a set (`hdbench reference`) ---------------------------------------

// Re-learns SET_DIR/noise.json from runs/ (all members must be one kind) and returns the model.
noise_model learn_reference_set(const std::filesystem::path& set_dir);

struct added_member {
  std::string run_id;
  std::size_t rows_kept = 0, rows_total = 0;
  bool representative = false;  // also copied in full to the set's top level
  noise_model model;            // re-learned
};

// Copies RUN_DIR compactly into SET_DIR/runs/<run_id>/ (medians and fits, the headlines'
// repetitions, every skipped or failed row; meta.json whole), and in full to SET_DIR's top level
// when `representative` or the set has no representative yet; then re-learns noise.json. Refuses
// (harness_error) a run of another kind than the set's, a run already in the set, a run without meta.json.
added_member add_to_reference_set(const std::filesystem::path& set_dir, const std::filesystem::path& run_dir,
                                  bool representative);

// Per gating headline of the set: how its members and extra runs fare against the rest.
struct headline_validation {
  metric_key key;
  std::string unit;
  better direction = better::higher;
  std::size_t runs = 0;
  double spread = 0;                  // between-run SD of ln(median) in the set (about the CV)
  std::optional<double> inflation;    // the group's lambda = between / within
  std::optional<double> detectable;   // against the whole set (band_for)
  // Leave-one-out and extra runs, by compare's verdict against the set (what exits 1); of the SAME,
  // those outside the band within the figure's tolerance (check's WARN): information, no verdict.
  int same = 0, outside_band = 0, false_slower = 0, false_faster = 0;
  int caught = 0, missed = 0;                         // planted changes
};

// One run's `hdbench check` against the rest of the set (a left-out member) or the whole set (an
// extra run): its lines that are not PASS. A healthy run of the kind has no FAIL.
struct check_validation {
  std::string run;
  int failed = 0, warned = 0;
  std::vector<std::string> lines;  // "FAIL GPU 0 copy pinned h2d 1 GiB: <reason>"
};

// A planted fault and the grade the rule gives it (check_planted_faults).
struct planted_check {
  std::string fault;      // "every figure worse than its tolerance by 2 points", ...
  std::string figure;     // the line's family and label, GPU
  std::string expected;   // "FAIL", "not FAIL"
  std::string got;        // the grade check gave
  bool as_expected = false;
};

// One of compare's false SLOWER or FASTER above, with the run it came from (its run id): the
// left-out member or the extra run whose compare a user would have acted on.
struct false_verdict {
  std::string run;
  metric_key key;
  verdict result = verdict::slower;
  double change = 0;  // the median's change against the set, as compare prints it
};

struct validation {
  std::string set_name;
  std::size_t members = 0, extra_runs = 0, tests = 0;
  std::optional<double> plant;
  std::vector<headline_validation> headlines;
  std::vector<false_verdict> false_by_run;  // the headlines' false SLOWER and FASTER, run by run
  std::vector<check_validation> checks;
  std::vector<planted_check> planted_checks;
  std::vector<std::string> notes;
  int false_verdicts = 0, missed = 0;  // check FAILs on healthy runs count as false verdicts
};

struct validate_options {
  statistics_options statistics;  // --threshold, --alpha
  std::optional<double> plant;  // make every gating headline worse by this fraction
  std::filesystem::path schema_dir = own_directory() / "schema";  // as check_options'
};

// Leave-one-out inside the set (each member against the others, the model re-learned without
// it), each extra run against the whole set, and with `plant` a copy of each extra run (of each
// left-out member when there is none) with every gating headline made worse: bandwidth x (1 - p),
// time x (1 + p). Each of those runs is also checked (`hdbench check`: its FAIL and WARN lines),
// and with `plant` the first of them carries the planted faults of check's rule: every figure
// that is not a host line worse than its tolerance by 2 points (FAIL), every host line worse by
// 0.6 of its tolerance (not FAIL), and GPU 0's PCIe link one generation below the kind's (FAIL).
// Throws harness_error for a set with fewer than 2 members or an unreadable run.
[[nodiscard]] validation validate_reference_set(const std::filesystem::path& set_dir,
                                                const std::vector<std::filesystem::path>& extra_runs,
                                                const validate_options& options);
[[nodiscard]] std::string render_validation(const validation& result);

}  // namespace hdb
