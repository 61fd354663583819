#include "measure/measure_table.h"

#include <algorithm>
#include <cmath>

#include "report/format.h"

namespace tally {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// SI-prefixed value with two decimals: 3.54e9 Hz -> "3.54 GHz".
std::string Si(double value, const std::string& unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (i < 6 && std::fabs(value) >= 1000) value /= 1000, ++i;
  return FormatFixed(value) + " " + kPrefixes[i] + unit;
}

// measure's doubles carry their unit in the key (STYLE: _s, _per_s, _hz).
std::string HumanDouble(const std::string& key, double v) {
  if (EndsWith(key, "flop_per_s")) return FormatFlops(v) + "/s";
  if (EndsWith(key, "bytes_per_s")) return Si(v, "B/s");
  if (EndsWith(key, "_hz")) return Si(v, "Hz");
  if (EndsWith(key, "_mhz")) return FormatFixed(v, 0) + " MHz";
  if (EndsWith(key, "_s") || key.find("seconds") != std::string::npos) return FormatSeconds(v);
  if (key == "flop_per_cycle") return FormatDouble(v);
  return FormatFixed(v, 3);
}

void Humanize(const ReportNode& node, const std::string& path, Report& out) {
  for (const ReportNode& c : node.children) {
    const std::string key = path.empty() ? c.key : path + "." + c.key;
    if (c.is_group) {
      out.Group(key, c.label);
      Humanize(c, key, out);
    } else if (const auto* d = std::get_if<double>(&c.value)) {
      out.Set(key, c.label, HumanDouble(c.key, *d), Unit::kText, c.explain);
    } else {
      out.Set(key, c.label, c.value, c.unit, c.explain);
    }
  }
}

const Value* Field(const Report::Record& r, const std::string& key) {
  for (const auto& [k, v] : r) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Cell(const Report::Record& r, const std::string& key) {
  const Value* v = Field(r, key);
  if (v == nullptr) return "";
  if (const auto* d = std::get_if<double>(v)) return HumanDouble(key, *d);
  return ValueText(*v);
}

std::string ResultsTable(const Report& report) {
  const bool model = !report.records.empty() && Field(report.records.front(), "count") != nullptr;
  // A GPU has no FMA probe: its mfu_probed column would be all zeros.
  const bool cpu = !report.records.empty() && Cell(report.records.front(), "device") == "cpu";
  std::vector<std::string> keys =
      model ? std::vector<std::string>{"shape", "count", "passes", "dtype", "threads", "seconds", "cv", "flop_per_s",
                                       "mfu", "step_seconds", "path"}
            : std::vector<std::string>{"shape", "dtype", "threads", "seconds", "seconds_min", "seconds_max", "cv",
                                       "flop_per_s", "mfu", "mfu_probed"};
  if (!cpu && !model) keys.pop_back();
  std::vector<std::vector<std::string>> lines = {{"m x n x k"}};
  for (size_t i = 1; i < keys.size(); ++i) lines[0].push_back(keys[i] == "seconds" ? "median" : keys[i]);
  for (const Report::Record& r : report.records) {
    const std::string layout = Cell(r, "layout");
    std::vector<std::string> line = {Cell(r, "m") + "x" + Cell(r, "n") + "x" + Cell(r, "k") +
                                     (layout.empty() || layout == "NN" ? "" : ":" + layout)};
    for (size_t i = 1; i < keys.size(); ++i) line.push_back(Cell(r, keys[i]));
    lines.push_back(line);
  }
  std::vector<size_t> width(keys.size(), 0);
  for (const auto& l : lines) {
    for (size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], l[i].size());
  }
  std::string out = "\nResults\n";
  for (const auto& l : lines) {
    std::string text = " ";
    for (size_t i = 0; i < l.size(); ++i) {
      const bool left = keys[i] == "shape" || keys[i] == "passes" || keys[i] == "dtype" || keys[i] == "path";
      const std::string fill(width[i] - l[i].size(), ' ');
      text += " " + (left ? l[i] + fill : fill + l[i]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

}  // namespace

std::string FormatSeconds(double s) {
  if (std::fabs(s) >= 1 || s == 0) return FormatFixed(s) + " s";
  if (std::fabs(s) >= 1e-3) return FormatFixed(s * 1e3) + " ms";
  return FormatFixed(s * 1e6) + " us";
}

std::string FormatMeasureTable(const Report& report, UnitSystem units, bool explain) {
  Report human;
  Humanize(report.root(), "", human);
  std::string out = FormatTable(human, units, explain);
  if (!report.records.empty()) out += ResultsTable(report);
  return out;
}

}  // namespace tally
