#pragma once
// `hdbench compare BASELINE [BASELINE...] CURRENT`: is the current run slower than the
// baseline runs, beyond run-to-run noise? The model (comparison.hpp) matches the runs and
// decides; the renderers print its comparison_set as text, markdown, junit or JSON.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hdb/harness/verdict/comparison.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/common/output_format.hpp"

namespace hdb {

// text, markdown, junit or json (the accepted --format).
inline constexpr std::initializer_list<output_format> compare_formats = {output_format::text, output_format::markdown,
                                                                         output_format::junit, output_format::json};

struct compare_options {
  statistics_options statistics;  // --threshold, --alpha
  bool all = false;               // --all: also show non-headline metrics (they never affect the exit)
  output_format format = output_format::text;
  // "auto": a baseline that is a reference set brings its model; otherwise the set matching the
  // current run's kind (find_reference_set with `reference`), if any. "none": no model. Anything
  // else: a noise.json to use whatever its kind.
  std::string noise_model = "auto";
  std::optional<std::filesystem::path> reference;  // --reference DIR, for "auto"
  // The declarations whose tolerances hold a node to its kind's reference set, as check_options'.
  std::filesystem::path schema_dir = own_directory() / "schema";
};

// "5%", "5" -> 0.05. Throws harness_error for anything else or a negative value.
[[nodiscard]] double parse_percent(std::string_view text);

// A percentage flag as the command line gives it (`--threshold`): "5" or "5%" is 5 % (0.05).
// Throws harness_error naming `flag` for a value that is not a finite number or not positive.
// `warning` is set (one line, no command prefix) when the value looks like a fraction, 0 < value
// < 0.5 without a '%': "--threshold 0.05 is read as 0.05 %; write 5 or 5% for five per cent".
struct percent_flag {
  double fraction = 0;
  std::string warning;  // empty when the value reads as meant
};
[[nodiscard]] percent_flag parse_percent_flag(std::string_view text, std::string_view flag);

// The report of a comparison in options.format (compare_render.cpp).
[[nodiscard]] std::string render_comparison(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                            const comparison_set& set, const compare_options& options);

// compare's exit status for a comparison that loaded: 1 when a headline metric is SLOWER or
// MISSING (lost to a failure in the current run), else 0.
[[nodiscard]] inline int exit_code_of(const comparison_set& set) { return set.slower > 0 || !set.missing.empty() ? 1 : 0; }

struct compare_result {
  int exit_code = 0;   // 0 no headline regression, 1 at least one headline SLOWER or MISSING, 2 bad input
  std::string output;  // the report in the requested format (stdout)
  std::string error;   // one line when exit_code is 2 (stderr)
};

// Never throws for bad input: that is exit code 2 with `error` set. Needs >= 1 baseline; a
// baseline that is a reference set (reference_set.hpp) stands for all its member runs.
// build_comparisons holding each figure to the node rule check grades it by (its tolerance and host
// flag: the declarations in `schema_dir`, else the current run's), as compare does against a
// reference set: compare_runs and `hdbench reference validate` decide alike.
[[nodiscard]] comparison_set compare_held_to_node_rule(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                                       const statistics_options& statistics, compared_metrics shown,
                                                       const std::filesystem::path& schema_dir, const noise_model* model);

[[nodiscard]] compare_result compare_runs(const std::vector<std::filesystem::path>& baselines,
                                          const std::filesystem::path& current, const compare_options& options);

}  // namespace hdb
