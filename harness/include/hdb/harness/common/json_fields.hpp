#pragma once
// The one reader of an optional field in our JSON (meta.json, the probe's output, a run's
// records): a fact is missing wherever a source did not answer, so readers chain these instead
// of checking every level.
#include <optional>

#include <nlohmann/json.hpp>

namespace hdb {

// The member `key` of `object`, or a null json when `object` is not an object or lacks it.
[[nodiscard]] const nlohmann::json& field(const nlohmann::json& object, const char* key);
// field() when it is a number, else nullopt: the one reader of an optional number in our JSON.
[[nodiscard]] std::optional<double> number_field(const nlohmann::json& object, const char* key);

}  // namespace hdb
