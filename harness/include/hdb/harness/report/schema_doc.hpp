#pragma once
// `hdbench schema-doc`: the part of docs/csv-schema.md that the declarations say (every family's
// parameters, metrics, case kinds and traffic classes, and the built-in traffic classes), so the
// document cannot drift from them: a host test fails when the committed section differs.
#include <string>
#include <string_view>
#include <vector>

#include "hdb/harness/data/installed_declarations.hpp"

namespace hdb {

inline constexpr std::string_view schema_doc_begin = "<!-- generated: hdbench schema-doc -->";
inline constexpr std::string_view schema_doc_end = "<!-- end generated -->";

// The generated section, both marker lines included, families in the given (manifest) order.
[[nodiscard]] std::string schema_doc(const std::vector<family_declaration>& declarations);

// `document` with the text from its begin marker through its end marker replaced by `section`.
// Throws harness_error when the markers are missing or out of order.
[[nodiscard]] std::string replace_schema_doc(std::string_view document, std::string_view section);

}  // namespace hdb
