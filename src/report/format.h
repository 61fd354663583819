// Output formats: the human table, JSON, CSV/TSV and --get. Each renders the whole Report into a
// string so nothing reaches stdout until rendering succeeded.
#pragma once

#include <string>

#include "report/report.h"
#include "util/names.h"
#include "util/units.h"

namespace tally {

enum class OutputFormat { kTable, kJson, kCsv, kTsv };

template <>
struct EnumNames<OutputFormat> {
  static constexpr NameEntry<OutputFormat> kTable[] = {
      {OutputFormat::kTable, "table"}, {OutputFormat::kJson, "json"}, {OutputFormat::kCsv, "csv"}, {OutputFormat::kTsv, "tsv"}};
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
std::string FormatDelimited(const Report& report, char separator);  // CSV (RFC 4180) or TSV
// `text` padded with spaces to `width` columns (at least one space after it): table cells.
std::string LeftCell(std::string text, size_t width);

// A value as machine text: exact integers, shortest round-trip doubles, true/false, strings as is.
std::string ValueText(const Value& value);
// The value at dotted `key` as one bare token; an unknown key is an InputError with a suggestion.
std::string GetKey(const Report& report, const std::string& key);

}  // namespace tally
