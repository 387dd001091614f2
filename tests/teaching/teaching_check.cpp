// Citation syntax (docs/teaching.md): an HTML comment right after the number it backs,
//
//   55.3 GB/s<!-- cite h200 copy/bandwidth direction=h2d host_kind=pinned api=async size_bytes=1G metric=bandwidth -->
//
// i.e. `cite <kind> <family>/<case> key=value ...`: the one row of
// <reference_root>/<kind>/results.csv with that family and case, statistic median (unless
// statistic= says otherwise), metric= and every other key (a parameter column, device, gpus)
// equal to its value; `1G`, `16M`, `4K` stand for binary multiples. The number is compared with
// the row's value rounded to the decimals written, in the unit written after the number (µs, ms,
// s for a `us` row; GB/s, TB/s for a `GB/s` row). Comments inside code are examples, not citations.
//
// Lessons are the `## ` sections. Each needs a citation, a link to a plot and an `hdbench run`
// command in code whose --families and --benchmark_filter run every cited row's case, unless it
// carries `<!-- pending issue N -->`.
#include "teaching_check.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "hdb/harness/files.hpp"
#include "hdb/harness/results.hpp"
#include "hdb/host/declaration.hpp"
#include "hdb/host/lists.hpp"

namespace hdb::teaching {
namespace {

namespace fs = std::filesystem;

struct segment {
  std::string text;
  bool code = false;
};

struct citation {
  int line = 0;
  std::string body;    // the comment's text after "cite "
  std::string number;  // as written
  std::string unit;    // as written after the number, "" when none
};

struct command {
  int line = 0;
  std::vector<std::string> families;
  std::optional<std::regex> filter;  // none: every case of the families
};

struct lesson {
  std::string title;
  int line = 0;
  bool pending = false;
  int plots = 0;
  std::vector<citation> citations;
  std::vector<command> commands;
};

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

// Inline code (a run of backticks up to the same run) against the text around it.
std::vector<segment> split_code(const std::string& line) {
  std::vector<segment> parts;
  std::size_t at = 0;
  while (at < line.size()) {
    const auto open = line.find('`', at);
    if (open == std::string::npos) break;
    const auto ticks = line.find_first_not_of('`', open) == std::string::npos ? line.size() - open
                                                                               : line.find_first_not_of('`', open) - open;
    const auto close = line.find(std::string(ticks, '`'), open + ticks);
    if (close == std::string::npos) break;
    parts.push_back({line.substr(at, open - at), false});
    parts.push_back({line.substr(open + ticks, close - open - ticks), true});
    at = close + ticks;
  }
  parts.push_back({line.substr(at), false});
  return parts;
}

// The number (and unit) that text ends with: "from pinned memory at 55.3 GB/s" -> 55.3, GB/s.
std::optional<std::pair<std::string, std::string>> trailing_number(std::string_view text) {
  static const std::vector<std::string> units = {"GB/s", "TB/s", "µs", "us", "ms", "s", "%", "×"};
  std::string rest = trim(text);
  std::string unit;
  for (const auto& u : units) {
    if (rest.ends_with(u)) {
      unit = u;
      rest = trim(std::string_view(rest).substr(0, rest.size() - u.size()));
      break;
    }
  }
  auto start = rest.size();
  while (start > 0 && (std::isdigit(static_cast<unsigned char>(rest[start - 1])) || rest[start - 1] == '.')) --start;
  if (start > 0 && rest[start - 1] == '-') --start;
  const std::string number = rest.substr(start);
  if (number.empty() || !std::isdigit(static_cast<unsigned char>(number.back()))) return std::nullopt;
  if (start > 0 && std::isalnum(static_cast<unsigned char>(rest[start - 1]))) return std::nullopt;
  return std::pair{number, unit};
}

// What the row's value is multiplied by to be in the written unit; nullopt when they do not fit.
std::optional<double> unit_factor(const std::string& row_unit, const std::string& written) {
  static const std::map<std::pair<std::string, std::string>, double> factors = {
      {{"us", ""}, 1},      {{"us", "µs"}, 1},      {{"us", "us"}, 1}, {{"us", "ms"}, 1e-3}, {{"us", "s"}, 1e-6},
      {{"GB/s", ""}, 1},    {{"GB/s", "GB/s"}, 1},  {{"GB/s", "TB/s"}, 1e-3},
      {{"%", ""}, 1},       {{"%", "%"}, 1},        {{"ratio", ""}, 1}, {{"ratio", "×"}, 1},
      {{"count", ""}, 1},   {{"B", ""}, 1},         {{"us/MiB", ""}, 1}};
  const auto found = factors.find({row_unit, written});
  if (found == factors.end()) return std::nullopt;
  return found->second;
}

// "1G" -> "1073741824": the page writes sizes as people read them, the CSV holds bytes.
std::string expand_size(const std::string& value) {
  static const std::regex sized("([0-9]+)([KMG])");
  std::smatch m;
  if (!std::regex_match(value, m, sized)) return value;
  const int shift = m[2] == "K" ? 10 : m[2] == "M" ? 20 : 30;
  return std::to_string(std::stoull(m[1]) << shift);
}

std::optional<command> parse_command(const std::string& code, int line, std::string& problem) {
  if (!trim(code).starts_with("hdbench run ")) return std::nullopt;
  command parsed;
  parsed.line = line;
  std::istringstream words(code);
  std::vector<std::string> tokens;
  for (std::string word; words >> word;) tokens.push_back(word);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string families;
    if (tokens[i] == "--families" && i + 1 < tokens.size()) families = tokens[i + 1];
    else if (tokens[i].starts_with("--families=")) families = tokens[i].substr(11);
    if (!families.empty()) parsed.families = split_nonempty(families);
    if (tokens[i].starts_with("--benchmark_filter=")) {
      std::string filter = tokens[i].substr(19);
      if (filter.size() >= 2 && (filter.front() == '\'' || filter.front() == '"') && filter.back() == filter.front()) {
        filter = filter.substr(1, filter.size() - 2);
      }
      try {
        // Google Benchmark matches names with POSIX extended regular expressions, searching.
        parsed.filter = std::regex(filter, std::regex::extended);
      } catch (const std::regex_error& e) {
        problem = "line " + std::to_string(line) + ": --benchmark_filter '" + filter + "' is not a regular expression: " + e.what();
        return std::nullopt;
      }
    }
  }
  if (parsed.families.empty()) {
    problem = "line " + std::to_string(line) + ": `" + code + "` names no --families";
    return std::nullopt;
  }
  return parsed;
}

struct page {
  std::vector<lesson> lessons;
  std::vector<std::string> problems;
};

page parse_page(std::string_view markdown, const fs::path& page_dir) {
  page parsed;
  std::istringstream lines{std::string(markdown)};
  bool fenced = false;
  int number = 0;
  static const std::regex link(R"(\]\(([^)\s]+)\))");
  static const std::regex pending("pending issue [0-9]+");
  for (std::string text; std::getline(lines, text);) {
    ++number;
    if (text.starts_with("```")) {
      fenced = !fenced;
      continue;
    }
    if (!fenced && text.starts_with("## ")) {
      lesson next;
      next.title = trim(text.substr(3));
      next.line = number;
      parsed.lessons.push_back(std::move(next));
    }
    lesson* current = parsed.lessons.empty() ? nullptr : &parsed.lessons.back();
    const auto segments = fenced ? std::vector<segment>{{text, true}} : split_code(text);
    for (const auto& part : segments) {
      if (part.code) {
        std::string problem;
        auto cmd = parse_command(part.text, number, problem);
        if (!problem.empty()) parsed.problems.push_back(problem);
        if (cmd && current) current->commands.push_back(std::move(*cmd));
        continue;
      }
      for (std::sregex_iterator m(part.text.begin(), part.text.end(), link), end; m != end; ++m) {
        std::string target = (*m)[1];
        if (target.starts_with("http://") || target.starts_with("https://") || target.starts_with("#")) continue;
        target = target.substr(0, target.find('#'));
        if (!fs::exists(page_dir / target)) {
          parsed.problems.push_back("line " + std::to_string(number) + ": linked file " + target + " does not exist");
        } else if (current && (target.ends_with(".png") || target.ends_with(".svg"))) {
          ++current->plots;
        }
      }
      std::size_t after_previous = 0;
      for (auto open = part.text.find("<!--"); open != std::string::npos; open = part.text.find("<!--", open + 4)) {
        const auto close = part.text.find("-->", open);
        const std::string where = "line " + std::to_string(number);
        if (close == std::string::npos) {
          parsed.problems.push_back(where + ": a comment that does not end on its line");
          break;
        }
        const std::string body = trim(std::string_view(part.text).substr(open + 4, close - open - 4));
        const std::string before = part.text.substr(after_previous, open - after_previous);
        after_previous = close + 3;
        if (std::regex_match(body, pending)) {
          if (current) current->pending = true;
          continue;
        }
        if (!body.starts_with("cite ")) {
          parsed.problems.push_back(where + ": comment '" + body + "' is neither 'cite ...' nor 'pending issue N'");
          continue;
        }
        const auto cited = trailing_number(before);
        if (!cited) {
          parsed.problems.push_back(where + ": '" + body + "' follows no number");
          continue;
        }
        if (!current) {
          parsed.problems.push_back(where + ": '" + body + "' stands before the first lesson");
          continue;
        }
        current->citations.push_back({number, body.substr(5), cited->first, cited->second});
      }
    }
  }
  return parsed;
}

// The Google Benchmark name family_main gives the row's case (hdb/family.hpp make_case), with the
// suffix the shared main adds, so a filter that anchors its end is checked as it will run. The
// CSV keeps the first GPU and the count; the references' selections are contiguous.
std::string benchmark_name(const result_row& row, const case_decl& kind) {
  std::string name = row.family + "/" + row.case_name;
  for (const auto& key : kind.parameters) {
    const auto& value = row.param(key);
    if (value.empty()) continue;
    const bool numeric = value.find_first_not_of("0123456789") == std::string::npos;
    if (key == "size_bytes") name += "/size:" + value;
    else if (numeric) name += "/" + key + ":" + value;
    else name += "/" + value;
  }
  if (row.device) {
    name += "/gpu:";
    for (int i = 0; i < row.gpus.value_or(1); ++i) name += (i ? "," : "") + std::to_string(*row.device + i);
  }
  return name + "/iterations:1/repeats:5/manual_time";
}

class checker {
 public:
  explicit checker(const sources& where) : where_(where) {}

  void check(const lesson& l, const citation& c, std::vector<std::string>& problems) {
    const std::string where = "line " + std::to_string(c.line) + ": cite " + c.body;
    std::istringstream words(c.body);
    std::string kind, family_case;
    words >> kind >> family_case;
    const auto slash = family_case.find('/');
    if (kind.empty() || slash == std::string::npos) {
      problems.push_back(where + ": needs '<kind> <family>/<case> key=value ...'");
      return;
    }
    const results_table* table = reference(kind, problems);
    if (!table) return;
    const std::string family = family_case.substr(0, slash);
    const std::string case_kind = family_case.substr(slash + 1);
    std::map<std::string, std::string> wanted = {{"statistic", "median"}};
    for (std::string pair; words >> pair;) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos) {
        problems.push_back(where + ": '" + pair + "' is not key=value");
        return;
      }
      wanted[pair.substr(0, eq)] = expand_size(pair.substr(eq + 1));
    }
    if (!wanted.contains("metric")) {
      problems.push_back(where + ": names no metric=");
      return;
    }
    for (const auto& [key, value] : wanted) {
      const bool core = key == "metric" || key == "statistic" || key == "device" || key == "gpus";
      if (!core && std::find(table->param_columns.begin(), table->param_columns.end(), key) == table->param_columns.end()) {
        problems.push_back(where + ": " + kind + "/results.csv has no column '" + key + "'");
        return;
      }
    }
    std::vector<const result_row*> rows;
    for (const auto& row : table->rows) {
      if (row.family == family && row.case_name == case_kind && matches(row, wanted)) rows.push_back(&row);
    }
    if (rows.empty()) {
      problems.push_back(where + ": no such row in " + kind + "/results.csv");
      return;
    }
    if (rows.size() > 1) {
      problems.push_back(where + ": " + std::to_string(rows.size()) + " rows match; tell them apart by " + differing(rows, *table));
      return;
    }
    const result_row& row = *rows.front();
    check_value(row, c, where, problems);
    check_command(l, row, where, problems);
  }

  // Each cited kind's run id, which the page must name (a re-measured reference changes it).
  [[nodiscard]] std::map<std::string, std::string> run_ids() const {
    std::map<std::string, std::string> ids;
    for (const auto& [kind, table] : tables_) {
      if (table && !table->rows.empty()) ids[kind] = table->rows.front().run_id;
    }
    return ids;
  }

 private:
  const results_table* reference(const std::string& kind, std::vector<std::string>& problems) {
    auto found = tables_.find(kind);
    if (found == tables_.end()) {
      std::optional<results_table> table;
      try {
        table = read_results_csv(read_text_file(where_.reference_root / kind / "results.csv"));
      } catch (const std::exception& e) {
        problems.push_back("reference '" + kind + "': " + e.what());
      }
      found = tables_.emplace(kind, std::move(table)).first;
    }
    return found->second ? &*found->second : nullptr;
  }

  static bool matches(const result_row& row, const std::map<std::string, std::string>& wanted) {
    for (const auto& [key, value] : wanted) {
      std::string actual;
      if (key == "metric") actual = row.metric;
      else if (key == "statistic") actual = row.stat ? std::string(to_string(*row.stat)) : "";
      else if (key == "device") actual = row.device ? std::to_string(*row.device) : "";
      else if (key == "gpus") actual = row.gpus ? std::to_string(*row.gpus) : "";
      else actual = row.param(key);
      if (actual != value) return false;
    }
    return true;
  }

  static std::string differing(const std::vector<const result_row*>& rows, const results_table& table) {
    std::vector<std::string> keys;
    const auto differs = [&](auto get) {
      return std::any_of(rows.begin(), rows.end(), [&](const result_row* r) { return get(*r) != get(*rows.front()); });
    };
    if (differs([](const result_row& r) { return r.device; })) keys.push_back("device");
    if (differs([](const result_row& r) { return r.gpus; })) keys.push_back("gpus");
    for (const auto& column : table.param_columns) {
      if (differs([&](const result_row& r) { return r.param(column); })) keys.push_back(column);
    }
    return join_list(keys, ", ");
  }

  static void check_value(const result_row& row, const citation& c, const std::string& where, std::vector<std::string>& problems) {
    if (!row.value) {
      problems.push_back(where + ": the row has no value (" + row.reason + ")");
      return;
    }
    const auto factor = unit_factor(row.unit, c.unit);
    if (!factor) {
      problems.push_back(where + ": written in '" + c.unit + "', the row is in " + row.unit);
      return;
    }
    const auto dot = c.number.find('.');
    const int decimals = dot == std::string::npos ? 0 : static_cast<int>(c.number.size() - dot - 1);
    char rounded[64];
    std::snprintf(rounded, sizeof rounded, "%.*f", decimals, *row.value * *factor);
    if (c.number != rounded) {
      problems.push_back(where + ": the page says " + c.number + " " + c.unit + ", the row holds " + format_value(*row.value) +
                         " " + row.unit + " (" + rounded + " at the precision written)");
    }
  }

  void check_command(const lesson& l, const result_row& row, const std::string& where, std::vector<std::string>& problems) {
    const case_decl* kind = declaration(row.family, row.case_name, problems);
    if (!kind) return;
    const auto name = benchmark_name(row, *kind);
    for (const auto& cmd : l.commands) {
      if (std::find(cmd.families.begin(), cmd.families.end(), row.family) == cmd.families.end()) continue;
      if (!cmd.filter || std::regex_search(name, *cmd.filter)) return;
    }
    problems.push_back(where + ": no hdbench run command of lesson '" + l.title + "' runs " + name);
  }

  const case_decl* declaration(const std::string& family, const std::string& case_kind, std::vector<std::string>& problems) {
    auto found = declarations_.find(family);
    if (found == declarations_.end()) {
      std::optional<family_declaration> parsed;
      try {
        const std::string text = read_text_file(where_.schema_dir / (family + ".json"));
        parsed = parse_declaration(std::string_view(text));
      } catch (const std::exception& e) {
        problems.push_back("declaration of '" + family + "': " + e.what());
      }
      found = declarations_.emplace(family, std::move(parsed)).first;
    }
    if (!found->second) return nullptr;
    const case_decl* kind = found->second->case_kind(case_kind);
    if (!kind) problems.push_back("family '" + family + "' declares no case kind '" + case_kind + "'");
    return kind;
  }

  sources where_;
  std::map<std::string, std::optional<results_table>> tables_;
  std::map<std::string, std::optional<family_declaration>> declarations_;
};

}  // namespace

std::vector<std::string> check_page(std::string_view markdown, const sources& where) {
  page parsed = parse_page(markdown, where.page_dir);
  checker check(where);
  for (const auto& l : parsed.lessons) {
    const std::string name = "lesson '" + l.title + "' (line " + std::to_string(l.line) + ")";
    if (!l.pending) {
      if (l.citations.empty()) parsed.problems.push_back(name + " cites no number (or mark it <!-- pending issue N -->)");
      if (l.plots == 0) parsed.problems.push_back(name + " links no plot");
      if (l.commands.empty()) parsed.problems.push_back(name + " has no `hdbench run` command");
    }
    for (const auto& c : l.citations) check.check(l, c, parsed.problems);
  }
  for (const auto& [kind, run_id] : check.run_ids()) {
    if (markdown.find(run_id) == std::string_view::npos) {
      parsed.problems.push_back("the page never names run " + run_id + " of reference '" + kind + "'");
    }
  }
  return parsed.problems;
}

}  // namespace hdb::teaching
