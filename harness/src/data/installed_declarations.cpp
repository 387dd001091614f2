#include "hdb/harness/data/installed_declarations.hpp"

#include <map>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/manifest.hpp"

namespace hdb {

family_declaration read_declaration(const std::filesystem::path& path) {
  try {
    return parse_declaration(std::string_view(read_text_file(path)));
  } catch (const declaration_error& e) {
    throw harness_error(path.string() + ": " + e.what());
  } catch (const harness_error& e) {
    throw harness_error(path.string() + ": " + e.what());
  }
}

std::vector<family_declaration> installed_declarations(const std::filesystem::path& manifest,
                                                       const std::filesystem::path& schema_dir) {
  std::vector<family_declaration> declarations;
  for (const auto& family : load_manifest(manifest).families) {
    declarations.push_back(read_declaration(schema_dir / (family.name + ".json")));
    if (declarations.back().family != family.name) {
      throw harness_error((schema_dir / (family.name + ".json")).string() + ": declares family '" +
                          declarations.back().family + "', the manifest names '" + family.name + "'");
    }
  }
  return declarations;
}

std::vector<std::string> parameter_columns(const std::vector<const family_declaration*>& families) {
  std::vector<std::string> columns;
  std::map<std::string, std::pair<param_type, std::string>> first;  // parameter -> (type, family)
  for (const auto* family : families) {
    for (const auto& p : family->parameters) {
      const auto [it, inserted] = first.try_emplace(p.name, p.type, family->family);
      if (inserted) {
        columns.push_back(p.name);
      } else if (it->second.first != p.type) {
        const auto type_name = [](param_type t) { return t == param_type::integer ? "int" : "text"; };
        throw harness_error("parameter '" + p.name + "' is " + type_name(it->second.first) + " in family " +
                            it->second.second + " but " + type_name(p.type) + " in family " + family->family);
      }
    }
  }
  return columns;
}

}  // namespace hdb
