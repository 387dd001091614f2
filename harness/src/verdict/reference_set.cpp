// Reference sets: finding the set of a run's kind, loading it, the expected band of one metric,
// and building a set (`hdbench reference add` / `learn`).
#include "hdb/harness/verdict/reference_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/verdict/student_t.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* noise_file = "noise.json";
constexpr const char* runs_dir = "runs";

// The member directories of a set, in name order (run ids sort by time).
std::vector<fs::path> member_dirs(const fs::path& set_dir) {
  std::vector<fs::path> dirs;
  const auto runs = set_dir / runs_dir;
  if (!fs::is_directory(runs)) return dirs;
  for (const auto& entry : fs::directory_iterator(runs)) {
    if (entry.is_directory() && fs::exists(entry.path() / "results.csv")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<loaded_run> load_members(const fs::path& set_dir) {
  std::vector<loaded_run> runs;
  for (const auto& dir : member_dirs(set_dir)) runs.push_back(load_run(dir));
  return runs;
}

std::vector<indexed_run> index_all(const std::vector<loaded_run>& runs) {
  std::vector<indexed_run> indexed;
  for (const auto& run : runs) indexed.push_back(index_run(run));
  return indexed;
}

node_kind kind_of_run(const loaded_run& run) {
  if (!run.meta) throw harness_error(run.csv_path.parent_path().string() + ": no meta.json, so its machine kind is unknown");
  try {
    return kind_of(*run.meta);
  } catch (const harness_error& e) {
    throw harness_error(run.csv_path.parent_path().string() + ": " + e.what());
  }
}

// The kind a set holds: its noise.json's, else its first member's (a set being started).
std::optional<node_kind> set_kind(const fs::path& set_dir) {
  if (fs::exists(set_dir / noise_file)) return read_noise_model(set_dir / noise_file).kind;
  const auto members = member_dirs(set_dir);
  if (members.empty()) return std::nullopt;
  return kind_of_run(load_run(members.front()));
}

// An installed hdbench's own copy (share/hdbench/reference beside its bin/, wherever the prefix
// was moved), else the source tree's, which a build-tree binary uses.
fs::path default_reference_root() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  const auto installed = (exe.parent_path() / HDB_INSTALLED_DATA_FROM_BIN / "reference").lexically_normal();
  if (!ec && fs::is_directory(installed)) return installed;
#ifdef HDB_REFERENCE_DIR
  return HDB_REFERENCE_DIR;
#else
  return "results/reference";
#endif
}

// What compare needs of a member: each figure's median (or fit), the repetitions of the
// headlines (their within-run spread is the model's scale), and why a case did not run.
std::vector<result_row> compact_rows(const std::vector<result_row>& rows) {
  std::vector<result_row> kept;
  for (const auto& row : rows) {
    const bool central = row.stat == statistic::median || row.stat == statistic::fit;
    const bool headline_sample = row.stat == statistic::sample && row.headline;
    if (row.status != row_status::ok || central || headline_sample) kept.push_back(row);
  }
  return kept;
}

void copy_representative(const fs::path& run_dir, const fs::path& set_dir) {
  if (fs::exists(set_dir / "results.csv") && fs::equivalent(run_dir / "results.csv", set_dir / "results.csv")) return;
  for (const auto* file : {"results.csv", "meta.json", "report.md"}) {
    if (fs::exists(run_dir / file)) fs::copy_file(run_dir / file, set_dir / file, fs::copy_options::overwrite_existing);
    else fs::remove(set_dir / file);
  }
  fs::remove_all(set_dir / "plots");
  if (fs::is_directory(run_dir / "plots")) fs::copy(run_dir / "plots", set_dir / "plots", fs::copy_options::recursive);
}

}  // namespace

bool is_reference_set(const fs::path& dir) { return fs::is_regular_file(dir / noise_file) && fs::is_directory(dir / runs_dir); }

namespace {

reference_set load_reference_set(const fs::path& dir, noise_model model) {
  reference_set set{dir, load_members(dir), std::move(model)};
  if (set.runs.empty()) throw harness_error(dir.string() + ": reference set without member runs in runs/");
  return set;
}

}  // namespace

reference_set load_reference_set(const fs::path& dir) {
  if (!is_reference_set(dir)) throw harness_error(dir.string() + ": not a reference set (needs noise.json and runs/)");
  return load_reference_set(dir, read_noise_model(dir / noise_file));
}

reference_place reference_place_for(const std::optional<fs::path>& explicit_dir) {
  if (explicit_dir) return {*explicit_dir, true};
  if (const char* env = std::getenv("HDBENCH_REFERENCE_DIR"); env && *env) return {env, true};
  return {default_reference_root(), false};
}

std::vector<fs::path> reference_sets_in(const fs::path& place) {
  if (is_reference_set(place)) return {place};
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(place, ec)) {
    if (entry.is_directory() && is_reference_set(entry.path())) sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

namespace {

// Which of two sets of one kind grades a run is no choice to make silently.
harness_error two_sets_of(const node_kind& kind, const fs::path& one, const fs::path& other) {
  return harness_error("two reference sets for " + describe(kind) + ": " + one.string() + " and " + other.string() +
                       "; keep one, or name it with --reference");
}

// Where to look for sets, when it exists; a directory the user named must.
std::optional<fs::path> existing_reference_place(const std::optional<fs::path>& explicit_dir) {
  const auto place = reference_place_for(explicit_dir);
  if (fs::is_directory(place.dir)) return place.dir;
  if (place.named) throw harness_error("reference directory " + place.dir.string() + " does not exist");
  return std::nullopt;
}

}  // namespace

std::optional<reference_set> find_reference_set(const json& run_meta, const std::optional<fs::path>& explicit_dir) {
  const auto kind = kind_of(run_meta);
  const auto place = existing_reference_place(explicit_dir);
  if (!place) return std::nullopt;
  if (is_reference_set(*place)) {
    auto set = load_reference_set(*place);
    if (set.model.kind == kind) return set;
    if (explicit_dir) {
      throw harness_error("reference set " + place->string() + " is for " + describe(set.model.kind) + "; this run is " +
                          describe(kind));
    }
    return std::nullopt;
  }
  std::optional<std::pair<fs::path, noise_model>> found;  // its kind is in the model it is loaded with: read once
  for (const auto& dir : reference_sets_in(*place)) {
    auto model = read_noise_model(dir / noise_file);
    if (model.kind != kind) continue;
    if (found) throw two_sets_of(kind, found->first, dir);
    found.emplace(dir, std::move(model));
  }
  if (!found) return std::nullopt;
  return load_reference_set(found->first, std::move(found->second));
}

std::optional<reference_set> find_reference_set_of_gpu_model(const json& run_meta, const std::optional<fs::path>& explicit_dir) {
  const auto kind = kind_of(run_meta);
  const auto place = existing_reference_place(explicit_dir);
  if (!place) return std::nullopt;
  std::optional<fs::path> best;
  int best_gpus = 0;
  for (const auto& dir : reference_sets_in(*place)) {
    const auto other = read_noise_model(dir / noise_file).kind;
    if (other.gpu_name != kind.gpu_name || (best && other.gpus >= best_gpus)) continue;
    best = dir;
    best_gpus = other.gpus;
  }
  if (!best) return std::nullopt;
  return load_reference_set(*best);
}

std::optional<expected_band> band_for(const reference_set& set, const metric_key& key, better direction,
                                      std::size_t tests, double alpha, double threshold) {
  const auto* noise = set.model.find(key);
  if (!noise || noise->runs < 2 || !(noise->centre > 0) || tests == 0) return std::nullopt;
  const auto* spread = set.model.spread_for(key, noise->headline);
  if (!spread || !(spread->df > 0)) return std::nullopt;
  // decide_against_runs for a new run of the kind, with the set's runs as baselines and the new
  // run's repetitions as noisy as theirs: se^2 = tau^2 (1 + 1/K), the prediction interval.
  const double within = noise->within_variance.value_or(0);
  const bool scaled = spread->inflation_df > 0 && within > 0;
  const double run_var = scaled ? std::max(spread->inflation, 1.0) * within : std::max(spread->variance, within);
  const double df = scaled ? spread->inflation_df : spread->df;
  const auto runs = static_cast<double>(noise->runs);
  const double se = std::sqrt(run_var * (1 + 1 / runs));
  const double half_width = student_t_quantile(1 - alpha / static_cast<double>(tests) / 2, df) * se;
  expected_band band;
  band.centre = noise->centre;
  band.runs = noise->runs;
  if (direction == better::neutral) {
    band.low = noise->centre * std::exp(-half_width);
    band.high = noise->centre * std::exp(half_width);
    band.detectable = std::expm1(half_width);
    return band;
  }
  const auto limits = flag_limits_for(half_width, threshold);
  band.low = noise->centre * std::exp(limits.low);
  band.high = noise->centre * std::exp(limits.high);
  band.detectable = direction == better::higher ? -std::expm1(limits.low) : std::expm1(limits.high);
  return band;
}

noise_model learn_reference_set(const fs::path& set_dir) {
  const auto runs = load_members(set_dir);
  if (runs.empty()) throw harness_error(set_dir.string() + ": no member runs under runs/ to learn from");
  const auto kind = kind_of_run(runs.front());
  for (const auto& run : runs) {
    if (kind_of_run(run) != kind) {
      throw harness_error(set_dir.string() + ": member " + run.name + " is " + describe(kind_of_run(run)) + ", the set is " +
                          describe(kind));
    }
  }
  const auto model = learn_noise_model(index_all(runs), kind);
  write_noise_model(set_dir / noise_file, model);
  return model;
}

added_member add_to_reference_set(const fs::path& set_dir, const fs::path& run_dir, bool representative) {
  if (!fs::is_directory(run_dir)) throw harness_error("not a run directory: " + run_dir.string());
  const auto run = load_run(run_dir);
  const auto kind = kind_of_run(run);
  if (const auto existing = fs::is_directory(set_dir) ? set_kind(set_dir) : std::nullopt; existing && *existing != kind) {
    throw harness_error("refused: " + run.name + " is " + describe(kind) + ", the set " + set_dir.string() + " is " +
                        describe(*existing));
  }
  const auto member = set_dir / runs_dir / run.name;
  if (fs::exists(member)) throw harness_error(run.name + " is already a member of " + set_dir.string());

  const auto table = read_results_csv(read_text_file(run.csv_path));
  // Written to a temporary name and renamed, so a failed copy never leaves half a member that
  // the next learn would read.
  const auto partial = set_dir / runs_dir / ("." + run.name + ".partial");
  fs::remove_all(partial);
  fs::create_directories(partial);
  atomic_write_file(partial / "results.csv", write_results_csv(compact_rows(table.rows), table.param_columns));
  if (fs::exists(run_dir / "meta.json")) fs::copy_file(run_dir / "meta.json", partial / "meta.json");
  fs::rename(partial, member);

  added_member added;
  added.run_id = run.name;
  added.rows_kept = compact_rows(table.rows).size();
  added.rows_total = table.rows.size();
  added.representative = representative || !fs::exists(set_dir / "results.csv");
  if (added.representative) copy_representative(run_dir, set_dir);
  added.model = learn_reference_set(set_dir);
  return added;
}

}  // namespace hdb
