// Output formats: the human table, JSON, CSV/TSV and --get. Each renders the whole Report into a
// string so nothing reaches stdout until rendering succeeded. A table node can also be written as
// its rows arrive (TableWriter), which is how sweep streams millions of points.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "report/report.h"
#include "util/names.h"
#include "util/units.h"

namespace tally {

enum class OutputFormat { kTable, kJson, kCsv, kTsv };

template <>
struct EnumNames<OutputFormat> {
  static constexpr NameEntry<OutputFormat> kTable[] = {{OutputFormat::kTable, "table"},
                                                       {OutputFormat::kJson, "json"},
                                                       {OutputFormat::kCsv, "csv"},
                                                       {OutputFormat::kTsv, "tsv"}};
};

struct FormatOptions {
  OutputFormat format = OutputFormat::kTable;
  UnitSystem units = UnitSystem::kIec;
  bool explain = false;  // tables: each figure's formula under it
};

// Parses a --format value; unknown values are an InputError with a suggestion.
OutputFormat ParseOutputFormat(const std::string& text);
UnitSystem ParseUnitSystem(const std::string& text);

std::string FormatReport(const Report& report, const FormatOptions& options);

std::string FormatTable(const Report& report, UnitSystem units, bool explain = false);
std::string FormatJson(const Report& report);
// CSV (RFC 4180) or TSV: the report's first table node, or else one row of every leaf.
std::string FormatDelimited(const Report& report, char separator);

// The streamed formats of one table node: CSV and TSV (a header line, then a line per row), JSON
// Lines (an object per row) and JSON (a document holding the table at its path, as FormatJson
// writes it).
enum class StreamFormat { kCsv, kTsv, kJsonl, kJson };

// Writes a table's rows as they come: the header on construction (nothing for JSON Lines), each
// Row() as it is given, the close on End(). Output is buffered and written in blocks; the bytes
// equal those of the whole-document formatters for the same table.
class TableWriter {
 public:
  virtual ~TableWriter() = default;
  virtual void Row(const std::vector<Cell>& row) = 0;
  virtual void End() = 0;
};

// `header` gives the columns and flags (its rows are ignored); `path` is the table's dotted key,
// where JSON puts it. The writer keeps a reference to `out` and a copy of the columns.
std::unique_ptr<TableWriter> MakeTableWriter(std::ostream& out, StreamFormat format, const std::string& path,
                                             const Table& header);

// A value as machine text: exact integers, shortest round-trip doubles, true/false, strings as is,
// shapes as dimensions joined by 'x'.
std::string ValueText(const Value& value);
// The value at dotted `key` as one bare token; an unknown key is an InputError with a suggestion.
std::string GetKey(const Report& report, const std::string& key);

}  // namespace tally
