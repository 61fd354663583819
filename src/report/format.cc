#include "report/format.h"

#include <algorithm>

#include "report/writer.h"
#include "util/error.h"
#include "util/spellcheck.h"

namespace tally {

OutputFormat ParseOutputFormat(const std::string& text) {
  if (std::optional<OutputFormat> f = FindName<OutputFormat>(text)) return *f;
  throw InputError("--format: unknown format '" + text + "'" + DidYouMean(text, NameList<OutputFormat>()) +
                   "; formats are " + JoinNames<OutputFormat>());
}

UnitSystem ParseUnitSystem(const std::string& text) {
  if (std::optional<UnitSystem> u = FindName<UnitSystem>(text)) return *u;
  throw InputError("--units: unknown unit system '" + text + "'; use " + Name(UnitSystem::kIec) +
                   " (KiB, MiB, GiB) or " + Name(UnitSystem::kSi) + " (kB, MB, GB)");
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
    case StreamFormat::kCsv:
      return MakeDelimitedWriter(out, ',', header);
    case StreamFormat::kTsv:
      return MakeDelimitedWriter(out, '\t', header);
    case StreamFormat::kJsonl:
      return MakeJsonLinesWriter(out, header);
    case StreamFormat::kJson:
      break;
  }
  return MakeJsonWriter(out, path, header);
}

std::string FormatReport(const Report& report, const FormatOptions& options) {
  switch (options.format) {
    case OutputFormat::kTable:
      return FormatTable(report, options.units, options.explain);
    case OutputFormat::kJson:
      return FormatJson(report);
    case OutputFormat::kCsv:
      return FormatDelimited(report, ',');
    case OutputFormat::kTsv:
      return FormatDelimited(report, '\t');
  }
  return "";
}

}  // namespace tally
