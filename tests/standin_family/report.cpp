// Report rules of the stand-in family (tests/standin_family), compiled into the harness and
// registered from the stand-in's own manifest the way a bench family's are from harness/suite.json
// (the top-level CMakeLists.txt), so `hdbench report` on a stand-in run goes through the registry. One
// anomaly: a triad whose loop ran with other lanes than its case asked for (the planted --slowdown
// run doubles them: standin.cpp). Its own section: the triad's medians per access pattern and lane
// count at every size. % of peak is not here: it is generic, from the traffic class.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hdb/harness/report/family_rules.hpp"
#include "hdb/harness/common/tables.hpp"

namespace hdb {
namespace {

long long whole(const std::string& text) { return std::strtoll(text.c_str(), nullptr, 10); }

// The cases whose lanes_used is not their lanes parameter: one line for all of them.
void lane_anomalies(const median_index& m, std::vector<std::string>& out) {
  std::size_t count = 0;
  std::string example;
  for (const auto& [row, lanes_used] : medians_of(m, "triad", "lanes_used")) {
    if (lanes_used == static_cast<double>(whole(row->param("lanes")))) continue;
    if (count++ == 0) {
      example = describe_case(*row) + " ran " + format_figure(lanes_used) + " lanes";
    }
  }
  if (count > 0) {
    out.push_back("standin: " + std::to_string(count) + " triad case" + (count == 1 ? "" : "s") +
                  " ran with other lanes than asked (" + example +
                  "); a lanes_used that differs from lanes means the loop measured is not the case's");
  }
}

// Triad bandwidth medians: one row per access pattern and lane count, one column per size.
std::string triad_section(const median_index& m) {
  std::set<long long> sizes;
  std::map<std::pair<std::string, long long>, std::map<long long, double>> table;  // (access, lanes) -> size -> GB/s
  for (const auto& [row, bandwidth] : medians_of(m, "triad", "triad_bandwidth")) {
    const long long size = whole(row->param("size_bytes"));
    sizes.insert(size);
    table[{row->param("access"), whole(row->param("lanes"))}][size] = bandwidth;
  }
  if (table.empty()) return "";
  std::vector<std::string> header = {"access", "lanes"};
  for (const long long size : sizes) header.push_back(std::to_string(size) + " B");
  table_rows lines;
  for (const auto& [key, by_size] : table) {
    std::vector<std::string> line = {key.first, std::to_string(key.second)};
    for (const long long size : sizes) {
      const auto found = by_size.find(size);
      line.push_back(found == by_size.end() ? "-" : format_figure(found->second) + " GB/s");
    }
    lines.push_back(std::move(line));
  }
  return "Stand-in triad bandwidth (medians, output bytes per second) per access pattern and lane count.\n\n" +
         markdown_table(header, lines);
}

}  // namespace

family_rules standin_report_rules() {
  return rules_from_medians(
      "standin", {lane_anomalies}, triad_section,
      "Stand-in figures are triads over host memory timed on the CPU by the steady clock (the CPU backend); "
      "% of peak is against the stand-in probe's PCIe links, a test of the arithmetic, not a limit of the host.");
}

}  // namespace hdb
