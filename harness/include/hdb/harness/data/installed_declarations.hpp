#pragma once
// The harness's side of a family's declaration: the model and its parser are hdb_contract's
// (hdb/contract/declaration.hpp, shared with the bench binaries); here the installed files are read
// and the CSV's parameter columns derived, with harness_error naming the file.
#include <filesystem>
#include <string>
#include <vector>

#include "hdb/contract/declaration.hpp"  // the model, parse_declaration (throws declaration_error)

namespace hdb {

// Reads and parses a file; throws harness_error naming it (a declaration_error translated).
[[nodiscard]] family_declaration read_declaration(const std::filesystem::path& path);

// The declarations of a manifest's families from `schema_dir`/<family>.json (as installed beside
// hdbench: <bin dir>/schema/), in manifest order. Throws harness_error naming a missing or bad file.
[[nodiscard]] std::vector<family_declaration> installed_declarations(const std::filesystem::path& manifest,
                                                                     const std::filesystem::path& schema_dir);

// The CSV's parameter columns: the union of the families' parameters, in the given order, each
// family's in declaration order, first appearance wins. Throws harness_error naming both families
// when a parameter is `int` in one and `text` in another.
[[nodiscard]] std::vector<std::string> parameter_columns(const std::vector<const family_declaration*>& families);

}  // namespace hdb
