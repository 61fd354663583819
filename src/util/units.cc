#include "util/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tally {
namespace {

// Scales `value` to the largest prefix with mantissa >= 1 and prints two decimals.
std::string Scaled(double value, double base, const char* const* prefixes, int n_prefixes, std::string_view unit) {
  int i = 0;
  while (i + 1 < n_prefixes && std::fabs(value) >= base) {
    value /= base;
    ++i;
  }
  std::string text = i == 0 && value == std::floor(value) ? FormatFixed(value, 0) : FormatFixed(value);
  std::string suffix = std::string(prefixes[i]) + std::string(unit);
  return suffix.empty() ? text : text + " " + suffix;
}

}  // namespace

std::string FormatFixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string FormatGrouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatCount(uint64_t n) {
  // B for 10^9, as model sizes are written ("7B"), rather than SI's G.
  static const char* const kPrefixes[] = {"", "k", "M", "B", "T", "P", "E"};
  return Scaled(static_cast<double>(n), 1000.0, kPrefixes, 7, "");
}

std::string FormatFlops(double flops) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  return Scaled(flops, 1000.0, kPrefixes, 9, "FLOP");
}

std::string FormatBytes(uint64_t bytes, UnitSystem units) {
  static const char* const kIec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  static const char* const kSi[] = {"", "k", "M", "G", "T", "P", "E"};
  double base = units == UnitSystem::kIec ? 1024.0 : 1000.0;
  return Scaled(static_cast<double>(bytes), base, units == UnitSystem::kIec ? kIec : kSi, 7, "B");
}

std::string FormatDouble(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

std::string FormatDuration(double s) {
  if (!std::isfinite(s)) return "inf";
  struct Step {
    double limit, scale;
    const char* unit;
  };
  static const Step kSteps[] = {
      {1e-3, 1e6, "us"},           {1, 1e3, "ms"}, {120, 1, "s"}, {7200, 1.0 / 60, "min"}, {172800, 1.0 / 3600, "h"},
      {1e300, 1.0 / 86400, "days"}};
  for (const Step& step : kSteps) {
    if (s < step.limit) {
      const double v = s * step.scale;
      return FormatFixed(v, v < 10 ? 2 : (v < 100 ? 1 : 0)) + " " + step.unit;
    }
  }
  return FormatFixed(s, 0) + " s";
}

std::string FormatRate(double flop_per_s) { return FormatFlops(flop_per_s) + "/s"; }

}  // namespace tally
