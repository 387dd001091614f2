#include "hdb/harness/data/run_index.hpp"

#include <algorithm>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/util/lists.hpp"

namespace hdb {

namespace fs = std::filesystem;

namespace {

// A case writes its metric's rows together (its samples, then the median): a row with the same
// case and metric as the one before it adds to the same entry, found without a map walk.
bool same_metric(const result_row& a, const result_row& b) {
  return a.metric == b.metric && a.case_name == b.case_name && a.family == b.family && a.device == b.device &&
         a.gpus == b.gpus && a.params == b.params;
}

}  // namespace

side_index index_rows(const std::vector<result_row>& rows) {
  side_index index;
  const result_row* previous = nullptr;
  metric_data* previous_data = nullptr;
  for (const auto& row : rows) {
    if (row.device && !row.gpu_uuid.empty()) index.gpu_of_device[*row.device] = split_list(row.gpu_uuid).front();
    if (row.status != row_status::ok) {
      index.not_ok[case_key_of(row)] = std::string(to_string(row.status)) + ": " + row.reason;
      if (row.status == row_status::failed) index.failed.insert(case_key_of(row));
      continue;
    }
    if (row.metric.empty() || !row.value || !row.stat) continue;
    if (!previous || !same_metric(*previous, row)) previous_data = &index.metrics[key_of(row)];
    previous = &row;
    auto& data = *previous_data;
    data.headline = data.headline || row.headline;
    if (row.better_direction) data.direction = *row.better_direction;
    if (row.stat == statistic::sample) {
      data.samples.push_back(*row.value);
    } else if (row.stat == statistic::median || row.stat == statistic::fit) {
      data.central = *row.value;
      data.unit = row.unit;
    }
  }
  return index;
}

indexed_run index_run(loaded_run run) {
  auto index = index_rows(run.rows);
  return {std::move(run), std::move(index)};
}

attempt_split split_attempts(std::vector<result_row> rows) {
  attempt_split split;
  // Most runs measured nothing again: every row is its case's only attempt.
  if (std::all_of(rows.begin(), rows.end(), [&](const result_row& row) { return row.attempt == rows.front().attempt; })) {
    split.last = std::move(rows);
    return split;
  }
  std::map<metric_key, int> last_attempt;
  for (const auto& row : rows) {
    if (row.case_name.empty()) continue;
    auto& attempt = last_attempt[case_key_of(row)];
    attempt = std::max(attempt, row.attempt);
  }
  for (auto& row : rows) {
    const bool last = row.case_name.empty() || row.attempt == last_attempt[case_key_of(row)];
    (last ? split.last : split.superseded).push_back(std::move(row));
  }
  return split;
}

loaded_run load_run(const fs::path& path) {
  loaded_run run;
  run.csv_path = fs::is_directory(path) ? path / "results.csv" : path;
  if (!fs::exists(run.csv_path)) throw harness_error(run.csv_path.string() + ": no such file");
  try {
    auto split = split_attempts(read_results_csv(read_text_file(run.csv_path)).rows);
    run.rows = std::move(split.last);
    run.superseded = std::move(split.superseded);
  } catch (const harness_error& e) {
    throw harness_error(run.csv_path.string() + ": " + e.what());
  }
  const bool any_ok = std::any_of(run.rows.begin(), run.rows.end(),
                                  [](const result_row& r) { return r.status == row_status::ok && r.value; });
  if (!any_ok) throw harness_error(run.csv_path.string() + ": empty run (no ok results)");
  run.name = run.rows.front().run_id;
  run.meta = read_meta(run.csv_path.parent_path() / "meta.json");
  return run;
}

}  // namespace hdb
