// The human table: one section per report group, values in human units with the exact integer
// beside them, sized for an 80-column terminal.
#include <algorithm>
#include <cmath>

#include "report/format.h"
#include "util/text.h"

namespace tally {
namespace {

constexpr size_t kLabelWidth = 44;
constexpr size_t kValueWidth = 14;


std::string Pad(const std::string& text, size_t width, bool right) {
  // Width in code points, so that "·" and "÷" in labels do not skew the columns.
  size_t shown = static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
  std::string fill(shown < width ? width - shown : 0, ' ');
  return right ? fill + text : text + fill;
}

// The human value and, for large integers, the exact one.
std::pair<std::string, std::string> Render(const ReportNode& leaf, UnitSystem units) {
  const auto* n = std::get_if<uint64_t>(&leaf.value);
  switch (leaf.unit) {
    case Unit::kCount:
      if (n) return {FormatCount(*n), *n >= 1000 ? FormatGrouped(*n) : ""};
      if (const auto* d = std::get_if<double>(&leaf.value); d && *d >= 0 && *d < 1.8e19) {
        return {FormatCount(static_cast<uint64_t>(std::llround(*d))), ""};
      }
      break;
    case Unit::kFlop:
      if (n) return {FormatFlops(static_cast<double>(*n)), *n >= 1000 ? FormatGrouped(*n) : ""};
      return {FormatFlops(std::get<double>(leaf.value)), ""};
    case Unit::kMac:
      if (n) return {FormatCount(*n) + " MAC", *n >= 1000 ? FormatGrouped(*n) : ""};
      break;
    case Unit::kByte:
      if (n) return {FormatBytes(*n, units), *n >= 1024 ? FormatGrouped(*n) + " B" : ""};
      break;
    case Unit::kNumber:
      if (n) return {FormatGrouped(*n), ""};
      break;
    case Unit::kSecond:
      if (const auto* d = std::get_if<double>(&leaf.value)) return {FormatDuration(*d), ""};
      break;
    case Unit::kBytePerSecond:
      if (const auto* d = std::get_if<double>(&leaf.value); d && *d >= 0 && *d < 1.8e19) {
        return {FormatBytes(static_cast<uint64_t>(*d), UnitSystem::kSi) + "/s", ""};
      }
      break;
    case Unit::kFlopPerSecond:
      if (const auto* d = std::get_if<double>(&leaf.value)) return {FormatRate(*d), ""};
      break;
    case Unit::kRatio:
      if (const auto* d = std::get_if<double>(&leaf.value)) return {FormatFixed(*d, 3), ""};
      break;
    case Unit::kText:
    case Unit::kBool:
      break;
  }
  return {ValueText(leaf.value), ""};
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
  const int cells = static_cast<int>(share * kBarWidth + 0.5);
  for (int i = 0; i < cells; ++i) bar += "\u2588";
  return Pad(FormatFixed(share * 100, 1) + "%", 8, true) + "  " + bar;
}

void RenderGroup(const ReportNode& group, size_t indent, const TableStyle& style, std::string& out) {
  const ReportNode* total = group.ledger ? group.Child("total") : nullptr;
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
    auto [human, exact] = Render(c, style.units);
    std::string line = Pad(pad + EscapeControl(c.Label()), kLabelWidth, false);
    if (c.unit == Unit::kText || c.unit == Unit::kBool) {
      line += " " + EscapeControl(human);
    } else if (total != nullptr && &c != total && c.unit == Unit::kByte) {
      line += Pad(human, kValueWidth, true) + Share(std::get<uint64_t>(c.value), std::get<uint64_t>(total->value));
    } else {
      line += Pad(human, kValueWidth, true);
      if (!exact.empty()) line += "  " + Pad(exact, 20, true);
    }
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
    if (!section.is_group) {  // a top-level leaf
      RenderGroup(ReportNode{.children = {section}}, 0, style, out);
      continue;
    }
    out += EscapeControl(section.Label()) + "\n";
    RenderGroup(section, 2, style, out);
  }
  if (!report.layers.empty()) {
    out += "\nLayers" + std::string(kLabelWidth - 6, ' ') + Pad("params", kValueWidth, true) +
           Pad("forward FLOPs", 22, true) + "\n";
    for (const LayerRow& l : report.layers) {
      out += Pad("  " + EscapeControl(l.path) + " (" + l.kind + ")", kLabelWidth, false) + Pad(FormatCount(l.params), kValueWidth, true) +
             Pad(FormatFlops(static_cast<double>(l.flops.forward)), 22, true) + "\n";
      if (explain) {
        for (const std::string& f : l.formulas) out += "      = " + f + "\n";
      }
    }
  }
  return out;
}

}  // namespace tally
