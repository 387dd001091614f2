// `hdbench compare`: options, loading the runs (a reference set stands for its members), finding
// the noise model, the model's decisions, one rendering.
#include "hdb/harness/verdict/compare.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/verdict/noise_model.hpp"
#include "hdb/harness/verdict/reference_set.hpp"
#include "hdb/harness/verdict/judging.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;

struct chosen_model {
  std::optional<noise_model> model;
  std::string source;
};

std::optional<node_kind> run_kind(const indexed_run& run) {
  if (!run.run.meta) return std::nullopt;
  try {
    return kind_of(*run.run.meta);
  } catch (const harness_error&) {
    return std::nullopt;
  }
}

// The model `options.noise_model` asks for, given the baselines' own set (if one was named).
chosen_model choose_model(const compare_options& options, const std::optional<reference_set>& named_set,
                          const indexed_run& current, std::vector<std::string>& notes) {
  if (options.noise_model == "none") return {};
  if (options.noise_model != "auto") {
    auto model = read_noise_model(options.noise_model);
    if (const auto kind = run_kind(current); !kind || *kind != model.kind) {
      notes.push_back("warning: the noise model " + options.noise_model + " is for " + describe(model.kind) +
                      "; the current run is " + (kind ? describe(*kind) : std::string("of unknown kind")));
    }
    return {std::move(model), options.noise_model};
  }
  if (named_set) return {named_set->model, named_set->dir.string()};
  if (!run_kind(current)) return {};  // a run without a probed node has no kind to look a set up by
  auto found = find_reference_set(*current.run.meta, options.reference);
  if (!found) return {};
  return {std::move(found->model), found->dir.string()};
}

// The report shows a figure that moved: a gating one (with --all, any) SLOWER or FASTER.
bool shows_a_move(const comparison_set& set, const compare_options& options) {
  return std::any_of(set.compared.begin(), set.compared.end(),
                     [&](const comparison& c) { return (options.all || c.gates()) && c.decision.result != verdict::same; });
}

std::vector<const nlohmann::json*> metas_of(const std::vector<indexed_run>& runs) {
  std::vector<const nlohmann::json*> metas;
  for (const auto& run : runs) metas.push_back(run.run.meta ? &*run.run.meta : nullptr);
  return metas;
}

}  // namespace

double parse_percent(std::string_view text) {
  const auto number = text.ends_with('%') ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || value < 0) {
    throw harness_error("bad percentage '" + std::string(text) + "' (expected e.g. 5%)");
  }
  return value / 100;
}

percent_flag parse_percent_flag(std::string_view text, std::string_view flag) {
  const bool sign = text.ends_with('%');
  const auto number = sign ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value) || value <= 0) {
    throw harness_error(std::string(flag) + " takes a positive percentage, 5 or 5% for five per cent (got '" +
                        std::string(text) + "')");
  }
  percent_flag result{value / 100, {}};
  if (!sign && value < 0.5) {
    const auto given = std::string(text);
    result.warning = std::string(flag) + " " + given + " is read as " + given + " %; write 5 or 5% for five per cent";
  }
  return result;
}

comparison_set compare_held_to_node_rule(const std::vector<indexed_run>& baselines, const indexed_run& current,
                                         const statistics_options& statistics, compared_metrics shown, const fs::path& schema_dir,
                                         const noise_model* model) {
  const nlohmann::json no_meta = nlohmann::json::object();
  const judging_declarations installed(schema_dir);
  const run_judging judging(current.run.meta ? *current.run.meta : no_meta, installed);
  return build_comparisons(baselines, current, statistics, shown, model, &judging);
}

compare_result compare_runs(const std::vector<fs::path>& baselines, const fs::path& current,
                            const compare_options& options) {
  compare_result result;
  try {
    if (baselines.empty()) throw harness_error("compare needs BASELINE [BASELINE...] CURRENT");
    std::vector<indexed_run> base;
    std::optional<reference_set> named_set;
    for (const auto& path : baselines) {
      if (fs::is_directory(path) && is_reference_set(path)) {
        auto set = load_reference_set(path);
        for (const auto& run : set.runs) base.push_back(index_run(run));
        if (!named_set) named_set = std::move(set);
      } else {
        base.push_back(index_run(load_run(path)));
      }
    }
    const indexed_run cur = index_run(load_run(current));
    std::vector<std::string> notes;
    const auto chosen = choose_model(options, named_set, cur, notes);
    // Against a reference set, the tolerances check holds the node to (applied only there).
    auto set = compare_held_to_node_rule(base, cur, options.statistics, options.all ? compared_metrics::all : compared_metrics::headlines,
                                         options.schema_dir, chosen.model ? &*chosen.model : nullptr);
    if (chosen.model) {
      set.noise_model_source = chosen.source;
      notes.insert(notes.begin(), "noise model: " + chosen.source + " (" + describe(chosen.model->kind) + ", " +
                                      std::to_string(chosen.model->members.size()) + " runs)");
    }
    set.notes.insert(set.notes.begin(), notes.begin(), notes.end());
    if (shows_a_move(set, options)) set.what_changed = what_changed(metas_of(base), cur.run.meta ? &*cur.run.meta : nullptr);
    result.output = render_comparison(base, cur, set, options);
    result.exit_code = exit_code_of(set);
  } catch (const harness_error& e) {
    result.exit_code = 2;
    result.error = e.what();
  }
  return result;
}

}  // namespace hdb
