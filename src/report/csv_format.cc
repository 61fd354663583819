// CSV (RFC 4180) and TSV: a header of dotted keys and one row per configuration, or for a list
// (presets, results, sweep points, --layers) one row per item. Text is quoted only when it must be.
#include <algorithm>
#include <charconv>
#include <ostream>

#include "report/format.h"
#include "report/writer.h"
#include "util/text.h"

namespace tally {
namespace {

void AppendField(const std::string& raw, char separator, std::string& out) {
  // Printable ASCII without the separator or a quote goes out as it is: most cells are.
  const bool plain = std::all_of(raw.begin(), raw.end(), [separator](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != separator && c != '"';
  });
  if (plain) {
    out += raw;
    return;
  }
  // No control character reaches a terminal raw; line breaks are data that CSV quotes.
  const std::string text = EscapeControl(raw, true);
  if (separator == '\t') {
    for (char c : text) out += c == '\t' || c == '\n' || c == '\r' ? ' ' : c;  // TSV has no quoting
    return;
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void AppendRow(const std::vector<std::string>& fields, char separator, std::string& out) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += separator;
    AppendField(fields[i], separator, out);
  }
  out += '\n';  // LF, not RFC 4180's CRLF: friendlier to shell tools
}

class DelimitedWriter : public BufferedTableWriter {
 public:
  DelimitedWriter(std::ostream& out, char separator, const Table& header)
      : BufferedTableWriter(out), separator_(separator) {
    std::vector<std::string> keys;
    for (const Column& c : header.columns) keys.push_back(c.key);
    AppendRow(keys, separator_, buffer_);
  }
  void Row(const std::vector<Cell>& row) override {
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) buffer_ += separator_;
      if (!row[i]) continue;
      // A count needs neither escaping nor quoting: sweep's rows are mostly counts.
      if (const auto* n = std::get_if<uint64_t>(&*row[i])) {
        char digits[24];
        buffer_.append(digits, std::to_chars(digits, digits + sizeof digits, *n).ptr);
        continue;
      }
      if (const auto* text = std::get_if<std::string>(&*row[i])) {  // ValueText's own, without a copy
        AppendField(*text, separator_, buffer_);
        continue;
      }
      AppendField(ValueText(*row[i]), separator_, buffer_);
    }
    buffer_ += '\n';
    FlushIfFull();
  }
  void End() override { Flush(); }

 private:
  char separator_;
};

}  // namespace

std::unique_ptr<TableWriter> MakeDelimitedWriter(std::ostream& out, char separator, const Table& header) {
  return std::make_unique<DelimitedWriter>(out, separator, header);
}

std::string FormatDelimited(const Report& report, char separator) {
  if (const ReportNode* node = report.FirstTable())
    return WriteWhole(*node->table,
                      [&](std::ostream& out) { return MakeDelimitedWriter(out, separator, *node->table); });
  std::vector<std::string> keys = report.LeafKeys();
  std::vector<std::string> values;
  for (const std::string& k : keys) {
    const ReportNode* leaf = report.Find(k);
    const Cell* cell = leaf == nullptr ? report.FindCell(k) : nullptr;
    values.push_back(leaf != nullptr ? ValueText(leaf->value) : (cell != nullptr && *cell ? ValueText(**cell) : ""));
  }
  std::string out;
  AppendRow(keys, separator, out);
  AppendRow(values, separator, out);
  return out;
}

}  // namespace tally
