#include "hdb/harness/common/json_fields.hpp"

namespace hdb {

using json = nlohmann::json;

const json& field(const json& object, const char* key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  const auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::optional<double> number_field(const json& object, const char* key) {
  const auto& value = field(object, key);
  return value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt;
}

}  // namespace hdb
