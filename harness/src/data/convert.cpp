#include "hdb/harness/data/convert.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "hdb/harness/data/collect.hpp"
#include "hdb/harness/data/csv.hpp"
#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/manifest.hpp"
#include "hdb/harness/data/meta.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/util/lists.hpp"
#include "hdb/util/stats.hpp"

namespace hdb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Schema 2's parameter columns, in its order (its `extra` held every other parameter).
const std::vector<std::string> schema2_params = {"direction", "host_kind", "api", "size_bytes", "streams", "gpus",
                                                 "src",       "dst",       "dtype"};

struct traffic_rule {
  std::string case_name;  // "" = any case
  std::vector<std::pair<std::string, std::vector<std::string>>> where;
  std::map<std::string, std::string> metrics;  // metric -> class
};

struct family_renames {
  std::map<std::string, std::string> metrics;
  std::map<std::string, std::string> parameters;
  std::map<std::string, std::map<std::string, std::optional<std::string>>> values;  // param -> old -> new (nullopt: unset)
  std::vector<traffic_rule> traffic;
};

std::map<std::string, std::string> string_map(const json& object, const std::string& where) {
  std::map<std::string, std::string> out;
  if (object.is_null()) return out;
  if (!object.is_object()) throw harness_error("renames: " + where + " is not an object");
  for (const auto& [from, to] : object.items()) {
    if (!to.is_string()) throw harness_error("renames: " + where + "." + from + " is not a string");
    out[from] = to.get<std::string>();
  }
  return out;
}

std::vector<std::string> one_or_many(const json& value, const std::string& where) {
  if (value.is_string()) return {value.get<std::string>()};
  if (value.is_number_integer()) return {std::to_string(value.get<long long>())};
  std::vector<std::string> out;
  if (!value.is_array()) throw harness_error("renames: " + where + " is not a value or a list");
  for (const auto& item : value) out.push_back(one_or_many(item, where).front());
  return out;
}

std::map<std::string, family_renames> parse_renames(std::string_view text) {
  const auto document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) throw harness_error("renames: not a JSON object");
  std::map<std::string, family_renames> out;
  for (const auto& [family, j] : document.items()) {
    if (!j.is_object()) throw harness_error("renames: " + family + " is not an object");
    auto& r = out[family];
    r.metrics = string_map(j.value("metrics", json()), family + ".metrics");
    r.parameters = string_map(j.value("parameters", json()), family + ".parameters");
    const auto values = j.value("values", json::object());
    for (const auto& [param, mapping] : values.items()) {
      for (const auto& [from, to] : mapping.items()) {
        if (!to.is_null() && !to.is_string()) throw harness_error("renames: " + family + ".values." + param + "." + from);
        r.values[param][from] = to.is_null() ? std::nullopt : std::optional<std::string>(to.get<std::string>());
      }
    }
    const auto rules = j.value("traffic", json::array());
    for (const auto& rule : rules) {
      traffic_rule t;
      t.case_name = rule.value("case", std::string());
      const auto where = rule.value("where", json::object());
      for (const auto& [param, accepted] : where.items()) {
        t.where.emplace_back(param, one_or_many(accepted, family + ".traffic.where." + param));
      }
      t.metrics = string_map(rule.value("metrics", json()), family + ".traffic.metrics");
      r.traffic.push_back(std::move(t));
    }
  }
  return out;
}

void schema2_version(const std::string& version) {
  if (version != "2") {
    throw harness_error("schema_version " + version + (version == "3" ? " (already converted)" : "") +
                        "; `hdbench convert` reads schema 2");
  }
}

std::string renamed(const std::map<std::string, std::string>& names, const std::string& name) {
  const auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

std::string traffic_of(const family_renames& renames, const result_row& row) {
  for (const auto& rule : renames.traffic) {
    if (!rule.case_name.empty() && rule.case_name != row.case_name) continue;
    const auto cls = rule.metrics.find(row.metric);
    if (cls == rule.metrics.end()) continue;
    const bool matches = std::all_of(rule.where.begin(), rule.where.end(), [&](const auto& condition) {
      const std::string value = condition.first == "gpus" ? (row.gpus ? std::to_string(*row.gpus) : "") : row.param(condition.first);
      return std::find(condition.second.begin(), condition.second.end(), value) != condition.second.end();
    });
    if (matches) return cls->second;
  }
  return "";
}

// A metric of one case as converted: its samples, or the old statistics when it has none.
struct metric_group {
  result_row base;
  std::vector<result_row> samples;
  std::map<statistic, result_row> old_statistics;  // median, mean, stddev
};

using case_identity = std::tuple<std::string, std::string, std::optional<int>, std::optional<int>, std::string,
                                 std::map<std::string, std::string>, std::string>;  // family, case, device, gpus, uuid, params, metric

case_identity identity_of(const result_row& row) {
  return {row.family, row.case_name, row.device, row.gpus, row.gpu_uuid, row.params, row.metric};
}

class converter {
 public:
  converter(const std::vector<family_declaration>& declarations, std::map<std::string, family_renames> renames)
      : declarations_(declarations), renames_(std::move(renames)) {}

  void add(const std::vector<std::string>& record, const std::map<std::string, std::size_t>& col) {
    const auto at = [&](const std::string& name) -> const std::string& { return record[col.at(name)]; };
    schema2_version(at("schema_version"));
    ++result_.rows_read;
    result_row row;
    row.run_id = at("run_id");
    row.family = at("family");
    row.case_name = at("case");
    row.status = parse_row_status(at("status"));
    row.reason = at("reason");
    const auto* decl = declaration(row.family);
    if (row.case_name.empty()) return entry_of_status(std::move(row));  // a failed family
    const auto* kind = decl->case_kind(row.case_name);
    if (kind == nullptr) throw harness_error("case kind '" + row.case_name + "' is not declared by " + row.family);
    const auto& renames = renames_[row.family];
    set_devices(row, at("device"));
    row.gpu_uuid = at("gpu_uuid");
    std::vector<std::pair<std::string, std::string>> params;
    for (const auto& name : schema2_params) {
      if (!at(name).empty()) params.emplace_back(name, at(name));
    }
    for (const auto& item : split_nonempty(at("extra"), ';')) {
      const auto eq = item.find('=');
      if (eq == std::string::npos) throw harness_error("extra item '" + item + "' is not k=v");
      params.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    for (auto [name, value] : params) {
      name = renamed(renames.parameters, name);
      if (const auto values = renames.values.find(name); values != renames.values.end()) {
        if (const auto v = values->second.find(value); v != values->second.end()) {
          if (!v->second) continue;
          value = *v->second;
        }
      }
      if (std::find(kind->parameters.begin(), kind->parameters.end(), name) == kind->parameters.end()) {
        // The old `gpus` column is the core column now; only a different count would be lost.
        if (name != "gpus" || row.gpus != std::stoi(value)) ++result_.undeclared_parameter_values[{row.family, row.case_name, name}];
        continue;
      }
      check_value(*decl->parameter(name), value, row);
      row.params[name] = value;
    }
    const auto old_metric = at("metric");
    if (old_metric.empty()) return entry_of_status(std::move(row));  // a skipped or failed case
    const auto stat = parse_statistic(at("statistic"));
    if (stat == statistic::fit) {
      ++result_.derived_rows_dropped;  // recomputed from the converted medians
      return;
    }
    row.metric = renamed(renames.metrics, old_metric);
    if (std::find(kind->metrics.begin(), kind->metrics.end(), row.metric) == kind->metrics.end()) {
      ++result_.undeclared_metric_rows[{row.family, row.case_name, old_metric}];
      return;
    }
    const auto& metric = *decl->metric(row.metric);
    row.unit = metric.unit;
    row.better_direction = metric.direction;
    row.headline = at("headline") == "yes" &&
                   std::find(kind->headlines.begin(), kind->headlines.end(), row.metric) != kind->headlines.end();
    row.traffic = traffic_of(renames, row);
    if (!at("value").empty()) row.value = std::stod(at("value"));
    auto& group = group_of(row);
    if (stat == statistic::sample) {
      row.stat = stat;
      row.sample_index = std::stoi(at("sample_index"));
      group.samples.push_back(std::move(row));
    } else {
      if (stat == statistic::median || stat == statistic::mean || stat == statistic::stddev) {
        row.stat = stat;
        group.old_statistics[stat] = std::move(row);
      }
      ++result_.derived_rows_dropped;  // counted here; kept back below when the metric has no samples
    }
  }

  conversion finish() {
    std::vector<const family_declaration*> present;
    for (const auto& decl : declarations_) {
      if (families_.contains(decl.family)) present.push_back(&decl);
    }
    result_.param_columns = parameter_columns(present);
    std::set<std::tuple<case_identity, std::optional<statistic>, std::optional<int>>> seen;
    for (const auto* decl : present) {
      const auto begin = result_.rows.size();
      for (const auto& entry : entries_) {
        if (entry.family != decl->family) continue;
        if (!entry.group) {
          result_.rows.push_back(entry.status_row);
          continue;
        }
        auto& group = groups_.at(*entry.group);
        if (!group.samples.empty()) {
          std::vector<double> values;
          for (auto& sample : group.samples) {
            if (sample.value) values.push_back(*sample.value);
            result_.rows.push_back(sample);
          }
          if (!values.empty()) {
            auto median_row = group.base;
            median_row.stat = statistic::median;
            median_row.value = median(values);
            result_.rows.push_back(std::move(median_row));
          }
        } else {
          for (auto& [stat, row] : group.old_statistics) {
            result_.rows.push_back(row);
            --result_.derived_rows_dropped;
          }
        }
      }
      if (decl->fit) {
        const auto fits = alpha_beta_rows(std::span(result_.rows).subspan(begin), *decl->fit);
        result_.rows.insert(result_.rows.end(), fits.begin(), fits.end());
      }
    }
    for (const auto& row : result_.rows) {
      if (row.metric.empty()) continue;
      if (!seen.emplace(identity_of(row), row.stat, row.sample_index).second) {
        throw harness_error(row.family + " " + row.case_name + " " + describe_case(row) + " " + row.metric +
                            ": two rows would be the same after the conversion (a dropped parameter told them apart)");
      }
    }
    return std::move(result_);
  }

 private:
  struct entry {
    std::string family;
    std::optional<case_identity> group;  // a metric group, else a status row
    result_row status_row;
  };

  const family_declaration* declaration(const std::string& family) {
    const auto it = std::find_if(declarations_.begin(), declarations_.end(),
                                 [&](const family_declaration& d) { return d.family == family; });
    if (it == declarations_.end()) throw harness_error("family '" + family + "' has no declaration");
    families_.insert(family);
    return &*it;
  }

  static void set_devices(result_row& row, const std::string& text) {
    if (text.empty()) return;
    std::vector<int> devices;
    for (const auto& item : split_list(text)) {
      if (!all_digits(item)) throw harness_error("device '" + text + "' is not a list of CUDA indices");
      devices.push_back(std::stoi(item));
    }
    row.device = *std::min_element(devices.begin(), devices.end());
    row.gpus = static_cast<int>(devices.size());
  }

  static void check_value(const parameter_decl& p, const std::string& value, const result_row& row) {
    const bool ok = p.type == param_type::integer ? all_digits(value)
                                                  : !all_digits(value) && (p.values.empty() ||
                                                                           std::find(p.values.begin(), p.values.end(), value) != p.values.end());
    if (!ok) {
      throw harness_error(row.family + " " + row.case_name + ": parameter " + p.name + "='" + value +
                          "' is not what its declaration allows (add a value rename to renames-schema3.json)");
    }
  }

  void entry_of_status(result_row row) { entries_.push_back({row.family, std::nullopt, std::move(row)}); }

  metric_group& group_of(const result_row& row) {
    const auto id = identity_of(row);
    const auto [it, inserted] = groups_.try_emplace(id);
    if (inserted) {
      it->second.base = row;
      it->second.base.value.reset();
      entries_.push_back({row.family, id, {}});
    }
    return it->second;
  }

  const std::vector<family_declaration>& declarations_;
  std::map<std::string, family_renames> renames_;
  std::set<std::string> families_;
  std::vector<entry> entries_;
  std::map<case_identity, metric_group> groups_;
  conversion result_;
};

}  // namespace

conversion convert_schema2(std::string_view csv_text, const std::vector<family_declaration>& declarations,
                           std::string_view renames_json) {
  const auto records = parse_csv(csv_text);
  if (records.empty()) throw harness_error("empty file (no header)");
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < records.front().size(); ++i) col[records.front()[i]] = i;
  // The version is named before any missing column: a schema-3 file lacks `extra` for a reason.
  if (col.contains("schema_version") && records.size() > 1) schema2_version(records[1][col.at("schema_version")]);
  for (const auto& name : {"schema_version", "run_id", "family", "case", "device", "gpu_uuid", "extra", "metric", "headline",
                           "statistic", "sample_index", "value", "status", "reason"}) {
    if (!col.contains(name)) throw harness_error(std::string("missing column '") + name + "' (not a schema-2 results.csv)");
  }
  for (const auto& name : schema2_params) {
    if (!col.contains(name)) throw harness_error("missing column '" + name + "' (not a schema-2 results.csv)");
  }
  converter c(declarations, parse_renames(renames_json));
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() != records.front().size()) {
      throw harness_error("line " + std::to_string(i + 1) + " has " + std::to_string(records[i].size()) + " fields, the header has " +
                          std::to_string(records.front().size()));
    }
    try {
      c.add(records[i], col);
    } catch (const harness_error& e) {
      throw harness_error("line " + std::to_string(i + 1) + ": " + e.what());
    } catch (const std::logic_error& e) {  // std::stoi / std::stod on a malformed number
      throw harness_error("line " + std::to_string(i + 1) + ": malformed number (" + e.what() + ")");
    }
  }
  return c.finish();
}

std::string describe_conversion(const conversion& result) {
  std::size_t undeclared = 0;
  for (const auto& [key, count] : result.undeclared_metric_rows) undeclared += count;
  std::string out = "read " + std::to_string(result.rows_read) + " schema-2 rows, wrote " + std::to_string(result.rows.size()) +
                    " schema-3 rows\n";
  out += "dropped " + std::to_string(result.derived_rows_dropped) +
         " derived-statistic rows (mean/min/max/stddev/cv, medians and fits recomputed)\n";
  out += "dropped " + std::to_string(undeclared) + " rows of metrics their case kind does not declare";
  out += result.rows_read == 0 ? "\n"
                               : " (" + format_fixed(100.0 * static_cast<double>(undeclared) / static_cast<double>(result.rows_read), 1) +
                                     " % of the rows read, every statistic counted):\n";
  for (const auto& [key, count] : result.undeclared_metric_rows) {
    const auto& [family, case_name, metric] = key;
    out += "  " + family + " " + case_name + " " + metric + ": " + std::to_string(count) + "\n";
  }
  for (const auto& [key, count] : result.undeclared_parameter_values) {
    const auto& [family, case_name, parameter] = key;
    out += "dropped parameter " + family + " " + case_name + " " + parameter + " (not declared for the case kind) on " +
           std::to_string(count) + " rows\n";
  }
  return out;
}

conversion convert_run(const fs::path& run_dir, const fs::path& bin_dir) {
  const auto csv_path = run_dir / "results.csv";
  const auto sources = installed_sources(bin_dir);
  const auto declarations = installed_declarations(sources.manifest, sources.schema_dir);
  conversion result;
  try {
    result = convert_schema2(read_text_file(csv_path), declarations, read_text_file(bin_dir / "renames-schema3.json"));
  } catch (const harness_error& e) {
    throw harness_error(csv_path.string() + ": " + e.what());
  }
  atomic_write_file(csv_path, write_results_csv(result.rows, result.param_columns));
  if (auto meta = read_meta(run_dir / "meta.json")) {
    const auto manifest = load_manifest(sources.manifest);
    for (const auto& decl : declarations) {
      if (!(*meta)["families"].contains(decl.family)) continue;
      auto& entry = (*meta)["families"][decl.family];
      entry["schema"] = json(decl.source);
      for (const auto& family : manifest.families) {
        if (family.name == decl.family) entry["plots"] = family.plots;
      }
    }
    write_meta(run_dir / "meta.json", *meta);
  }
  return result;
}

}  // namespace hdb
