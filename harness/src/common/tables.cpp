#include "hdb/harness/common/tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace hdb {
namespace {

std::string markdown_cell(const std::string& text) {
  std::string cell;
  for (const char c : text) {
    if (c == '|') cell += "\\|";
    else if (c == '\n' || c == '\r') cell += ' ';
    else cell += c;
  }
  return cell;
}

}  // namespace

std::string text_table(const std::vector<std::string>& header, const table_rows& rows) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const auto& cell = c < cells.size() ? cells[c] : std::string();
      text += cell;
      if (c + 1 < width.size()) text += std::string(width[c] - cell.size() + 2, ' ');
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

std::string markdown_table(const std::vector<std::string>& header, const table_rows& rows) {
  const auto line = [](const std::vector<std::string>& cells) {
    std::string text = "|";
    for (const auto& cell : cells) text += " " + markdown_cell(cell) + " |";
    return text + "\n";
  };
  std::string out = line(header);
  out += "|";
  for (std::size_t c = 0; c < header.size(); ++c) out += "---|";
  out += "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string format_figure(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string percent_text(double fraction, percent_style style) {
  const double percent = 100 * fraction;
  if (style == percent_style::plain) return format_figure(percent) + " %";
  const std::string sign = style == percent_style::signed_change ? (percent >= 0 ? "+" : "-") : (percent >= 0 ? "" : "-");
  if (!std::isfinite(percent)) return sign + "inf %";
  return sign + format_fixed(std::abs(percent), 1) + " %";
}

std::string gpu_text(const std::vector<int>& gpus) {
  if (gpus.empty()) return "node";
  std::string text = "GPU ";
  for (std::size_t i = 0; i < gpus.size(); ++i) text += (i ? "," : "") + std::to_string(gpus[i]);
  return text;
}

std::string format_fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace hdb
