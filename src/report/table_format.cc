// The human table: one section per report group, values in human units with the exact integer
// beside them, sized for an 80-column terminal.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/format.h"
#include "util/text.h"

namespace tally {
namespace {

constexpr size_t kLabelWidth = 44;
constexpr size_t kValueWidth = 14;

// Width in code points, so that "·" and "÷" in labels do not skew the columns.
size_t Width(const std::string& text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string Pad(const std::string& text, size_t width, bool right) {
  const size_t shown = Width(text);
  std::string fill(shown < width ? width - shown : 0, ' ');
  return right ? fill + text : text + fill;
}

// `label` then `value`, at least two spaces apart: a label past its column would run into a value
// that fills its own ("batch per replica (micro-batch x grad-accum)1,099,511,627,776").
std::string Beside(const std::string& label, const std::string& value) {
  const bool apart = (!label.empty() && label.back() == ' ') || (!value.empty() && value.front() == ' ');
  return label + (apart ? "" : "  ") + value;
}

// SI-prefixed with two decimals: 3.54e9 Hz -> "3.54 GHz".
std::string Si(double value, const char* unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (i < 6 && std::fabs(value) >= 1000) value /= 1000, ++i;
  return FormatFixed(value) + " " + kPrefixes[i] + unit;
}

// The human value and, for large integers, the exact one.
std::pair<std::string, std::string> Render(const Value& value, Unit unit, UnitSystem units) {
  const auto* n = std::get_if<uint64_t>(&value);
  const auto* d = std::get_if<double>(&value);
  // A negative double (check's margin when a limit fails) prints as its magnitude with a sign.
  if (d != nullptr && *d < 0 && unit != Unit::kRatio && unit != Unit::kTimes && unit != Unit::kReal) {
    return {"-" + Render(-*d, unit, units).first, ""};
  }
  switch (unit) {
    case Unit::kCount:
      if (n) return {FormatCount(*n), *n >= 1000 ? FormatGrouped(*n) : ""};
      if (d && *d < 1.8e19) return {FormatCount(static_cast<uint64_t>(std::llround(*d))), ""};
      break;
    case Unit::kFlop:
      if (n) return {FormatFlops(static_cast<double>(*n)), *n >= 1000 ? FormatGrouped(*n) : ""};
      if (d) return {FormatFlops(*d), ""};
      break;
    case Unit::kMac:
      if (n) return {FormatCount(*n) + " MAC", *n >= 1000 ? FormatGrouped(*n) : ""};
      break;
    case Unit::kByte:
      if (n) return {FormatBytes(*n, units), *n >= 1024 ? FormatGrouped(*n) + " B" : ""};
      if (d && *d < 1.8e19) return {FormatBytes(static_cast<uint64_t>(std::llround(*d)), units), ""};
      break;
    case Unit::kNumber:
      if (n) return {FormatGrouped(*n), ""};
      break;
    case Unit::kSecond:
      if (d) return {FormatDuration(*d), ""};
      if (n) return {FormatDuration(static_cast<double>(*n)), ""};  // a whole-second limit
      break;
    case Unit::kBytePerSecond:
      if (d && *d < 1.8e19) return {FormatBytes(static_cast<uint64_t>(*d), UnitSystem::kSi) + "/s", ""};
      break;
    case Unit::kFlopPerSecond:
      if (d) return {FormatRate(*d), ""};
      break;
    case Unit::kHertz:
      if (d) return {Si(*d, "Hz"), ""};
      break;
    case Unit::kMegahertz:
      if (d) return {FormatFixed(*d, 0) + " MHz", ""};
      break;
    case Unit::kRatio:
      if (d) return {FormatFixed(*d, 3), ""};
      break;
    case Unit::kTimes:
      if (d) return {FormatFixed(*d, 2) + "\u00d7", ""};
      break;
    case Unit::kReal:
      if (d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.4g", *d);
        return {buf, ""};
      }
      break;
    case Unit::kText:
    case Unit::kBool:
    case Unit::kShape:
      break;
  }
  return {ValueText(value), ""};
}

bool IsText(Unit unit) { return unit == Unit::kText || unit == Unit::kBool || unit == Unit::kShape; }

// The one column layout: each column as wide as its widest cell, two spaces apart, numbers
// right-aligned and text left-aligned; no trailing spaces.
std::vector<std::string> AlignColumns(const std::vector<std::vector<std::string>>& lines,
                                      const std::vector<bool>& right, size_t indent) {
  std::vector<size_t> width(right.size(), 0);
  for (const auto& l : lines) {
    for (size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], Width(l[i]));
  }
  std::vector<std::string> out;
  for (const auto& l : lines) {
    std::string line(indent, ' ');
    for (size_t i = 0; i < l.size(); ++i) line += (i ? "  " : "") + Pad(l[i], width[i], right[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(line);
  }
  return out;
}

struct TableStyle {
  UnitSystem units;
  bool explain;
};

// A ledger line's share of the ledger's total and a bar of kBarWidth cells.
std::string Share(uint64_t part, uint64_t total) {
  constexpr int kBarWidth = 12;
  const double share = total == 0 ? 0 : static_cast<double>(part) / static_cast<double>(total);
  std::string bar;
  const int cells = static_cast<int>(std::lround(share * kBarWidth));  // share is in [0, 1]
  for (int i = 0; i < cells; ++i) bar += "\u2588";
  return Pad(FormatFixed(share * 100, 1) + "%", 8, true) + "  " + bar;
}

// A table node: a header of column labels, then one aligned line per row ("-" for no value).
void RenderTable(const Table& table, size_t indent, const TableStyle& style, std::string& out) {
  std::vector<size_t> shown;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c].shown) shown.push_back(c);
  }
  std::vector<std::vector<std::string>> lines(1);
  std::vector<bool> right;
  for (size_t c : shown) {
    lines[0].push_back(table.columns[c].Label());
    right.push_back(!IsText(table.columns[c].unit));
  }
  for (size_t r = 0; r < table.rows.size(); ++r) {
    std::vector<std::string> line;
    for (size_t c : shown) {
      const Cell& cell = table.rows[r][c];
      // Names and paths come from the user's files: no control character reaches the terminal.
      line.push_back(cell ? EscapeControl(Render(*cell, table.UnitOf(r, c), style.units).first) : "-");
    }
    lines.push_back(std::move(line));
  }
  const std::vector<std::string> aligned = AlignColumns(lines, right, indent);
  for (size_t i = 0; i < aligned.size(); ++i) {
    out += aligned[i] + "\n";
    if (!style.explain || i == 0 || i - 1 >= table.explain.size()) continue;
    const std::string& text = table.explain[i - 1];
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out += std::string(indent + 4, ' ') + "= " + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
}

void RenderGroup(const ReportNode& group, size_t indent, const TableStyle& style, std::string& out) {
  const ReportNode* total = group.ledger ? group.Child("total") : nullptr;
  bool past_total = false;  // lines after a ledger's total (its peak, the device's overheads) are no shares of it
  for (const ReportNode& c : group.children) {
    std::string pad(indent, ' ');
    // An untitled group holding one leaf reads better as that one line.
    if (c.is_group && c.label.empty() && c.children.size() == 1 && !c.children[0].is_group) {
      RenderGroup(c, indent, style, out);
      continue;
    }
    if (c.is_group) {
      out += pad + EscapeControl(c.Label()) + "\n";
      RenderGroup(c, indent + 2, style, out);
      continue;
    }
    if (c.table != nullptr) {
      out += pad + c.Label() + "\n";
      RenderTable(*c.table, indent + 2, style, out);
      continue;
    }
    auto [human, exact] = Render(c.value, c.unit, style.units);
    std::string line = Pad(pad + EscapeControl(c.Label()), kLabelWidth, false);
    if (c.unit == Unit::kText || c.unit == Unit::kBool) {
      line += " " + EscapeControl(human);
    } else if (total != nullptr && &c != total && !past_total && c.unit == Unit::kByte) {
      line = Beside(line, Pad(human, kValueWidth, true)) +
             Share(std::get<uint64_t>(c.value), std::get<uint64_t>(total->value));
    } else {
      line = Beside(line, Pad(human, kValueWidth, true));
      if (!exact.empty()) line += "  " + Pad(exact, 20, true);
    }
    if (&c == total) past_total = true;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (style.explain && !c.explain.empty()) out += pad + "    = " + c.explain + "\n";
  }
}

}  // namespace

std::string FormatTable(const Report& report, UnitSystem units, bool explain) {
  std::string out;
  const TableStyle style{units, explain};
  for (const ReportNode& section : report.root().children) {
    if (!out.empty()) out += "\n";
    if (section.table != nullptr) {
      out += section.Label() + "\n";
      RenderTable(*section.table, 2, style, out);
      continue;
    }
    if (!section.is_group) {  // a top-level leaf
      RenderGroup(ReportNode{.children = {section}}, 0, style, out);
      continue;
    }
    out += EscapeControl(section.Label()) + "\n";
    RenderGroup(section, 2, style, out);
  }
  return out;
}

}  // namespace tally
