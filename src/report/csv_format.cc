// CSV (RFC 4180) and TSV: a header of dotted keys and one row per configuration, or with --layers
// one row per graph node. Text is quoted only when it must be.
#include "report/format.h"
#include "util/text.h"

namespace tally {
namespace {

std::string Field(const std::string& raw, char separator) {
  // No control character reaches a terminal raw; line breaks are data that CSV quotes.
  const std::string text = EscapeControl(raw, true);
  if (separator == '\t') {
    std::string out = text;  // TSV has no quoting: tabs and line breaks become spaces
    for (char& c : out) {
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    }
    return out;
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Row(const std::vector<std::string>& fields, char separator) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? std::string(1, separator) : "") + Field(fields[i], separator);
  return out + "\n";  // LF, not RFC 4180's CRLF: friendlier to shell tools
}

std::string LayerRows(const Report& report, char separator) {
  std::string out = Row({"path", "kind", "component", "shape", "params", "flops.forward", "flops.backward",
                         "flops.non_matmul.forward"},
                        separator);
  for (const LayerRow& l : report.layers) {
    std::string shape;
    for (uint64_t d : l.shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    out += Row({l.path, l.kind, l.component, shape, std::to_string(l.params), std::to_string(l.flops.forward),
                std::to_string(l.flops.backward), std::to_string(l.flops.non_matmul_forward)},
               separator);
  }
  return out;
}

}  // namespace

std::string FormatDelimited(const Report& report, char separator) {
  if (!report.records_path.empty()) {
    std::vector<std::string> header;
    if (!report.records.empty()) {
      for (const auto& field : report.records.front()) header.push_back(field.first);
    }
    std::string out = Row(header, separator);
    for (const Report::Record& r : report.records) {
      std::vector<std::string> row;
      for (const auto& field : r) row.push_back(ValueText(field.second));
      out += Row(row, separator);
    }
    return out;
  }
  if (!report.rows.empty()) {
    std::string out = Row(report.columns, separator);
    for (const std::vector<std::string>& row : report.rows) out += Row(row, separator);
    return out;
  }
  if (!report.layers.empty()) return LayerRows(report, separator);
  std::vector<std::string> keys = report.LeafKeys();
  std::vector<std::string> values;
  for (const std::string& k : keys) values.push_back(ValueText(report.Find(k)->value));
  return Row(keys, separator) + Row(values, separator);
}

}  // namespace tally
