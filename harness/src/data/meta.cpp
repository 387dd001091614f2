#include "hdb/harness/data/meta.hpp"

#include <cstdio>
#include <string_view>
#include <utility>

#include <hdb/build_info.hpp>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/common/json_fields.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/harness/data/traffic.hpp"
#include "hdb/harness/data/run_dir.hpp"

extern char** environ;

namespace hdb {

namespace fs = std::filesystem;
using json = nlohmann::json;

json gpu_environment(const char* const* variables) {
  json relevant = json::object();
  for (const char* const* v = variables; v != nullptr && *v != nullptr; ++v) {
    const std::string_view entry(*v);
    const auto eq = entry.find('=');
    const auto name = entry.substr(0, eq);
    for (const std::string_view prefix : {"NCCL_", "CUDA_", "NVSHMEM_", "TORCH_SYMM_MEM_"}) {
      if (name.starts_with(prefix)) {
        relevant[std::string(name)] = eq == std::string_view::npos ? std::string() : std::string(entry.substr(eq + 1));
        break;
      }
    }
  }
  return relevant;
}

json make_meta(const run_identity& run, json host, json node) {
  return {{"schema_version", meta_schema_version},
          {"run_id", run.run_id},
          {"started_utc", utc_timestamp(run.started)},
          {"finished_utc", nullptr},
          {"command_line", run.command_line},
          {"quick", run.quick},
          {"verdict", run.verdict},
          {"hdbench", {{"version", build_info::version}, {"git_revision", build_info::git_revision},
                       {"build_type", build_info::build_type}}},
          {"host", std::move(host)},
          {"node", std::move(node)},
          // What the families ran under: NCCL_NVLS_ENABLE=0 and the like belong to the result.
          {"environment", gpu_environment(environ)},
          {"families", json::object()}};
}

void set_families(json& meta, const std::vector<family_status>& statuses) {
  json families = json::object();
  for (const auto& status : statuses) families[status.family] = to_json(status);
  meta["families"] = std::move(families);
}

void record_harness_tables(json& meta) {
  if (!meta.is_object()) return;
  meta["results_csv"] = results_csv_record();
  record_link_rates(meta);
}

void write_meta(const fs::path& meta_path, const json& meta) {
  auto recorded = meta;
  record_harness_tables(recorded);
  write_json_file(meta_path, recorded);
}

void update_meta_tables(const fs::path& run_dir) {
  const auto meta_path = run_dir / "meta.json";
  if (!fs::exists(meta_path)) {
    write_meta(meta_path, json{{"schema_version", meta_schema_version}});
    return;
  }
  const auto meta = read_meta(meta_path);
  if (!meta) return;
  auto recorded = *meta;
  record_harness_tables(recorded);
  if (recorded != *meta) write_json_file(meta_path, recorded);
}

std::optional<std::string> hostname_of(const json& meta) {
  for (const char* part : {"node", "host"}) {
    const auto& name = field(field(meta, part), "hostname");
    if (name.is_string()) return name.get<std::string>();
  }
  return std::nullopt;
}

std::optional<std::int64_t> measured_unix_seconds(const json& meta) {
  for (const char* key : {"finished_utc", "started_utc"}) {
    const auto& value = field(meta, key);
    if (!value.is_string()) continue;
    const auto text = value.get<std::string>();
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    char zone = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &zone) != 7 || zone != 'Z') return std::nullopt;
    const std::chrono::year_month_day date{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                           std::chrono::day{static_cast<unsigned>(d)}};
    if (!date.ok() || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return std::nullopt;
    const auto when = std::chrono::sys_days{date} + std::chrono::hours{h} + std::chrono::minutes{mi} + std::chrono::seconds{s};
    return std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
  }
  return std::nullopt;
}

std::optional<json> read_meta(const fs::path& meta_path) {
  const auto text = try_read_text_file(meta_path);
  if (!text) return std::nullopt;
  auto meta = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return std::nullopt;
  return meta;
}

}  // namespace hdb
