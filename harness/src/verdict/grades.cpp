#include "hdb/harness/verdict/grades.hpp"

namespace hdb {

std::string_view to_string(grade value) {
  switch (value) {
    case grade::fail: return "FAIL";
    case grade::warn: return "WARN";
    case grade::pass: return "PASS";
    case grade::not_graded: return "INFO";
  }
  return "?";
}

std::string_view to_string(verdict value) {
  switch (value) {
    case verdict::slower: return "SLOWER";
    case verdict::faster: return "FASTER";
    case verdict::same: return "SAME";
  }
  return "?";
}

std::optional<grade> grade_from_string(std::string_view text) {
  for (const auto g : {grade::fail, grade::warn, grade::pass, grade::not_graded}) {
    if (to_string(g) == text) return g;
  }
  return std::nullopt;
}

}  // namespace hdb
