// Citation syntax (docs/teaching.md): an HTML comment right after the number it backs. Two kinds:
//
//   55.3 GB/s<!-- cite h200-x2 p2p/bandwidth api=staged ... metric=bandwidth -->
//
// `cite <kind> <family>/<case> key=value ...` is one run: the one row of
// <reference_root>/<kind>/results.csv with that family and case, statistic median (unless
// statistic= says otherwise), metric= and every other key (a parameter column, device, gpus)
// equal to its value; `1G`, `16M`, `4K` stand for binary multiples. The number is compared with
// the row's value rounded to the decimals written, in the unit written after the number (µs, ms,
// s for a `us` row; GB/s, TB/s for a `GB/s` row). A kind that is a reference set (it has runs/)
// cannot be cited this way: one member is not typical of the set, so it is cited as a set.
//
//   4.4 µs (3.4–5.3 over 12 machines)<!-- cite-set h200 sync/launch api=empty_kernel metric=launch_time -->
//
// `cite-set` is the same query over every member <reference_root>/<kind>/runs/<run>/results.csv:
// the first number is the median of the members' values (the mean of the middle two for an even
// count), the range their minimum and maximum, each rounded to the decimals written, in the unit
// written after the median (the range may repeat it), and N the members that hold the row. The
// count may be left out, "(3.4–5.3)", only where every member holds the row, so a short range is
// never over fewer machines than the page says the set has. Comments inside code are examples,
// not citations.
//
// Lessons are the `## ` sections. Each needs a citation, a link to a plot and a run command in
// code whose --families and --benchmark_filter run every cited row's case, unless it carries
// `<!-- pending: WHY -->` (what the lesson waits for). A run command is `hdbench run ...` (also as a path to the binary),
// `./run_all.sh ...` (which passes its arguments to hdbench run) or a family's binary,
// `.../hdbench-<family> --benchmark_filter=...`.
//
// Exercises. Each lesson has one: a paragraph that starts "**Exercise.**", asks for a prediction
// ("Predict"), gives a run command and, unless the lesson is pending, the answer on a reference
// as citations; the exercise's own commands must run every row its answer cites, so the answer
// is what the reader's command measures.
//
// Reasons. A sentence of a lesson that gives a cause (a causal word: "because", "sets", "is the
// CPU", "shares", ", so", ...; causal_marker below) must carry a citation of a row or say "not
// measured": a cause no row shows is said to be unshown, never passed off as measured.
//
// Titles. Each figure a lesson links has its title and claims in plots/figures.json beside it
// (docs/plots.md). Every measured number of the title (followed by µs, ms, s, GB/s, TB/s, % or ×)
// must be a claim, so its quantity is known. A claim whose rows the lesson cites quotes the same
// quantity as the lesson, and must agree with it: for a single run, the lesson's row through the
// claim's formula; for a set, the set's median through the formula, unless the title says "this
// run", when the claim must lie in the range the set's members give it (the formula over each
// row's lowest and highest member).
#include "teaching_check.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hdb/harness/common/files.hpp"
#include "hdb/harness/data/results.hpp"
#include "hdb/contract/declaration.hpp"
#include "hdb/util/lists.hpp"

namespace hdb::teaching {
namespace {

namespace fs = std::filesystem;

struct segment {
  std::string text;
  bool code = false;
};

struct citation {
  int line = 0;
  bool exercise = false;  // in the lesson's exercise: its command must run the row
  std::string body;    // the comment's text after "cite " or "cite-set "
  std::string number;  // as written (a set citation: the median)
  std::string unit;    // as written after the number, "" when none
  bool set = false;    // cite-set: the number is the members' median, with their range
  std::string low, high;  // cite-set: the range as written
  std::string count;      // cite-set: N of "over N machines", "" when left out
};

struct command {
  int line = 0;
  bool exercise = false;
  std::vector<std::string> families;
  std::optional<std::regex> filter;  // none: every case of the families
};

// One sentence of a lesson's prose: code spans stand as "CODE", a citation as \x01.
struct sentence {
  int line = 0;
  std::string text;
};

struct linked_figure {
  int line = 0;
  fs::path file;  // as linked, resolved from the page's folder
};

struct lesson {
  std::string title;
  int line = 0;
  bool pending = false;
  int plots = 0;
  std::vector<citation> citations;
  std::vector<command> commands;
  std::vector<sentence> sentences;
  std::vector<linked_figure> figures;
  int exercise_line = 0;  // 0: the lesson has none
  bool predicts = false;  // its exercise asks for a prediction
};


std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

constexpr char citation_mark = '\x01';

// A paragraph's prose, and where each of its source lines starts in it.
struct paragraph {
  std::string text;
  std::vector<std::pair<std::size_t, int>> lines;

  void add(int line, const std::string& prose) {
    lines.emplace_back(text.size(), line);
    text += prose + " ";
  }
  [[nodiscard]] int line_at(std::size_t offset) const {
    int line = lines.empty() ? 0 : lines.front().second;
    for (const auto& [start, number] : lines) {
      if (start <= offset) line = number;
    }
    return line;
  }
};

// A period that ends an abbreviation ("e.g.", "vs.") ends no sentence.
bool after_abbreviation(const std::string& text, std::size_t dot) {
  static const std::vector<std::string> abbreviations = {"e.g", "i.e", "vs", "cf"};
  return std::any_of(abbreviations.begin(), abbreviations.end(), [&](const std::string& a) {
    return dot >= a.size() && text.compare(dot - a.size(), a.size(), a) == 0 &&
           (dot == a.size() || !std::isalpha(static_cast<unsigned char>(text[dot - a.size() - 1])));
  });
}

// Sentences end at '.', '!' or '?' followed by a space (closing brackets, quotes and emphasis
// belong to the sentence); a decimal point or an abbreviation ends none. A quotation ("...": the
// claim a lesson tests, a title's words) is someone else's reasoning, so it stands as QUOTE.
void split_sentences(paragraph p, std::vector<sentence>& out) {
  for (auto open = p.text.find('"'); open != std::string::npos; open = p.text.find('"', open + 1)) {
    const auto close = p.text.find('"', open + 1);
    if (close == std::string::npos) break;
    const std::size_t length = close - open + 1;  // kept, so line_at still maps offsets to lines
    p.text.replace(open, length, length >= 5 ? "QUOTE" + std::string(length - 5, ' ') : std::string(length, ' '));
  }
  const auto emit = [&](std::size_t from, std::size_t to) {
    const std::string text = trim(std::string_view(p.text).substr(from, to - from));
    if (!text.empty()) out.push_back({p.line_at(from + (p.text.size() > from && p.text[from] == ' ' ? 1 : 0)), text});
  };
  std::size_t start = 0;
  for (std::size_t i = 0; i < p.text.size(); ++i) {
    const char ch = p.text[i];
    if (ch != '.' && ch != '!' && ch != '?') continue;
    std::size_t end = i + 1;
    while (end < p.text.size() && (p.text[end] == ')' || p.text[end] == '*' || p.text[end] == '"' || p.text[end] == ':')) ++end;
    if (end < p.text.size() && p.text[end] != ' ') continue;
    if (ch == '.' && after_abbreviation(p.text, i)) continue;
    emit(start, end);
    start = end;
  }
  emit(start, p.text.size());
}

// The causal word a sentence uses ("" when none): a reason given, which a row must back.
std::string causal_marker(const std::string& text) {
  static const std::regex causal(
      R"(\b(because|since|due to|caused by|causes|sets|set by|set the pace|is the cpu|are the cpu|shares|share the|)"
      R"(comes from|come from|limited by|bound by|that is why|this is why|why|therefore|hence|thus)\b|, so\b)");
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::smatch m;
  return std::regex_search(lower, m, causal) ? trim(m.str()) : "";
}

bool says_not_measured(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("not measured") != std::string::npos;
}

// The lesson's exercise: a prediction asked, a command, and (a lesson with data) a cited answer.
void check_exercise(const lesson& l, const std::string& name, std::vector<std::string>& problems) {
  if (l.exercise_line == 0) {
    problems.push_back(name + " has no exercise (a paragraph that starts **Exercise.**)");
    return;
  }
  const std::string where = name + ", its exercise (line " + std::to_string(l.exercise_line) + ")";
  if (!l.predicts) problems.push_back(where + " asks for no prediction ('Predict')");
  if (std::none_of(l.commands.begin(), l.commands.end(), [](const command& c) { return c.exercise; })) {
    problems.push_back(where + " gives no run command");
  }
  if (!l.pending && std::none_of(l.citations.begin(), l.citations.end(), [](const citation& c) { return c.exercise; })) {
    problems.push_back(where + " cites no answer to compare with");
  }
}

// A causal sentence without a citation of a row or a "not measured", one problem each.
void check_reasons(const lesson& l, std::vector<std::string>& problems) {
  for (const auto& s : l.sentences) {
    if (s.text.ends_with("?")) continue;  // a question asks, it claims nothing
    const std::string marker = causal_marker(s.text);
    if (marker.empty() || s.text.find(citation_mark) != std::string::npos || says_not_measured(s.text)) continue;
    std::string shown = s.text;
    std::erase(shown, citation_mark);
    problems.push_back("line " + std::to_string(s.line) + ": lesson '" + l.title + "' gives a cause ('" + marker +
                       "') that cites no row and is not marked 'not measured': \"" + shown + "\"");
  }
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

// A set citation's range at the end of text: "4.4 µs (3.4–5.3 over 12 machines)" -> 3.4, 5.3,
// "12", and the text before the parenthesis (which must end with the median). The dash may be an
// en dash or a hyphen; the range may repeat the median's unit; "over N machines" may be left out.
struct written_range {
  std::string before, low, high, unit, count;
};

std::optional<written_range> trailing_range(const std::string& text) {
  // Only the last parenthesis is matched, so the regex never walks a whole line.
  static const std::regex range(
      R"(\(\s*([0-9]+(?:\.[0-9]+)?)\s*(?:–|-)\s*([0-9]+(?:\.[0-9]+)?)\s*(GB/s|TB/s|µs|us|ms|s|%|×)?)"
      R"((?:\s+over\s+([0-9]+)\s+machines)?\s*\)\s*)");
  const auto open = text.rfind('(');
  if (open == std::string::npos) return std::nullopt;
  const std::string tail = text.substr(open);
  std::smatch m;
  if (!std::regex_match(tail, m, range)) return std::nullopt;
  return written_range{text.substr(0, open), m[1], m[2], m[3], m[4]};
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

// The run command a code span holds, by its first words: hdbench run (the binary by name or path),
// run_all.sh (hdbench run's arguments), or one family's binary (that family; nothing else named).
std::optional<command> parse_command(const std::string& code, int line, std::string& problem) {
  std::istringstream words(code);
  std::vector<std::string> tokens;
  for (std::string word; words >> word;) tokens.push_back(word);
  if (tokens.empty()) return std::nullopt;
  const std::string program = fs::path(tokens[0]).filename().string();
  command parsed;
  parsed.line = line;
  // A program named with no arguments is a name in the prose, not a command.
  if (program.starts_with("hdbench-") && tokens.size() > 1) {
    parsed.families = {program.substr(8)};
  } else if (!(program == "run_all.sh" && tokens[0].find('/') != std::string::npos && tokens.size() > 1) &&
             !(program == "hdbench" && tokens.size() > 2 && tokens[1] == "run")) {
    return std::nullopt;
  }
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
  static const std::regex pending("pending: .+");
  paragraph prose;
  bool exercise = false;  // the paragraph is the lesson's exercise
  const auto end_paragraph = [&] {
    if (!parsed.lessons.empty()) split_sentences(prose, parsed.lessons.back().sentences);
    prose = {};
    exercise = false;
  };
  for (std::string text; std::getline(lines, text);) {
    ++number;
    if (text.starts_with("```")) {
      end_paragraph();
      fenced = !fenced;
      continue;
    }
    if (!fenced && (text.starts_with("#") || trim(text).empty())) end_paragraph();
    if (!fenced && text.starts_with("## ")) {
      lesson next;
      next.title = trim(text.substr(3));
      next.line = number;
      parsed.lessons.push_back(std::move(next));
    }
    lesson* current = parsed.lessons.empty() ? nullptr : &parsed.lessons.back();
    if (!fenced && current && prose.text.empty() && text.starts_with("**Exercise.**")) {
      exercise = true;
      current->exercise_line = number;
    }
    if (exercise && text.find("Predict") != std::string::npos) current->predicts = true;
    const auto segments = fenced ? std::vector<segment>{{text, true}} : split_code(text);
    std::string line_prose;  // this line as the reasons check reads it
    for (const auto& part : segments) {
      if (part.code) {
        line_prose += "CODE";
        std::string problem;
        auto cmd = parse_command(part.text, number, problem);
        if (!problem.empty()) parsed.problems.push_back(problem);
        if (cmd && current) {
          cmd->exercise = exercise;
          current->commands.push_back(std::move(*cmd));
        }
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
          current->figures.push_back({number, page_dir / target});
        }
      }
      std::size_t copied = 0;  // of part.text into line_prose, comments left out
      for (auto open = part.text.find("<!--"); open != std::string::npos; open = part.text.find("<!--", open + 4)) {
        const auto close = part.text.find("-->", open);
        line_prose += part.text.substr(copied, open - copied);
        if (close == std::string::npos) break;
        copied = close + 3;
        if (part.text.compare(open, 10, "<!-- cite ") == 0 || part.text.compare(open, 14, "<!-- cite-set ") == 0) {
          line_prose += citation_mark;
        }
      }
      if (copied < part.text.size() && part.text.find("<!--", copied) == std::string::npos) line_prose += part.text.substr(copied);
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
        const bool set = body.starts_with("cite-set ");
        if (!set && !body.starts_with("cite ")) {
          parsed.problems.push_back(where + ": comment '" + body + "' is neither 'cite ...', 'cite-set ...' nor 'pending: WHY'");
          continue;
        }
        citation c{number, exercise, body.substr(set ? 9 : 5), "", "", set, "", "", ""};
        std::string number_text = before;
        if (set) {
          const auto range = trailing_range(before);
          if (!range) {
            parsed.problems.push_back(where + ": '" + body + "' follows no 'median unit (low–high over N machines)'");
            continue;
          }
          number_text = range->before;
          c.low = range->low;
          c.high = range->high;
          c.count = range->count;
          if (!range->unit.empty()) c.unit = range->unit;  // compared with the median's below
        }
        const auto cited = trailing_number(number_text);
        if (!cited) {
          parsed.problems.push_back(where + ": '" + body + "' follows no number");
          continue;
        }
        if (set && !c.unit.empty() && c.unit != cited->second) {
          parsed.problems.push_back(where + ": '" + body + "' writes the median in '" + cited->second + "' and the range in '" +
                                    c.unit + "'");
          continue;
        }
        if (!current) {
          parsed.problems.push_back(where + ": '" + body + "' stands before the first lesson");
          continue;
        }
        c.number = cited->first;
        c.unit = cited->second;
        current->citations.push_back(std::move(c));
      }
    }
    if (!fenced && current && !text.starts_with("#") && !trim(text).empty()) prose.add(number, line_prose);
  }
  end_paragraph();
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
    if (key == "size_bytes") name += "/size:" + value;
    else if (all_digits(value)) name += "/" + key + ":" + value;
    else name += "/" + value;
  }
  if (row.device) {
    name += "/gpu:";
    for (int i = 0; i < row.gpus.value_or(1); ++i) name += (i ? "," : "") + std::to_string(*row.device + i);
  }
  return name + "/iterations:1/repeats:5/manual_time";
}

// What a lesson's citation stands for, in the row's unit: the one run's value, or the set's
// median and the lowest and highest member.
struct evidence {
  std::string kind, family, case_kind;
  std::map<std::string, std::string> wanted;  // statistic, metric and the other keys
  bool set = false;
  double median = 0, low = 0, high = 0;
};

struct interval {
  double low = 0, high = 0;
};

// A claim's formula (docs/plots.md: a, b, ... for its rows in order, numbers, + - * / and
// brackets) over intervals: the lowest and highest value the formula can take when each row lies
// anywhere in its own interval. A point is an interval of width 0.
class formula {
 public:
  formula(std::string_view text, const std::vector<interval>& rows) : text_(text), rows_(rows) {}

  [[nodiscard]] interval value() {
    const interval result = sum();
    skip_spaces();
    if (at_ != text_.size()) fail("unexpected '" + std::string(text_.substr(at_, 1)) + "'");
    return result;
  }

 private:
  interval sum() {
    interval left = product();
    for (skip_spaces(); at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-'); skip_spaces()) {
      const char op = text_[at_++];
      const interval right = product();
      left = op == '+' ? interval{left.low + right.low, left.high + right.high}
                       : interval{left.low - right.high, left.high - right.low};
    }
    return left;
  }

  interval product() {
    interval left = operand();
    for (skip_spaces(); at_ < text_.size() && (text_[at_] == '*' || text_[at_] == '/'); skip_spaces()) {
      const char op = text_[at_++];
      interval right = operand();
      if (op == '/') {
        if (right.low <= 0 && right.high >= 0) fail("a divisor that can be 0");
        right = {1 / right.high, 1 / right.low};
      }
      const double ends[] = {left.low * right.low, left.low * right.high, left.high * right.low, left.high * right.high};
      left = {*std::min_element(std::begin(ends), std::end(ends)), *std::max_element(std::begin(ends), std::end(ends))};
    }
    return left;
  }

  interval operand() {
    skip_spaces();
    if (at_ >= text_.size()) fail("an operand is missing");
    const char c = text_[at_];
    if (c == '(') {
      ++at_;
      const interval inner = sum();
      skip_spaces();
      if (at_ >= text_.size() || text_[at_] != ')') fail("a ')' is missing");
      ++at_;
      return inner;
    }
    if (c == '-') {
      ++at_;
      const interval inner = operand();
      return {-inner.high, -inner.low};
    }
    if (c >= 'a' && c <= 'h') {
      ++at_;
      const auto index = static_cast<std::size_t>(c - 'a');
      if (index >= rows_.size()) fail(std::string("row '") + c + "' is not cited");
      return rows_[index];
    }
    std::size_t used = 0;
    double number = 0;
    try {
      number = std::stod(std::string(text_.substr(at_)), &used);
    } catch (const std::exception&) {
      fail("unexpected '" + std::string(1, c) + "'");
    }
    at_ += used;
    return {number, number};
  }

  void skip_spaces() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("formula '" + std::string(text_) + "': " + what);
  }

  std::string_view text_;
  const std::vector<interval>& rows_;
  std::size_t at_ = 0;
};

// Whether `shown` ("7.7", "2130") is `value` rounded to the digits shown.
bool rounds_to(const std::string& shown, double value) {
  const auto dot = shown.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(shown.size() - dot - 1);
  return std::abs(value - std::stod(shown)) <= 0.5 * std::pow(10.0, -decimals) * (1 + 1e-9) + 1e-12;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The measured numbers of a title: those followed by a unit of time, rate, share or ratio (not
// a size, a count or a name: "1 GiB", "4 streams", "Gen5 x16").
std::vector<std::string> measured_numbers(std::string title) {
  for (const std::string space : {"\u00a0", "\u202f"}) {  // the no-break spaces titles use
    for (auto at = title.find(space); at != std::string::npos; at = title.find(space)) title.replace(at, space.size(), " ");
  }
  static const std::regex measured(R"(([0-9]+(?:\.[0-9]+)?) ?(µs|ms|s|GB/s|TB/s|%|×)(?![A-Za-z]))");
  std::vector<std::string> found;
  for (std::sregex_iterator m(title.begin(), title.end(), measured), end; m != end; ++m) {
    const auto start = static_cast<std::size_t>(m->position(0));
    if (start > 0 && (std::isalnum(static_cast<unsigned char>(title[start - 1])) || title[start - 1] == '.')) continue;
    found.push_back((*m)[1]);
  }
  return found;
}

std::string json_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  return value.dump();
}

class checker {
 public:
  explicit checker(const sources& where) : where_(where) {}

  void check(const lesson& l, const citation& c, std::vector<std::string>& problems) {
    const std::string where = "line " + std::to_string(c.line) + (c.set ? ": cite-set " : ": cite ") + c.body;
    const auto q = parse_query(c.body, where, problems);
    if (!q) return;
    if (c.set) {
      check_set(l, c, *q, where, problems);
      return;
    }
    const auto& members = set_members(q->kind, problems);
    if (!members.empty()) {
      problems.push_back(where + ": reference '" + q->kind + "' is a set of " + std::to_string(members.size()) +
                         " machines; one run is not typical of it, so cite its median and range with 'cite-set'");
      return;
    }
    const results_table* table = reference(q->kind, problems);
    if (!table || !has_columns(*q, *table, q->kind + "/results.csv", where, problems)) return;
    const auto rows = matching_rows(*q, *table);
    if (rows.empty()) {
      problems.push_back(where + ": no such row in " + q->kind + "/results.csv");
      return;
    }
    if (rows.size() > 1) {
      problems.push_back(where + ": " + std::to_string(rows.size()) + " rows match; tell them apart by " + differing(rows, *table));
      return;
    }
    const result_row& row = *rows.front();
    check_value(row, c, where, problems);
    check_command(l, c, row, where, problems);
    if (row.value) evidence_.push_back({q->kind, q->family, q->case_kind, q->wanted, false, *row.value, *row.value, *row.value});
  }

  // Titles against their lesson (the header's "Titles"), after the lesson's citations were checked.
  void check_titles(const lesson& l, std::vector<std::string>& problems) {
    for (const auto& link : l.figures) {
      const std::string where = "line " + std::to_string(link.line) + ": figure " + link.file.filename().string();
      const nlohmann::json* figure = indexed_figure(link, where, problems);
      if (!figure) continue;
      const std::string title = figure->value("title", "");
      const std::string name = figure->value("name", "");
      const auto claims = figure->value("claims", nlohmann::json::array());
      for (const auto& number : measured_numbers(title)) {
        const bool claimed = std::any_of(claims.begin(), claims.end(), [&](const nlohmann::json& c) { return c.value("text", "") == number; });
        if (!claimed) {
          problems.push_back(where + ": the title of " + name + " says " + number +
                             " with no claim in figures.json naming its rows, so its lesson cannot be held to it: \"" + title + "\"");
        }
      }
      const std::string kind = figure_kind(link.file);
      const bool this_run = lowercase(title).find("this run") != std::string::npos;
      for (const auto& c : claims) check_claim(l, c, name, kind, this_run, where, problems);
    }
  }

  // Evidence is per lesson: a figure is held to the citations of the lesson that links it.
  void start_lesson() { evidence_.clear(); }

  // Each cited kind's run id, which the page must name (a re-measured reference changes it).
  [[nodiscard]] std::map<std::string, std::string> run_ids() const {
    std::map<std::string, std::string> ids;
    for (const auto& [kind, table] : tables_) {
      if (table && !table->rows.empty()) ids[kind] = table->rows.front().run_id;
    }
    return ids;
  }

 private:
  // What a citation asks for: `<kind> <family>/<case> key=value ...`, the same for both kinds.
  struct query {
    std::string kind, family, case_kind;
    std::map<std::string, std::string> wanted;  // statistic, metric and the other keys
  };

  static std::optional<query> parse_query(const std::string& body, const std::string& where, std::vector<std::string>& problems) {
    std::istringstream words(body);
    std::string kind, family_case;
    words >> kind >> family_case;
    const auto slash = family_case.find('/');
    if (kind.empty() || slash == std::string::npos) {
      problems.push_back(where + ": needs '<kind> <family>/<case> key=value ...'");
      return std::nullopt;
    }
    query q{kind, family_case.substr(0, slash), family_case.substr(slash + 1), {{"statistic", "median"}}};
    for (std::string pair; words >> pair;) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos) {
        problems.push_back(where + ": '" + pair + "' is not key=value");
        return std::nullopt;
      }
      q.wanted[pair.substr(0, eq)] = expand_size(pair.substr(eq + 1));
    }
    if (!q.wanted.contains("metric")) {
      problems.push_back(where + ": names no metric=");
      return std::nullopt;
    }
    return q;
  }

  static bool has_columns(const query& q, const results_table& table, const std::string& file, const std::string& where,
                          std::vector<std::string>& problems) {
    for (const auto& [key, value] : q.wanted) {
      const bool core = key == "metric" || key == "statistic" || key == "device" || key == "gpus";
      if (!core && std::find(table.param_columns.begin(), table.param_columns.end(), key) == table.param_columns.end()) {
        problems.push_back(where + ": " + file + " has no column '" + key + "'");
        return false;
      }
    }
    return true;
  }

  static std::vector<const result_row*> matching_rows(const query& q, const results_table& table) {
    std::vector<const result_row*> rows;
    for (const auto& row : table.rows) {
      if (row.family == q.family && row.case_name == q.case_kind && matches(row, q.wanted)) rows.push_back(&row);
    }
    return rows;
  }

  // The set's members, <kind>/runs/<run>/results.csv in name order; empty when <kind> has no runs/
  // (a single-run reference). A member that cannot be read is a problem, once.
  struct member {
    std::string run;
    results_table table;
  };

  const std::vector<member>& set_members(const std::string& kind, std::vector<std::string>& problems) {
    auto found = sets_.find(kind);
    if (found != sets_.end()) return found->second;
    std::vector<member> members;
    const fs::path runs = where_.reference_root / kind / "runs";
    if (fs::is_directory(runs)) {
      std::vector<fs::path> dirs;
      for (const auto& entry : fs::directory_iterator(runs)) {
        if (entry.is_directory()) dirs.push_back(entry.path());
      }
      std::sort(dirs.begin(), dirs.end());
      for (const auto& dir : dirs) {
        try {
          members.push_back({dir.filename().string(), read_results_csv(read_text_file(dir / "results.csv"))});
        } catch (const std::exception& e) {
          problems.push_back("set '" + kind + "', member " + dir.filename().string() + ": " + e.what());
        }
      }
    }
    return sets_.emplace(kind, std::move(members)).first->second;
  }

  // The written number against value rounded to the decimals written; the rounded text when they differ.
  static std::optional<std::string> differs_at_precision(const std::string& written, double value) {
    const auto dot = written.find('.');
    const int decimals = dot == std::string::npos ? 0 : static_cast<int>(written.size() - dot - 1);
    char rounded[64];
    std::snprintf(rounded, sizeof rounded, "%.*f", decimals, value);
    if (written == rounded) return std::nullopt;
    return std::string(rounded);
  }

  static double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  }

  void check_set(const lesson& l, const citation& c, const query& q, const std::string& where, std::vector<std::string>& problems) {
    const auto& members = set_members(q.kind, problems);
    if (members.empty()) {
      problems.push_back(where + ": reference '" + q.kind + "' is no set (no " + q.kind +
                         "/runs/<run>/results.csv); a single run is cited with 'cite', and the page says it is one run");
      return;
    }
    std::vector<double> values;
    const result_row* first = nullptr;
    for (const auto& m : members) {
      if (!has_columns(q, m.table, q.kind + "/runs/" + m.run + "/results.csv", where, problems)) return;
      const auto rows = matching_rows(q, m.table);
      if (rows.size() > 1) {
        problems.push_back(where + ": " + std::to_string(rows.size()) + " rows of member " + m.run +
                           " match; tell them apart by " + differing(rows, m.table));
        return;
      }
      if (rows.empty() || !rows.front()->value) continue;  // this machine did not measure it
      if (!first) first = rows.front();
      values.push_back(*rows.front()->value);
    }
    if (!first) {
      problems.push_back(where + ": no member of set '" + q.kind + "' holds the row");
      return;
    }
    const auto factor = unit_factor(first->unit, c.unit);
    if (!factor) {
      problems.push_back(where + ": written in '" + c.unit + "', the row is in " + first->unit);
      return;
    }
    const double median = median_of(values) * *factor;
    const double low = *std::min_element(values.begin(), values.end()) * *factor;
    const double high = *std::max_element(values.begin(), values.end()) * *factor;
    const std::string holders = std::to_string(values.size()) + " of the " + std::to_string(members.size()) +
                                " members of set '" + q.kind + "' hold the row";
    if (const auto rounded = differs_at_precision(c.number, median)) {
      problems.push_back(where + ": the page says a median of " + c.number + " " + c.unit + ", the members' median is " +
                         format_value(median) + " (" + *rounded + " at the precision written; " + holders + ")");
    }
    const auto low_rounded = differs_at_precision(c.low, low);
    const auto high_rounded = differs_at_precision(c.high, high);
    if (low_rounded || high_rounded) {
      problems.push_back(where + ": the page says a range of " + c.low + "–" + c.high + " " + c.unit + ", the members span " +
                         format_value(low) + "–" + format_value(high) + " (" + low_rounded.value_or(c.low) + "–" +
                         high_rounded.value_or(c.high) + " at the precision written)");
    }
    if (!c.count.empty() && c.count != std::to_string(values.size())) {
      problems.push_back(where + ": the page says over " + c.count + " machines, " + holders);
    } else if (c.count.empty() && values.size() != members.size()) {
      problems.push_back(where + ": a range without 'over N machines' is over every member, but only " + holders +
                         ": write 'over " + std::to_string(values.size()) + " machines'");
    }
    check_command(l, c, *first, where, problems);
    evidence_.push_back({q.kind, q.family, q.case_kind, q.wanted, true, median_of(values),
                         *std::min_element(values.begin(), values.end()), *std::max_element(values.begin(), values.end())});
  }

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

  // A lesson's command must run the cited row's case; an exercise's answer, one of the exercise's.
  void check_command(const lesson& l, const citation& c, const result_row& row, const std::string& where,
                     std::vector<std::string>& problems) {
    const case_decl* kind = declaration(row.family, row.case_name, problems);
    if (!kind) return;
    const auto name = benchmark_name(row, *kind);
    for (const auto& cmd : l.commands) {
      if (c.exercise != cmd.exercise) continue;  // each part of the lesson runs what it cites
      if (std::find(cmd.families.begin(), cmd.families.end(), row.family) == cmd.families.end()) continue;
      if (!cmd.filter || std::regex_search(name, *cmd.filter)) return;
    }
    problems.push_back(where + ": no run command of " + (c.exercise ? "the exercise of " : "") + "lesson '" + l.title +
                       "' runs " + name);
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

  // The figures.json entry of a linked figure (plots/figures.json beside it, the entry whose files
  // hold its name); a problem and nullptr when there is none.
  const nlohmann::json* indexed_figure(const linked_figure& link, const std::string& where, std::vector<std::string>& problems) {
    const fs::path index = link.file.parent_path() / "figures.json";
    auto found = indexes_.find(index);
    if (found == indexes_.end()) {
      std::optional<nlohmann::json> parsed;
      if (const auto text = try_read_text_file(index)) {
        try {
          parsed = nlohmann::json::parse(*text);
        } catch (const nlohmann::json::exception& e) {
          problems.push_back(where + ": " + index.string() + " is not JSON: " + e.what());
        }
      }
      found = indexes_.emplace(index, std::move(parsed)).first;
    }
    if (!found->second) {
      problems.push_back(where + ": no plots/figures.json beside it, so its title cannot be held to the lesson");
      return nullptr;
    }
    const std::string file = link.file.filename().string();
    const nlohmann::json& index_json = *found->second;
    const auto figures = index_json.is_object() ? index_json.find("figures") : index_json.end();
    if (figures == index_json.end() || !figures->is_array()) {
      problems.push_back(where + ": " + index.string() + " has no list of figures");
      return nullptr;
    }
    for (const auto& figure : *figures) {  // a reference into the index, which outlives the check
      const auto files = figure.value("files", nlohmann::json::array());
      if (std::any_of(files.begin(), files.end(), [&](const nlohmann::json& f) { return f.is_string() && f.get<std::string>() == file; })) {
        return &figure;
      }
    }
    problems.push_back(where + ": " + index.string() + " lists no figure drawn to " + file);
    return nullptr;
  }

  // The reference a figure belongs to: <reference_root>/<kind>/plots/<file>; "" for another place.
  [[nodiscard]] std::string figure_kind(const fs::path& file) const {
    const fs::path run = fs::weakly_canonical(file).parent_path().parent_path();
    return run.parent_path() == fs::weakly_canonical(where_.reference_root) ? run.filename().string() : "";
  }

  // The lesson's citation of one claim's cite, when it has one: the same reference, family and
  // case, and every column the citation names equal to the cite's.
  [[nodiscard]] const evidence* cited_by_lesson(const nlohmann::json& cite, const std::string& kind) const {
    if (!cite.is_object() || !cite.contains("family") || !cite.contains("case")) return nullptr;
    for (const auto& e : evidence_) {
      if (e.kind != kind || json_text(cite["family"]) != e.family || json_text(cite["case"]) != e.case_kind) continue;
      const bool same = std::all_of(e.wanted.begin(), e.wanted.end(), [&](const auto& kv) {
        return cite.contains(kv.first) && json_text(cite[kv.first]) == kv.second;
      });
      if (same) return &e;
    }
    return nullptr;
  }

  // One claim of a linked figure against its lesson, when the lesson cites every row it is built from.
  void check_claim(const lesson& l, const nlohmann::json& claim, const std::string& name, const std::string& kind, bool this_run, const std::string& where, std::vector<std::string>& problems) const {
    const auto cites = claim.value("cites", nlohmann::json::array());
    std::vector<const evidence*> rows;
    for (const auto& cite : cites) rows.push_back(cited_by_lesson(cite, kind));
    if (rows.empty() || std::find(rows.begin(), rows.end(), nullptr) != rows.end()) return;  // not a quantity of the lesson
    const std::string text = claim.value("text", "");
    const std::string rule = claim.value("formula", "a");
    const double value = claim.value("value", std::nan(""));
    const bool set = std::any_of(rows.begin(), rows.end(), [](const evidence* e) { return e->set; });
    std::vector<interval> middles, spans;
    for (const evidence* e : rows) {
      middles.push_back({e->median, e->median});
      spans.push_back({e->low, e->high});
    }
    const std::string what = where + ": the title of " + name + " says " + text + " (" + rule + " of rows lesson '" + l.title + "' cites)";
    try {
      if (set && this_run) {
        const interval span = formula(rule, spans).value();
        const double slack = 1e-9 * std::max(std::abs(span.low), std::abs(span.high));
        if (!(value >= span.low - slack && value <= span.high + slack)) {
          problems.push_back(what + " for this run, " + format_value(value) + ", outside the set's range " +
                             format_value(span.low) + "–" + format_value(span.high));
        }
        return;
      }
      const double lesson_value = formula(rule, middles).value().low;
      if (!rounds_to(text, lesson_value)) {
        problems.push_back(what + ", the lesson's " + (set ? "set median gives " : "row gives ") + format_value(lesson_value) +
                           (set ? ": a figure of one run says \"This run\" and lies in the set's range" : ""));
      }
    } catch (const std::exception& e) {
      problems.push_back(what + ": " + e.what());
    }
  }

  sources where_;
  std::vector<evidence> evidence_;
  std::map<fs::path, std::optional<nlohmann::json>> indexes_;
  std::map<std::string, std::optional<results_table>> tables_;
  std::map<std::string, std::vector<member>> sets_;
  std::map<std::string, std::optional<family_declaration>> declarations_;
};

}  // namespace

std::vector<std::string> check_page(std::string_view markdown, const sources& where) {
  page parsed = parse_page(markdown, where.page_dir);
  checker check(where);
  for (const auto& l : parsed.lessons) {
    const std::string name = "lesson '" + l.title + "' (line " + std::to_string(l.line) + ")";
    if (!l.pending) {
      if (l.citations.empty()) parsed.problems.push_back(name + " cites no number (or mark it <!-- pending: WHY -->)");
      if (l.plots == 0) parsed.problems.push_back(name + " links no plot");
      if (l.commands.empty()) parsed.problems.push_back(name + " has no `hdbench run` command");
    }
    check_exercise(l, name, parsed.problems);
    check.start_lesson();
    for (const auto& c : l.citations) check.check(l, c, parsed.problems);
    check.check_titles(l, parsed.problems);
    check_reasons(l, parsed.problems);
  }
  for (const auto& [kind, run_id] : check.run_ids()) {
    if (markdown.find(run_id) == std::string_view::npos) {
      parsed.problems.push_back("the page never names run " + run_id + " of reference '" + kind + "'");
    }
  }
  return parsed.problems;
}

}  // namespace hdb::teaching
