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

#include "hdb/harness/compare_model.hpp"
#include "hdb/harness/noise_model.hpp"

namespace hdb {

// The threshold (smallest relative change that matters) when the noise is known (a set, a model,
// or >= 2 baselines) and when it is not (one baseline, repetitions only).
inline constexpr double known_noise_threshold = 0.01;
inline constexpr double unknown_noise_threshold = 0.05;

struct reference_set {
  std::filesystem::path dir;
  std::vector<loaded_run> runs;  // the members, runs/<run_id>/, in run id order
  noise_model model;
};

// noise.json and runs/ both present.
[[nodiscard]] bool is_reference_set(const std::filesystem::path& dir);

// Throws harness_error naming the file: not a set, a member unreadable, noise.json malformed.
[[nodiscard]] reference_set load_reference_set(const std::filesystem::path& dir);

// The set for this run's node kind (kind_of(run_meta)). Where to look: explicit_dir (--reference),
// else $HDBENCH_REFERENCE_DIR, else the built-in results/reference. The place may be a set itself
// or a directory of sets (each subdirectory with noise.json is a candidate; the first whose kind
// matches, in name order, is used). nullopt when none matches or the default place is missing.
// Throws harness_error when explicit_dir (or the environment's) does not exist, when explicit_dir
// is itself a set of another kind (asked for by name, so a mismatch is an error, not a fallback),
// or when the run meta has no node kind.
[[nodiscard]] std::optional<reference_set> find_reference_set(const nlohmann::json& run_meta,
                                                              const std::optional<std::filesystem::path>& explicit_dir);

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

}  // namespace hdb
