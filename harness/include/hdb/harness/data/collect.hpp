#pragma once
// raw/ -> results.csv. Everything is rebuilt from the files a run left in raw/
// (<family>.json and <family>.status.json), so `hdbench collect` needs no live run and
// gives the same bytes every time.
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hdb/harness/data/family_status.hpp"
#include "hdb/harness/data/metric_key.hpp"
#include "hdb/harness/data/raw_json.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/contract/declaration.hpp"

namespace hdb {

// What raw/ holds for one family.
struct family_raw {
  std::optional<raw_family_output> output;
  std::string output_error;  // why output is missing
  family_status status;
};

// Makes a status agree with the JSON the family left: counts its cases, and marks a family
// that "succeeded" without a readable JSON as failed.
void reconcile_status(family_status& status, const family_raw& raw);

// Reads raw/<family>.json and raw/<family>.status.json (either may be missing).
[[nodiscard]] family_raw load_family_raw(const std::filesystem::path& raw_dir, const std::string& family);

// The rows of one family, in schema order: a failed-family row, then each case in benchmark
// order (metrics in declaration order, sample rows then the median), then the alpha-beta fit
// rows. Only the counters the case kind declares become rows; a numeric key that is neither
// one of them nor Google Benchmark's own fails the case, naming the counter. `declaration` is
// the family's (the context's, else the installed one); without one every case fails.
[[nodiscard]] std::vector<result_row> family_rows(std::string_view run_id, const family_raw& raw,
                                                  const family_declaration* declaration);

// The alpha-beta fit (fit.hpp) of each group of ok `fit.of` medians among `rows` that differ only
// in size_bytes: one row per fit role (beta, alpha, n_half) under the metric the declaration names
// for it, with statistic fit and no size_bytes.
[[nodiscard]] std::vector<result_row> alpha_beta_rows(std::span<const result_row> rows, const fit_decl& fit);

// Whether a binary measured only its verdict cases (--verdict), and how many cases it would have
// measured without (its context's hdbench.verdict and hdbench.cases_without_verdict).
struct case_selection {
  bool verdict = false;
  std::size_t cases_without_verdict = 0;
};

// The selection the context records; nullopt where it records none (a binary built before it).
[[nodiscard]] std::optional<case_selection> selection_of(const nlohmann::json& context);

struct collected_family {
  family_status status;
  std::optional<family_declaration> declaration;  // what the rows were built from
  std::string plots;                              // the manifest's plot module, "" when not listed
  std::optional<case_selection> selection;
};

struct collected_run {
  std::string run_id;                      // the directory name
  std::vector<collected_family> families;  // manifest order, then any other family by name
  std::vector<std::string> param_columns;  // parameter_columns() of their declarations
  std::vector<result_row> rows;
};

// Where collect finds what raw/ does not say: the manifest (family order, plot module) and the
// declarations of families whose output carries no `hdbench.schema` (<schema_dir>/<family>.json).
// An empty path: none (families then in name order, and output without a declaration fails).
struct collect_sources {
  std::filesystem::path manifest;
  std::filesystem::path schema_dir;
};

// A run's confirmations (runner.hpp): raw/attempt<N>/ holds what the N-th measurement of the
// re-measured cases left, as raw/ holds the first's. Sorted by N.
inline constexpr std::string_view attempt_dir_prefix = "attempt";
[[nodiscard]] std::vector<std::pair<int, std::filesystem::path>> attempt_dirs(const std::filesystem::path& raw_dir);
[[nodiscard]] std::filesystem::path attempt_dir(const std::filesystem::path& raw_dir, int attempt);

// The Google Benchmark run names of the cases in `output` whose case key (case_key_of) is among
// `cases`: what --benchmark_filter must select to measure exactly those cases again.
[[nodiscard]] std::vector<std::string> run_names_of(const raw_family_output& output, const family_declaration& declaration,
                                                    const std::set<metric_key>& cases);

// The manifest and declarations installed beside hdbench: <bin_dir>/suite.json, <bin_dir>/schema/.
[[nodiscard]] collect_sources installed_sources(const std::filesystem::path& bin_dir);

// Reads every family under <run_dir>/raw. Pure: writes nothing.
[[nodiscard]] collected_run collect_run(const std::filesystem::path& run_dir, const collect_sources& sources);

// `hdbench collect`: writes results.csv and refreshes meta.json's families (status, declaration
// as `schema`, plot module as `plots`, case selection as `selection`).
collected_run collect_and_write(const std::filesystem::path& run_dir, const collect_sources& sources);

}  // namespace hdb
