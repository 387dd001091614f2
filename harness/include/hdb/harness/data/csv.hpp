#pragma once
// RFC 4180 fields and records, nothing about hdbench columns (that is results.hpp).
#include <string>
#include <string_view>
#include <vector>

namespace hdb {

// The field as written to a CSV line: quoted (quotes doubled) only when it contains
// a comma, a quote, a carriage return or a newline.
[[nodiscard]] std::string csv_field(std::string_view value);

// Splits CSV text into records of fields. Accepts \n and \r\n line ends and a missing
// final newline; throws harness_error on an unterminated quoted field or a stray quote.
[[nodiscard]] std::vector<std::vector<std::string>> parse_csv(std::string_view text);

}  // namespace hdb
