#include "cli/dtypes_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>

#include "util/number_format.h"
#include "util/parse.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// A report holds finite numbers only: inf, -inf and NaN, which a value may be stored as, are text.
Cell Real(double v) {
  if (std::isfinite(v)) return v;
  return std::string(std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
}

// --value: a number, or inf, -inf, nan (to see how each format stores them).
double ParseValue(const std::string& text) {
  if (text == "inf" || text == "+inf") return HUGE_VAL;
  if (text == "-inf") return -HUGE_VAL;
  if (text == "nan" || text == "NaN") return std::nan("");
  return ParseReal(text, "--value", {.what = "a number; expected e.g. 1e-8, 65520, 0.1 or inf"});
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

Report DtypesReport(const std::optional<std::string>& value) {
  Report r;
  std::optional<double> x;
  if (value) {
    x = ParseValue(*value);
    r.Set("value", "value", std::isfinite(*x) ? Value(*x) : Value(*Real(*x)), Unit::kNumber);
  }
  // With a value the table shows how it is stored; without, each format's range.
  const bool range = !x;
  const Unit real = Unit::kReal;
  std::vector<Column> columns = {{.key = "name", .label = "dtype"},
                                 {.key = "bits", .unit = Unit::kNumber},
                                 {.key = "sign_bits", .label = "s", .unit = Unit::kNumber},
                                 {.key = "exponent_bits", .label = "e", .unit = Unit::kNumber},
                                 {.key = "mantissa_bits", .label = "m", .unit = Unit::kNumber},
                                 {.key = "bytes", .unit = real, .shown = range},
                                 {.key = "max", .unit = real, .shown = range},
                                 {.key = "min", .unit = real, .shown = false},
                                 {.key = "min_normal", .label = "min normal", .unit = real, .shown = range},
                                 {.key = "smallest_subnormal", .label = "subnormal", .unit = real, .shown = range},
                                 {.key = "eps", .unit = real, .shown = range},
                                 {.key = "decimal_digits", .label = "digits", .unit = Unit::kNumber, .shown = range}};
  if (x) {
    columns.push_back({.key = "rounded", .label = "stored as", .unit = Unit::kNumber});
    columns.push_back({.key = "relative_error", .label = "relative error", .unit = Unit::kReal});
    columns.push_back({.key = "note"});
  }
  Table& table = r.AddTable("dtypes", "Number formats", columns);
  table.keyed = true;
  for (const NumberFormat& f : NumberFormats()) {
    const FormatLimits l = LimitsOf(f);
    std::vector<Cell> row = {std::string(f.name),
                             f.bits,
                             f.sign_bits,
                             f.exponent_bits,
                             f.mantissa_bits,
                             l.bytes,
                             l.max,
                             l.min,
                             l.min_normal,
                             l.smallest_subnormal,
                             l.eps,
                             static_cast<uint64_t>(l.decimal_digits)};
    if (x) {
      Rounded rounded = RoundTo(*x, f);
      row.push_back(Real(rounded.value));
      // |stored − x| / |x| (0 for x = 0); none when either side is not a finite number.
      if (!std::isfinite(rounded.value) || !std::isfinite(*x)) {
        row.push_back(Cell());
      } else {
        row.push_back(*x == 0 ? 0.0 : std::fabs(rounded.value - *x) / std::fabs(*x));
      }
      row.push_back(rounded.note);
    }
    table.rows.push_back(std::move(row));
  }
  return r;
}

void AddDtypesFlags(CLI::App* cmd, DtypesFlags& f) {
  cmd->add_option("NAME", f.name, "show one format (bf16, fp8_e4m3, ...)")->type_name("");
  AddOutputFlags(cmd, f.output);
  cmd->add_option("--value", f.value, "show how this value is stored in each format (e.g. 1e-8)")->type_name("X");
}

SharedFlags SharedOf(const DtypesFlags& f) { return {.output = &f.output}; }

std::optional<Report> RunDtypes(const DtypesFlags& f, Prepared& /*prepared*/, RunContext& /*context*/) {
  Report report = DtypesReport(f.value);
  std::vector<std::string> names;
  for (const NumberFormat& n : NumberFormats()) names.emplace_back(n.name);
  auto it = std::find_if(names.begin(), names.end(), [&](const std::string& n) { return EqualsIgnoreCase(n, f.name); });
  KeepNamedRow(report, {.command = "dtypes", .noun = "dtype", .list = "list"}, f.name, it == names.end() ? "" : *it,
               [&] { return DidYouMean(f.name, names); });
  return report;
}

}  // namespace tally
