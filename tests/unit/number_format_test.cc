// Limits derived from the bit layouts, against torch.finfo (fp32, fp16, bf16) and the OCP 8-bit
// floating point specification v1.0 (2023), Table 1 (e4m3, e5m2).
#include "util/number_format.h"

#include <doctest/doctest.h>

#include <cmath>

namespace tally {
namespace {

const NumberFormat& Format(const std::string& name) {
  for (const NumberFormat& f : NumberFormats()) {
    if (name == f.name) return f;
  }
  FAIL("no format " << name);
  return NumberFormats().front();
}

TEST_CASE("number formats: limits match torch.finfo and the OCP FP8 spec") {
  FormatLimits fp32 = LimitsOf(Format("fp32"));
  CHECK(fp32.max == 3.4028234663852886e+38);
  CHECK(fp32.min_normal == 1.1754943508222875e-38);
  CHECK(fp32.smallest_subnormal == std::ldexp(1.0, -149));
  CHECK(fp32.eps == 1.1920928955078125e-07);
  CHECK(fp32.decimal_digits == 6);
  FormatLimits fp16 = LimitsOf(Format("fp16"));
  CHECK(fp16.max == 65504);
  CHECK(fp16.min_normal == 6.103515625e-05);
  CHECK(fp16.smallest_subnormal == std::ldexp(1.0, -24));
  CHECK(fp16.eps == 0.0009765625);
  CHECK(fp16.decimal_digits == 3);
  FormatLimits bf16 = LimitsOf(Format("bf16"));
  CHECK(bf16.max == 3.3895313892515355e+38);
  CHECK(bf16.min_normal == 1.1754943508222875e-38);
  CHECK(bf16.eps == 0.0078125);
  CHECK(bf16.decimal_digits == 2);
  FormatLimits e4m3 = LimitsOf(Format("fp8_e4m3"));
  CHECK(e4m3.max == 448);  // no infinity: S.1111.110 is the largest, S.1111.111 NaN
  CHECK(e4m3.min_normal == std::ldexp(1.0, -6));
  CHECK(e4m3.smallest_subnormal == std::ldexp(1.0, -9));
  CHECK(e4m3.eps == 0.125);
  FormatLimits e5m2 = LimitsOf(Format("fp8_e5m2"));
  CHECK(e5m2.max == 57344);
  CHECK(e5m2.min_normal == std::ldexp(1.0, -14));
  CHECK(e5m2.smallest_subnormal == std::ldexp(1.0, -16));
  CHECK(e5m2.eps == 0.25);
  CHECK(LimitsOf(Format("tf32")).eps == std::ldexp(1.0, -10));
  CHECK(LimitsOf(Format("int8")).max == 127);
  CHECK(LimitsOf(Format("int8")).min == -128);
  CHECK(LimitsOf(Format("int4")).max == 7);
  CHECK(LimitsOf(Format("int4")).bytes == 0.5);
}

TEST_CASE("number formats: rounding to nearest, ties to even") {
  // The lecture's warning: 1e-8 underflows to zero in fp16 but survives in bf16.
  CHECK(RoundTo(1e-8, Format("fp16")).value == 0);
  CHECK(RoundTo(1e-8, Format("fp16")).note == "underflow to 0");
  CHECK(RoundTo(1e-8, Format("bf16")).value == 1.0011717677116394e-08);
  // fp16 overflow: 65519 rounds down to 65504, 65520 (a tie) rounds up to the next power, inf.
  CHECK(RoundTo(65519, Format("fp16")).value == 65504);
  CHECK(std::isinf(RoundTo(65520, Format("fp16")).value));
  CHECK(std::isnan(RoundTo(480, Format("fp8_e4m3")).value));
  CHECK(RoundTo(464, Format("fp8_e4m3")).value == 448);                 // a tie: 448 has the even significand
  CHECK(RoundTo(1 + std::ldexp(1.0, -11), Format("fp16")).value == 1);  // half an ulp, ties to even
  CHECK(RoundTo(0.1, Format("fp32")).value == static_cast<double>(0.1f));
  CHECK(RoundTo(-2.5, Format("int8")).value == -2);
  CHECK(RoundTo(300, Format("int8")).note == "saturated");
  CHECK(RoundTo(std::ldexp(1.0, -24), Format("fp16")).note == "exact");  // the smallest subnormal
}

}  // namespace
}  // namespace tally
