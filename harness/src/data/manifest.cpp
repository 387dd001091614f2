#include "hdb/harness/data/manifest.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/files.hpp"

namespace hdb {
namespace {

family_entry parse_entry(const nlohmann::json& j) {
  family_entry e;
  e.name = j.at("name").get<std::string>();
  e.folder = j.at("folder").get<std::string>();
  e.binary = j.at("binary").get<std::string>();
  e.plots = j.at("plots").get<std::string>();
  e.flags = j.value("flags", std::vector<std::string>());
  e.quick_flags = j.value("quick_flags", std::vector<std::string>{"--quick"});
  e.timeout_s = j.at("timeout_s").get<double>();
  if (e.name.empty() || e.folder.empty() || e.binary.empty() || e.plots.empty() || !(e.timeout_s > 0)) {
    throw harness_error("family '" + e.name + "' needs a name, a folder, a binary, a plot module and timeout_s > 0");
  }
  return e;
}

}  // namespace

suite_manifest load_manifest(const std::filesystem::path& path) {
  const auto text = read_text_file(path);
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("schema_version", 0) != 2) throw harness_error("schema_version must be 2");
    suite_manifest manifest;
    for (const auto& entry : j.at("families")) manifest.families.push_back(parse_entry(entry));
    return manifest;
  } catch (const nlohmann::json::exception& e) {
    throw harness_error("manifest " + path.string() + ": " + e.what());
  } catch (const harness_error& e) {
    throw harness_error("manifest " + path.string() + ": " + e.what());
  }
}

std::vector<family_entry> select_families(const suite_manifest& manifest, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return manifest.families;
  std::vector<family_entry> selected;
  for (const auto& name : wanted) {
    const auto it = std::find_if(manifest.families.begin(), manifest.families.end(),
                                 [&](const family_entry& e) { return e.name == name; });
    if (it == manifest.families.end()) {
      std::string known;
      for (const auto& e : manifest.families) known += (known.empty() ? "" : ", ") + e.name;
      throw harness_error("unknown family '" + name + "' (the manifest has: " + known + ")");
    }
    selected.push_back(*it);
  }
  return selected;
}

}  // namespace hdb
