#pragma once
// Rows as the harness reads them from a results.csv (schema 3), for tests of a family's report
// rules. The tests name a row's parameters as its case label does, `device` being the label's
// CUDA index list ("0" or "0,1"); this file alone knows how the row model stores them (`device`
// the first index, `gpus` their count, `gpu_uuid` their UUIDs, the rest in `params`).
#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/data/results.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hdb_test {

using label_params = std::vector<std::pair<std::string, std::string>>;

// The UUID the tests give CUDA device `index`, in rows and in meta.json alike.
inline std::string gpu_uuid(int index) { return "GPU-standin-" + std::to_string(index); }

// An ok median row of `family`/`case_name` with the parameters of its label. Two keys are not
// parameters: `traffic`, the class the case picked for this metric, and `gpus`, which overrides
// the count of the device list.
inline hdb::result_row median_row(std::string family, std::string case_name, const label_params& params, std::string metric,
                                  std::string unit, double value) {
  hdb::result_row row;
  row.family = std::move(family);
  row.case_name = std::move(case_name);
  for (const auto& [key, text] : params) {
    if (key == "device") {
      std::vector<int> devices;
      std::size_t start = 0;
      while (start <= text.size() && !text.empty()) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        devices.push_back(std::stoi(text.substr(start, end - start)));
        start = end + 1;
      }
      if (devices.empty()) continue;
      row.device = *std::min_element(devices.begin(), devices.end());
      if (!row.gpus) row.gpus = static_cast<int>(devices.size());
      row.gpu_uuid.clear();
      for (int d : devices) row.gpu_uuid += (row.gpu_uuid.empty() ? "" : ",") + gpu_uuid(d);
    } else if (key == "gpus") {
      row.gpus = std::stoi(text);
    } else if (key == "traffic") {
      row.traffic = text;  // the class the case picked for this row's metric (label traffic=metric:class)
    } else if (!text.empty()) {
      row.params[key] = text;
    }
  }
  row.metric = std::move(metric);
  row.unit = std::move(unit);
  row.stat = hdb::statistic::median;
  row.value = value;
  return row;
}

// The anomaly lines `rules` finds in `rows`.
inline std::vector<std::string> anomalies(const hdb::family_rules& rules, const std::vector<hdb::result_row>& rows,
                                          const nlohmann::json& meta = nlohmann::json::object()) {
  std::vector<std::string> out;
  rules.anomalies(rows, meta, out);
  return out;
}

// How many of `lines` contain `needle`.
inline std::size_t count_containing(const std::vector<std::string>& lines, std::string_view needle) {
  return static_cast<std::size_t>(std::count_if(
      lines.begin(), lines.end(), [&](const std::string& line) { return line.find(needle) != std::string::npos; }));
}

}  // namespace hdb_test
