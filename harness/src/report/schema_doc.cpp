#include "hdb/harness/report/schema_doc.hpp"

#include <algorithm>

#include "hdb/harness/common/error.hpp"
#include "hdb/harness/common/tables.hpp"
#include "hdb/harness/data/traffic.hpp"

namespace hdb {
namespace {

std::string code(const std::string& name) { return "`" + name + "`"; }

std::string code_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + code(name);
  return out;
}

std::string_view link_name(link_kind link) {
  switch (link) {
    case link_kind::pcie: return "pcie";
    case link_kind::hbm: return "hbm";
    case link_kind::nvlink_pair: return "nvlink_pair";
    case link_kind::nvlink_gpu: return "nvlink_gpu";
  }
  return "?";
}

std::string_view combine_name(link_combine combine) {
  switch (combine) {
    case link_combine::sum: return "sum";
    case link_combine::min: return "min";
    case link_combine::first: return "first";
  }
  return "?";
}

std::string traffic_table(const std::vector<traffic_class>& classes) {
  table_rows rows;
  for (const auto& c : classes) {
    rows.push_back({code(c.name), std::string(link_name(c.link)), std::string(combine_name(c.combine)),
                    std::to_string(c.directions), format_value(c.traffic_factor), c.basis});
  }
  return markdown_table({"class", "link", "combine", "directions", "traffic factor", "basis"}, rows);
}

std::string family_section(const family_declaration& d) {
  // The summary is the binary's --help; docs/methodology.md describes each family in prose.
  std::string out = "### Family `" + d.family + "`\n\n";
  table_rows params;
  for (const auto& p : d.parameters) {
    params.push_back({code(p.name), p.type == param_type::integer ? "int" : "text", code_list(p.values), p.description});
  }
  if (!params.empty()) out += "Parameters:\n\n" + markdown_table({"parameter", "type", "values", "description"}, params) + "\n";
  // A fit's metrics are named by the fit line below, with their units; the Rows section says what they are.
  const auto fitted = [&](const std::string& name) {
    return d.fit && std::find(d.fit->metrics.begin(), d.fit->metrics.end(), name) != d.fit->metrics.end();
  };
  table_rows metrics;
  for (const auto& m : d.metrics) {
    if (fitted(m.name)) continue;
    metrics.push_back({code(m.name), m.unit, std::string(to_string(m.direction)), code_list(m.traffic), m.description});
  }
  out += "Metrics:\n\n" + markdown_table({"metric", "unit", "better", "traffic", "description"}, metrics) + "\n";
  table_rows cases;
  for (const auto& c : d.cases) {
    cases.push_back({code(c.name), code_list(c.parameters), code_list(c.metrics), code_list(c.headlines), c.description});
  }
  out += "Case kinds:\n\n" + markdown_table({"case", "parameters", "metrics", "headlines", "description"}, cases) + "\n";
  table_rows gates;
  for (const auto& g : d.gates) {
    std::string selection;
    for (const auto& [name, value] : g.parameters) selection += (selection.empty() ? "" : ", ") + code(name + "=" + value);
    gates.push_back({code(g.case_kind), selection, code(g.metric), g.description});
  }
  if (!gates.empty()) {
    out += "Gates ([rules](#gates-and-checks)):\n\n" +
           markdown_table({"case", "parameters", "metric", "description"}, gates) + "\n";
  }
  if (d.fit) {
    std::string roles;
    for (const auto& r : fit_roles) {
      roles += (roles.empty() ? "" : ", ") + std::string(r.key) + " " + code(d.fit->metric(r.role)) + " (" + std::string(r.unit) + ")";
    }
    out += "Alpha-beta fit of `" + d.fit->of + "` (statistic `fit`, [rows](#rows)): " + roles + ".\n\n";
  }
  if (!d.traffic_classes.empty()) out += "Traffic classes of its own:\n\n" + traffic_table(d.traffic_classes) + "\n";
  return out;
}

}  // namespace

std::string schema_doc(const std::vector<family_declaration>& declarations) {
  std::string out = std::string(schema_doc_begin) + "\n";
  out += "<!-- Written by `hdbench schema-doc --update docs/csv-schema.md` from bench/<family>/schema.json; "
         "edit the declarations, not this section. -->\n\n";
  out += "### Traffic classes (built in)\n\n" + traffic_table(builtin_traffic_classes()) + "\n";
  for (const auto& d : declarations) out += family_section(d);
  return out + std::string(schema_doc_end) + "\n";
}

std::string replace_schema_doc(std::string_view document, std::string_view section) {
  const auto begin = document.find(schema_doc_begin);
  const auto end = document.find(schema_doc_end);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    throw harness_error("no '" + std::string(schema_doc_begin) + "' ... '" + std::string(schema_doc_end) + "' section");
  }
  auto after = end + schema_doc_end.size();
  if (after < document.size() && document[after] == '\n') ++after;
  return std::string(document.substr(0, begin)) + std::string(section) + std::string(document.substr(after));
}

}  // namespace hdb
