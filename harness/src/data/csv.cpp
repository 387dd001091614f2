#include "hdb/harness/data/csv.hpp"

#include "hdb/harness/common/error.hpp"

namespace hdb {

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string quoted = "\"";
  for (const char c : value) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  std::size_t line = 1;
  std::size_t i = 0;
  const auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    record.clear();
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' && field.empty()) {
      const std::size_t opened_on = line;
      for (++i;; ++i) {
        if (i >= text.size()) {
          throw harness_error("unterminated quoted field starting on line " + std::to_string(opened_on));
        }
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            ++i;
            continue;
          }
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i];
      }
      ++i;  // closing quote
      if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        throw harness_error("unexpected character after a quoted field on line " + std::to_string(line));
      }
      continue;
    }
    if (c == '"') throw harness_error("stray quote inside a field on line " + std::to_string(line));
    if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      // the \n that follows ends the record
    } else if (c == '\n') {
      end_record();
      ++line;
    } else {
      field += c;
    }
    ++i;
  }
  if (!field.empty() || !record.empty()) end_record();
  return records;
}

}  // namespace hdb
