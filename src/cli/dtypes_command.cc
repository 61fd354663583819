#include "cli/dtypes_command.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "report/format.h"
#include "util/error.h"
#include "util/number_format.h"

namespace tally {
namespace {

double ParseValue(const std::string& text) {
  double x = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError("--value: '" + text + "' is not a number; expected e.g. 1e-8, 65520 or 0.1");
  }
  return x;
}

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A report holds finite numbers only: inf, -inf and NaN, which a value may be stored as, are text.
Value Real(double v) {
  if (std::isfinite(v)) return v;
  return std::string(std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
}

double Number(const ReportNode& format, const char* key) {
  const ReportNode* c = format.Child(key);
  if (const auto* d = std::get_if<double>(&c->value)) return *d;
  if (const auto* t = std::get_if<std::string>(&c->value)) {
    return *t == "NaN" ? std::nan("") : std::copysign(HUGE_VAL, *t == "-inf" ? -1.0 : 1.0);
  }
  return static_cast<double>(std::get<uint64_t>(c->value));
}

}  // namespace

Report DtypesReport(const std::optional<std::string>& value) {
  Report r;
  std::optional<double> x;
  if (value) {
    x = ParseValue(*value);
    r.Set("value", "value", Real(*x), Unit::kRatio);
  }
  ReportNode& group = r.Group("dtypes", "Number formats");
  for (const NumberFormat& f : NumberFormats()) {
    const FormatLimits l = LimitsOf(f);
    ReportNode& d = group.AddGroup(f.name, f.name);
    d.AddLeaf("bits", "bits", f.bits, Unit::kNumber);
    d.AddLeaf("sign_bits", "sign bits", f.sign_bits, Unit::kNumber);
    d.AddLeaf("exponent_bits", "exponent bits", f.exponent_bits, Unit::kNumber);
    d.AddLeaf("mantissa_bits", "mantissa bits", f.mantissa_bits, Unit::kNumber);
    d.AddLeaf("bytes", "bytes per element", l.bytes, Unit::kRatio);
    d.AddLeaf("max", "max", l.max, Unit::kRatio);
    d.AddLeaf("min", "min", l.min, Unit::kRatio);
    d.AddLeaf("min_normal", "smallest normal", l.min_normal, Unit::kRatio);
    d.AddLeaf("smallest_subnormal", "smallest subnormal", l.smallest_subnormal, Unit::kRatio);
    d.AddLeaf("eps", "machine epsilon", l.eps, Unit::kRatio);
    d.AddLeaf("decimal_digits", "decimal digits", static_cast<uint64_t>(l.decimal_digits), Unit::kNumber);
    if (x) {
      Rounded rounded = RoundTo(*x, f);
      d.AddLeaf("rounded", "stored as", Real(rounded.value), Unit::kRatio);
      d.AddLeaf("note", "note", rounded.note, Unit::kText);
    }
  }
  return r;
}

std::string FormatDtypesTable(const Report& report) {
  const ReportNode* value = report.Find("value");
  std::string out;
  if (value == nullptr) {
    out = "dtype     bits  s/e/m   bytes  max         min normal  subnormal   eps         digits\n";
  } else {
    out = "value " + ValueText(value->value) + " stored as\n";
    out += "dtype     bits  s/e/m   stored                   relative error  note\n";
  }
  for (const ReportNode& d : report.Find("dtypes")->children) {
    auto n = [&](const char* key) { return Number(d, key); };
    std::string layout = FormatDouble(n("sign_bits")) + "/" + FormatDouble(n("exponent_bits")) + "/" +
                         FormatDouble(n("mantissa_bits"));
    std::string line = LeftCell(d.key, 10) + LeftCell(FormatDouble(n("bits")), 6) + LeftCell(layout, 8);
    if (value == nullptr) {
      line += LeftCell(FormatDouble(n("bytes")), 7) + LeftCell(Sci(n("max")), 12) + LeftCell(Sci(n("min_normal")), 12) +
              LeftCell(Sci(n("smallest_subnormal")), 12) + LeftCell(Sci(n("eps")), 12) + FormatDouble(n("decimal_digits"));
    } else {
      const double x = Number(report.root(), "value");
      const double stored = n("rounded");
      // No relative error when either side is not a finite number.
      const bool finite = std::isfinite(x) && std::isfinite(stored);
      const double error = x == 0 || !finite ? 0 : std::fabs(stored - x) / std::fabs(x);
      line += LeftCell(ValueText(d.Child("rounded")->value), 25) + LeftCell(finite ? Sci(error) : "-", 16) +
              std::get<std::string>(d.Child("note")->value);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string FormatDtypesDelimited(const Report& report, char separator) {
  Report table;
  const ReportNode& first = report.Find("dtypes")->children.front();
  table.columns = {"name"};
  for (const ReportNode& c : first.children) table.columns.push_back(c.key);
  for (const ReportNode& d : report.Find("dtypes")->children) {
    std::vector<std::string> row = {d.key};
    for (const ReportNode& c : d.children) row.push_back(ValueText(c.value));
    table.rows.push_back(row);
  }
  return FormatDelimited(table, separator);
}

}  // namespace tally
