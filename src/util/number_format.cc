#include "util/number_format.h"

#include <cmath>
#include <limits>

namespace tally {
namespace {

int Bias(const NumberFormat& f) { return (1 << (f.exponent_bits - 1)) - 1; }

// The largest unbiased exponent of a finite number: IEEE reserves the all-ones exponent for
// infinities and NaNs; OCP e4m3 uses it for numbers and keeps only all-ones mantissa as NaN.
int MaxExponent(const NumberFormat& f) {
  const int top = (1 << f.exponent_bits) - 1;
  return (f.has_infinity ? top - 1 : top) - Bias(f);
}

}  // namespace

const std::vector<NumberFormat>& NumberFormats() {
  static const std::vector<NumberFormat> kFormats = {
      {"fp32", 32, 1, 8, 23, true}, {"tf32", 32, 1, 8, 10, true},    {"fp16", 16, 1, 5, 10, true},
      {"bf16", 16, 1, 8, 7, true},  {"fp8_e4m3", 8, 1, 4, 3, false}, {"fp8_e5m2", 8, 1, 5, 2, true},
      {"int8", 8, 1, 0, 7, false},  {"int4", 4, 1, 0, 3, false},
  };
  return kFormats;
}

FormatLimits LimitsOf(const NumberFormat& f) {
  FormatLimits l;
  l.bytes = static_cast<double>(f.bits) / 8;
  const int m = static_cast<int>(f.mantissa_bits);
  if (f.exponent_bits == 0) {
    l.max = std::ldexp(1.0, m) - 1;
    l.min = -std::ldexp(1.0, m);
    l.min_normal = l.smallest_subnormal = l.eps = 1;
    l.decimal_digits = static_cast<int>(std::floor(std::log10(l.max)));
    return l;
  }
  const int emin = 1 - Bias(f);
  // The largest significand: all fraction bits set, except e4m3, whose all-ones pattern is NaN.
  const double top = f.has_infinity ? 2 - std::ldexp(1.0, -m) : 2 - std::ldexp(1.0, 1 - m);
  l.max = std::ldexp(top, MaxExponent(f));
  l.min = -l.max;
  l.min_normal = std::ldexp(1.0, emin);
  l.smallest_subnormal = std::ldexp(1.0, emin - m);
  l.eps = std::ldexp(1.0, -m);
  // floor(m · log10 2) in integers: 30103 / 100000 approximates log10 2 well past these widths.
  l.decimal_digits = static_cast<int>(f.mantissa_bits * 30103 / 100000);
  return l;
}

Rounded RoundTo(double x, const NumberFormat& f) {
  const FormatLimits l = LimitsOf(f);
  if (std::isnan(x)) return {x, "NaN"};
  if (f.exponent_bits == 0) {
    double r = std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
    if (r > l.max || r < l.min) return {r > l.max ? l.max : l.min, "saturated"};
    return {r, r == x ? "exact" : "rounded"};
  }
  if (x == 0) return {x, "exact"};
  // e4m3 has no infinity: its all-ones pattern is NaN, what an infinity converts to.
  if (std::isinf(x)) return f.has_infinity ? Rounded{x, "exact"} : Rounded{std::nan(""), "overflow to NaN"};
  const double a = std::fabs(x);
  int k = 0;
  std::frexp(a, &k);  // a = g · 2^k with g in [0.5, 1): the exponent of a is k - 1
  const int emin = 1 - Bias(f);
  const int quantum = std::max(k - 1, emin) - static_cast<int>(f.mantissa_bits);
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum)), quantum);
  const double signed_r = std::copysign(r, x);
  if (r > l.max) {
    if (f.has_infinity) return {std::copysign(std::numeric_limits<double>::infinity(), x), "overflow to inf"};
    return {std::numeric_limits<double>::quiet_NaN(), "overflow to NaN"};
  }
  if (r == 0) return {signed_r, "underflow to 0"};
  return {signed_r, r == a ? "exact" : "rounded"};
}

}  // namespace tally
