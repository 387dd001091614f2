#include "hdb/harness/results.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include "hdb/harness/csv.hpp"
#include "hdb/harness/error.hpp"

namespace hdb {
namespace {

constexpr std::array<std::string_view, 2> better_names = {"higher", "lower"};
constexpr std::array<std::string_view, 8> statistic_names = {"sample", "median", "mean", "min",
                                                             "max",    "stddev", "cv",   "fit"};
constexpr std::array<std::string_view, 3> status_names = {"ok", "skipped", "failed"};

template <typename Enum, std::size_t N>
Enum parse_enum(std::string_view text, const std::array<std::string_view, N>& names, std::string_view what) {
  const auto it = std::find(names.begin(), names.end(), text);
  if (it == names.end()) throw harness_error("unknown " + std::string(what) + " '" + std::string(text) + "'");
  return static_cast<Enum>(it - names.begin());
}

// Column order of schema 2; the parameter columns sit between `case` and `extra`.
std::vector<std::string_view> columns() {
  std::vector<std::string_view> names = {"schema_version", "run_id", "family", "case"};
  names.insert(names.end(), param_keys.begin(), param_keys.end());
  names.insert(names.end(), {"extra", "metric", "unit", "better", "headline", "statistic", "sample_index",
                             "value", "status", "reason", "benchmark"});
  return names;
}

std::vector<std::string> to_fields(const result_row& row) {
  std::vector<std::string> fields = {std::to_string(results_schema_version), row.run_id, row.family, row.case_name};
  fields.insert(fields.end(), row.params.known.begin(), row.params.known.end());
  fields.push_back(row.params.extra);
  fields.push_back(row.metric);
  fields.push_back(row.unit);
  fields.emplace_back(row.better_direction ? to_string(*row.better_direction) : "");
  fields.emplace_back(row.headline ? "yes" : "no");
  fields.emplace_back(row.stat ? to_string(*row.stat) : "");
  fields.push_back(row.sample_index ? std::to_string(*row.sample_index) : "");
  fields.push_back(row.value ? format_value(*row.value) : "");
  fields.emplace_back(to_string(row.status));
  fields.push_back(row.reason);
  fields.push_back(row.benchmark);
  return fields;
}

template <typename Number>
Number parse_number(const std::string& text, std::string_view column) {
  Number value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw harness_error("bad " + std::string(column) + " '" + text + "'");
  }
  return value;
}

// Maps a header to column positions, so readers survive added columns.
class column_index {
 public:
  explicit column_index(const std::vector<std::string>& header) {
    for (std::size_t i = 0; i < header.size(); ++i) position_[header[i]] = i;
    for (const auto name : columns()) {
      if (!position_.contains(std::string(name))) {
        throw harness_error("missing column '" + std::string(name) + "'");
      }
    }
  }
  [[nodiscard]] const std::string& at(const std::vector<std::string>& record, std::string_view name) const {
    return record[position_.at(std::string(name))];
  }

 private:
  std::map<std::string, std::size_t> position_;
};

std::string schema_mismatch(const std::string& version) {
  std::string why = "schema_version " + version + " (this hdbench reads version " + std::to_string(results_schema_version) + ")";
  // Schema 1 lacked the device columns; the raw JSON it was built from is still readable.
  if (version == "1") why += "; rebuild it from the run's raw/ with `hdbench collect RUN_DIR`";
  return why;
}

result_row from_fields(const std::vector<std::string>& record, const column_index& col) {
  const auto& version = col.at(record, "schema_version");
  if (version != std::to_string(results_schema_version)) throw harness_error(schema_mismatch(version));
  result_row row;
  row.run_id = col.at(record, "run_id");
  row.family = col.at(record, "family");
  row.case_name = col.at(record, "case");
  for (const auto key : param_keys) row.params.set(key, col.at(record, key));
  row.params.extra = col.at(record, "extra");
  row.metric = col.at(record, "metric");
  row.unit = col.at(record, "unit");
  if (const auto& b = col.at(record, "better"); !b.empty()) row.better_direction = parse_better(b);
  row.headline = col.at(record, "headline") == "yes";
  if (const auto& s = col.at(record, "statistic"); !s.empty()) row.stat = parse_statistic(s);
  if (const auto& i = col.at(record, "sample_index"); !i.empty()) row.sample_index = parse_number<int>(i, "sample_index");
  if (const auto& v = col.at(record, "value"); !v.empty()) row.value = parse_number<double>(v, "value");
  row.status = parse_row_status(col.at(record, "status"));
  row.reason = col.at(record, "reason");
  row.benchmark = col.at(record, "benchmark");
  return row;
}

}  // namespace

std::string_view to_string(better value) { return better_names.at(static_cast<std::size_t>(value)); }
std::string_view to_string(statistic value) { return statistic_names.at(static_cast<std::size_t>(value)); }
std::string_view to_string(row_status value) { return status_names.at(static_cast<std::size_t>(value)); }
better parse_better(std::string_view text) { return parse_enum<better>(text, better_names, "better"); }
statistic parse_statistic(std::string_view text) { return parse_enum<statistic>(text, statistic_names, "statistic"); }
row_status parse_row_status(std::string_view text) { return parse_enum<row_status>(text, status_names, "status"); }

const std::string& case_params::get(std::string_view key) const {
  static const std::string none;
  const auto it = std::find(param_keys.begin(), param_keys.end(), key);
  return it == param_keys.end() ? none : known[static_cast<std::size_t>(it - param_keys.begin())];
}

void case_params::set(std::string_view key, std::string value) {
  const auto it = std::find(param_keys.begin(), param_keys.end(), key);
  if (it == param_keys.end()) throw harness_error("not a parameter column: " + std::string(key));
  known[static_cast<std::size_t>(it - param_keys.begin())] = std::move(value);
}

std::string case_params::describe() const {
  std::string text;
  const auto append = [&](std::string_view item) {
    if (!text.empty()) text += ' ';
    text += item;
  };
  for (std::size_t i = 0; i < param_keys.size(); ++i) {
    if (!known[i].empty()) append(std::string(param_keys[i]) + "=" + known[i]);
  }
  if (!extra.empty()) append(extra);
  return text;
}

std::string format_value(double value) {
  std::array<char, 32> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return ec == std::errc() ? std::string(buffer.data(), end) : std::string("nan");
}

std::string write_results_csv(const std::vector<result_row>& rows) {
  const auto write_record = [](std::string& out, const auto& fields) {
    bool first = true;
    for (const auto& field : fields) {
      if (!first) out += ',';
      out += csv_field(field);
      first = false;
    }
    out += '\n';
  };
  std::string out;
  write_record(out, columns());
  for (const auto& row : rows) write_record(out, to_fields(row));
  return out;
}

std::vector<result_row> read_results_csv(std::string_view text) {
  const auto records = parse_csv(text);
  if (records.empty()) throw harness_error("empty file (no header)");
  // An older schema is named before its missing columns are: the user needs the version, not a column.
  const auto& header = records.front();
  const auto version_column = std::find(header.begin(), header.end(), "schema_version");
  if (records.size() > 1 && version_column != header.end()) {
    const auto& version = records[1][static_cast<std::size_t>(version_column - header.begin())];
    if (version != std::to_string(results_schema_version)) throw harness_error(schema_mismatch(version));
  }
  const column_index col(header);
  std::vector<result_row> rows;
  rows.reserve(records.size() - 1);
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() != records.front().size()) {
      throw harness_error("line " + std::to_string(i + 1) + " has " + std::to_string(records[i].size()) +
                          " fields, the header has " + std::to_string(records.front().size()));
    }
    try {
      rows.push_back(from_fields(records[i], col));
    } catch (const harness_error& e) {
      throw harness_error("line " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return rows;
}

}  // namespace hdb
