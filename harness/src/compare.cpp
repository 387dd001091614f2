// `hdbench compare`: options, loading the runs, the model's decisions, one rendering.
#include "hdb/harness/compare.hpp"

#include <charconv>

#include "hdb/harness/error.hpp"

namespace hdb {

double parse_percent(std::string_view text) {
  const auto number = text.ends_with('%') ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || value < 0) {
    throw harness_error("bad percentage '" + std::string(text) + "' (expected e.g. 5%)");
  }
  return value / 100;
}

compare_format parse_compare_format(std::string_view text) {
  if (text == "text") return compare_format::text;
  if (text == "markdown") return compare_format::markdown;
  if (text == "junit") return compare_format::junit;
  throw harness_error("unknown format '" + std::string(text) + "' (text, markdown or junit)");
}

compare_result compare_runs(const std::vector<std::filesystem::path>& baselines, const std::filesystem::path& current,
                            const compare_options& options) {
  compare_result result;
  try {
    if (baselines.empty()) throw harness_error("compare needs BASELINE [BASELINE...] CURRENT");
    std::vector<indexed_run> base;
    for (const auto& path : baselines) base.push_back(index_run(load_run(path)));
    const indexed_run cur = index_run(load_run(current));
    const auto set = build_comparisons(base, cur, options);
    result.output = render_comparison(base, cur, set, options);
    result.exit_code = set.slower > 0 ? 1 : 0;
  } catch (const harness_error& e) {
    result.exit_code = 2;
    result.error = e.what();
  }
  return result;
}

}  // namespace hdb
