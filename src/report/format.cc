#include "report/format.h"

#include <algorithm>

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

std::string LeftCell(std::string text, size_t width) {
  text.resize(std::max(width, text.size() + 1), ' ');
  return text;
}

std::string ValueText(const Value& value) {
  if (const auto* n = std::get_if<uint64_t>(&value)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&value)) return FormatDouble(*d);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return std::get<std::string>(value);
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
