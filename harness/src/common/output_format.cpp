#include "hdb/harness/common/output_format.hpp"

#include <string>

#include "hdb/harness/common/error.hpp"

namespace hdb {

std::string_view to_string(output_format format) {
  switch (format) {
    case output_format::text: return "text";
    case output_format::markdown: return "markdown";
    case output_format::junit: return "junit";
    case output_format::json: return "json";
    case output_format::prometheus: return "prometheus";
  }
  return "?";
}

output_format parse_output_format(std::string_view text, std::initializer_list<output_format> accepted) {
  std::string names;
  std::size_t i = 0;
  for (const auto format : accepted) {
    if (to_string(format) == text) return format;
    names += std::string(i == 0 ? "" : i + 1 == accepted.size() ? " or " : ", ") + std::string(to_string(format));
    ++i;
  }
  throw harness_error("unknown --format '" + std::string(text) + "' (" + names + ")");
}

}  // namespace hdb
