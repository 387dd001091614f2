#include "hdb/harness/data/results.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "hdb/harness/data/csv.hpp"
#include "hdb/harness/common/error.hpp"

namespace hdb {
namespace {

constexpr std::array<std::string_view, 3> better_names = {"higher", "lower", "neutral"};
constexpr std::array<std::string_view, 8> statistic_names = {"sample", "median", "mean", "min",
                                                             "max",    "stddev", "cv",   "fit"};
constexpr std::array<std::string_view, 3> status_names = {"ok", "skipped", "failed"};
constexpr std::array<std::string_view, 3> column_type_names = {"int", "float", "text"};
// The core columns to_fields writes as numbers; the others are text (not_applicable when unset).
constexpr std::array<std::pair<std::string_view, column_type>, 7> number_columns = {{{"schema_version", column_type::integer},
                                                                                    {"device", column_type::integer},
                                                                                    {"gpus", column_type::integer},
                                                                                    {"sample_index", column_type::integer},
                                                                                    {"value", column_type::number},
                                                                                    {"repetitions", column_type::integer},
                                                                                    {"attempt", column_type::integer}}};
// Core columns added within schema_version 3: a file written before them reads them as unset.
constexpr std::array<std::string_view, 3> later_columns = {"repetitions", "stopped_by", "attempt"};

template <typename Enum, std::size_t N>
Enum parse_enum(std::string_view text, const std::array<std::string_view, N>& names, std::string_view what) {
  const auto it = std::find(names.begin(), names.end(), text);
  if (it == names.end()) throw harness_error("unknown " + std::string(what) + " '" + std::string(text) + "'");
  return static_cast<Enum>(it - names.begin());
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

std::string optional_int(const std::optional<int>& value) { return value ? std::to_string(*value) : ""; }

// A text field that does not apply is written as this token, never left empty: pandas reads an
// empty field as NaN, so a stretch of rows without a value (one family's rows, one chunk of its
// low-memory reader) would load as float and the rest as text — the mixed-types warning, and
// dtypes that depend on the node. Number columns stay empty (NaN in a float column is exact).
constexpr std::string_view not_applicable = "-";

std::string text_field(const std::string& text) { return text.empty() ? std::string(not_applicable) : text; }
const std::string& read_text(const std::string& field) {
  static const std::string none;
  return field == not_applicable ? none : field;
}

// Integer parameters hold digits only and text parameters never do (the declarations guarantee
// both), so a column is numeric exactly when every value it holds in these rows is digits.
bool numeric_column(const std::vector<result_row>& rows, const std::string& column) {
  return std::all_of(rows.begin(), rows.end(), [&](const result_row& row) {
    const auto& value = row.param(column);
    return value.find_first_not_of("-0123456789") == std::string::npos && value != not_applicable;
  });
}

std::vector<std::string> to_fields(const result_row& row, const std::vector<std::string>& param_columns,
                                   const std::vector<bool>& numeric) {
  std::vector<std::string> fields = {std::to_string(results_schema_version), row.run_id, row.family, text_field(row.case_name),
                                     optional_int(row.device), optional_int(row.gpus), text_field(row.gpu_uuid)};
  for (std::size_t i = 0; i < param_columns.size(); ++i) {
    const auto& value = row.param(param_columns[i]);
    fields.push_back(numeric[i] ? value : text_field(value));
  }
  fields.push_back(text_field(row.metric));
  fields.push_back(text_field(row.unit));
  fields.push_back(text_field(row.better_direction ? std::string(to_string(*row.better_direction)) : ""));
  fields.emplace_back(row.headline ? "yes" : "no");
  fields.push_back(text_field(row.traffic));
  fields.push_back(text_field(row.stat ? std::string(to_string(*row.stat)) : ""));
  fields.push_back(optional_int(row.sample_index));
  fields.push_back(row.value ? format_value(*row.value) : "");
  fields.emplace_back(to_string(row.status));
  fields.push_back(text_field(row.reason));
  fields.push_back(optional_int(row.repetitions));
  fields.push_back(text_field(row.stopped_by));
  fields.push_back(std::to_string(row.attempt));
  return fields;
}

// Where each core column sits in a header; every other column is a parameter.
class column_index {
 public:
  explicit column_index(const std::vector<std::string>& header) {
    for (const auto* list : {&leading_columns(), &trailing_columns()}) {
      for (const auto& name : *list) {
        const auto it = std::find(header.begin(), header.end(), name);
        if (it == header.end()) {
          if (std::find(later_columns.begin(), later_columns.end(), name) != later_columns.end()) continue;
          throw harness_error("missing column '" + name + "'");
        }
        core_[name] = static_cast<std::size_t>(it - header.begin());
      }
    }
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (!core_.contains(header[i])) params_.emplace_back(header[i], i);
    }
  }
  // A later column the file does not have reads as empty.
  [[nodiscard]] const std::string& at(const std::vector<std::string>& record, const std::string& name) const {
    static const std::string absent;
    const auto it = core_.find(name);
    return it == core_.end() ? absent : record[it->second];
  }
  [[nodiscard]] const std::vector<std::pair<std::string, std::size_t>>& params() const { return params_; }

 private:
  std::map<std::string, std::size_t> core_;
  std::vector<std::pair<std::string, std::size_t>> params_;
};

std::string schema_mismatch(const std::string& version) {
  std::string why = "schema_version " + version + ": a schema " + version + " results.csv; this hdbench reads schema " +
                    std::to_string(results_schema_version);
  if (version == "1") why += "; rebuild it from the run's raw/ with `hdbench collect RUN_DIR`";
  return why;
}

result_row from_fields(const std::vector<std::string>& record, const column_index& col) {
  const auto& version = col.at(record, "schema_version");
  if (version != std::to_string(results_schema_version)) throw harness_error(schema_mismatch(version));
  result_row row;
  row.run_id = col.at(record, "run_id");
  row.family = col.at(record, "family");
  row.case_name = read_text(col.at(record, "case"));
  if (const auto& d = col.at(record, "device"); !d.empty()) row.device = parse_number<int>(d, "device");
  if (const auto& g = col.at(record, "gpus"); !g.empty()) row.gpus = parse_number<int>(g, "gpus");
  row.gpu_uuid = read_text(col.at(record, "gpu_uuid"));
  for (const auto& [name, position] : col.params()) {
    if (const auto& value = read_text(record[position]); !value.empty()) row.params[name] = value;
  }
  row.metric = read_text(col.at(record, "metric"));
  row.unit = read_text(col.at(record, "unit"));
  if (const auto& b = read_text(col.at(record, "better")); !b.empty()) row.better_direction = parse_better(b);
  row.headline = col.at(record, "headline") == "yes";
  row.traffic = read_text(col.at(record, "traffic"));
  if (const auto& s = read_text(col.at(record, "statistic")); !s.empty()) row.stat = parse_statistic(s);
  if (const auto& i = col.at(record, "sample_index"); !i.empty()) row.sample_index = parse_number<int>(i, "sample_index");
  if (const auto& v = col.at(record, "value"); !v.empty()) row.value = parse_number<double>(v, "value");
  row.status = parse_row_status(col.at(record, "status"));
  row.reason = read_text(col.at(record, "reason"));
  if (const auto& r = col.at(record, "repetitions"); !r.empty()) row.repetitions = parse_number<int>(r, "repetitions");
  row.stopped_by = read_text(col.at(record, "stopped_by"));
  if (const auto& a = col.at(record, "attempt"); !a.empty()) row.attempt = parse_number<int>(a, "attempt");
  return row;
}

}  // namespace

std::string_view to_string(better value) { return better_names.at(static_cast<std::size_t>(value)); }
std::string_view to_string(statistic value) { return statistic_names.at(static_cast<std::size_t>(value)); }
std::string_view to_string(row_status value) { return status_names.at(static_cast<std::size_t>(value)); }
better parse_better(std::string_view text) { return parse_enum<better>(text, better_names, "better"); }
statistic parse_statistic(std::string_view text) { return parse_enum<statistic>(text, statistic_names, "statistic"); }
row_status parse_row_status(std::string_view text) { return parse_enum<row_status>(text, status_names, "status"); }
std::string_view to_string(column_type value) { return column_type_names.at(static_cast<std::size_t>(value)); }

column_type core_column_type(std::string_view name) {
  const auto it = std::find_if(number_columns.begin(), number_columns.end(), [&](const auto& c) { return c.first == name; });
  return it == number_columns.end() ? column_type::text : it->second;
}

nlohmann::json results_csv_record() {
  const auto columns = [](const std::vector<std::string>& names) {
    auto list = nlohmann::json::array();
    for (const auto& name : names) list.push_back({{"name", name}, {"type", to_string(core_column_type(name))}});
    return list;
  };
  return {{"schema_version", results_schema_version},
          {"leading_columns", columns(leading_columns())},
          {"trailing_columns", columns(trailing_columns())},
          {"statistics", statistic_names},
          {"later_columns", later_columns}};
}

const std::string& result_row::param(std::string_view key) const {
  static const std::string none;
  const auto it = params.find(std::string(key));
  return it == params.end() ? none : it->second;
}

std::string describe_case(const result_row& row) {
  std::string text;
  const auto append = [&](const std::string& item) { text += (text.empty() ? "" : " ") + item; };
  if (row.device) append("device=" + std::to_string(*row.device));
  if (row.gpus && *row.gpus != 1) append("gpus=" + std::to_string(*row.gpus));
  for (const auto& [key, value] : row.params) append(key + "=" + value);
  return text;
}

std::string format_value(double value) {
  std::array<char, 32> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return ec == std::errc() ? std::string(buffer.data(), end) : std::string("nan");
}

std::string write_results_csv(const std::vector<result_row>& rows, const std::vector<std::string>& param_columns) {
  const auto write_record = [](std::string& out, const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i == 0 ? "" : ",") + csv_field(fields[i]);
    out += '\n';
  };
  std::vector<std::string> header = leading_columns();
  header.insert(header.end(), param_columns.begin(), param_columns.end());
  header.insert(header.end(), trailing_columns().begin(), trailing_columns().end());
  std::vector<bool> numeric;
  for (const auto& column : param_columns) numeric.push_back(numeric_column(rows, column));
  std::string out;
  write_record(out, header);
  for (const auto& row : rows) {
    for (const auto& [key, value] : row.params) {
      if (std::find(param_columns.begin(), param_columns.end(), key) == param_columns.end()) {
        throw harness_error(row.family + " " + row.case_name + ": parameter '" + key + "' has no column");
      }
    }
    write_record(out, to_fields(row, param_columns, numeric));
  }
  return out;
}

results_table read_results_csv(std::string_view text) {
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
  results_table table;
  for (const auto& [name, position] : col.params()) table.param_columns.push_back(name);
  table.rows.reserve(records.size() - 1);
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() != header.size()) {
      throw harness_error("line " + std::to_string(i + 1) + " has " + std::to_string(records[i].size()) +
                          " fields, the header has " + std::to_string(header.size()));
    }
    try {
      table.rows.push_back(from_fields(records[i], col));
    } catch (const harness_error& e) {
      throw harness_error("line " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return table;
}

}  // namespace hdb
