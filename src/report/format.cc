#include "report/format.h"

#include <algorithm>

#include "report/writer.h"
#include "util/error.h"
#include "util/spellcheck.h"

namespace tally {

OutputFormat ParseOutputFormat(const std::string& text) {
  static const std::vector<std::string> kNames = {"table", "json", "csv", "tsv"};
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (text == kNames[i]) return static_cast<OutputFormat>(i);
  }
  throw InputError("--format: unknown format '" + text + "'" + DidYouMean(text, kNames) +
                   "; formats are table, json, csv, tsv");
}

UnitSystem ParseUnitSystem(const std::string& text) {
  if (text == "iec") return UnitSystem::kIec;
  if (text == "si") return UnitSystem::kSi;
  throw InputError("--units: unknown unit system '" + text + "'; use iec (KiB, MiB, GiB) or si (kB, MB, GB)");
}

std::string ValueText(const Value& value) {
  if (const auto* n = std::get_if<uint64_t>(&value)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&value)) return FormatDouble(*d);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* shape = std::get_if<std::vector<uint64_t>>(&value)) {
    std::string out;
    for (uint64_t d : *shape) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  }
  return std::get<std::string>(value);
}

std::unique_ptr<TableWriter> MakeTableWriter(std::ostream& out, StreamFormat format, const std::string& path,
                                             const Table& header) {
  switch (format) {
    case StreamFormat::kCsv: return MakeDelimitedWriter(out, ',', header);
    case StreamFormat::kTsv: return MakeDelimitedWriter(out, '\t', header);
    case StreamFormat::kJsonl: return MakeJsonLinesWriter(out, header);
    case StreamFormat::kJson: break;
  }
  return MakeJsonWriter(out, path, header);
}

std::string FormatReport(const Report& report, const FormatOptions& options) {
  switch (options.format) {
    case OutputFormat::kTable: return FormatTable(report, options.units, options.explain);
    case OutputFormat::kJson: return FormatJson(report);
    case OutputFormat::kCsv: return FormatDelimited(report, ',');
    case OutputFormat::kTsv: return FormatDelimited(report, '\t');
  }
  return "";
}

}  // namespace tally
