#pragma once
// What --format names, for every command that prints a report (check, compare, fleet): one type
// and one parser, each command saying which of the formats it writes.
#include <initializer_list>
#include <string_view>

namespace hdb {

// prometheus: node_exporter's textfile collector format (check, fleet: verdict/prometheus_render.hpp).
enum class output_format { text, markdown, junit, json, prometheus };

[[nodiscard]] std::string_view to_string(output_format format);
// One of `accepted`; throws harness_error "unknown --format 'xml' (text, junit or json)" otherwise.
[[nodiscard]] output_format parse_output_format(std::string_view text, std::initializer_list<output_format> accepted);

}  // namespace hdb
