#pragma once
// The checker behind docs/teaching.md: every number the page cites must be the committed
// reference's, so the page cannot drift from the data (the syntax is described at the top of
// docs/teaching.md and in teaching_check.cpp).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hdb::teaching {

struct sources {
  std::filesystem::path page_dir;        // relative links are resolved from here
  std::filesystem::path reference_root;  // <kind>/results.csv
  std::filesystem::path schema_dir;      // <family>.json, the declarations (case parameter order)
};

// One line per problem, each naming the page line and what it cites; empty when the page holds.
[[nodiscard]] std::vector<std::string> check_page(std::string_view markdown, const sources& where);

}  // namespace hdb::teaching
