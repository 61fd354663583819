// bf16, IEEE half and fp8 e4m3 conversions for filling GEMM operands and reading results back.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tally {

// Round to nearest even, as hardware converts (bf16: the top 16 bits of an fp32, NaN kept quiet).
inline uint16_t FloatToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline float Bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
inline float HalfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int fraction = h & 0x3FF;
  float magnitude = 0;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(fraction), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = fraction == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(fraction | 0x400), exponent - 25);
  }
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

// Round to nearest even; overflow gives infinity.
inline uint16_t FloatToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7E00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past the largest, 65504
  if (a == 0) return sign;                                         // frexp gives no useful exponent for zero
  int exponent = 0;
  std::frexp(a, &exponent);  // a = m · 2^exponent, m in [0.5, 1)
  // The spacing of halves near `a`: 2^(exponent - 11) for normals, 2^-24 below 2^-14.
  const int step_exp = std::max(exponent - 11, -24);
  const float units = std::nearbyint(std::ldexp(a, -step_exp));  // FE_TONEAREST: ties to even
  const uint32_t q = static_cast<uint32_t>(units);               // value = q · 2^step_exp
  if (step_exp == -24) return static_cast<uint16_t>(sign | q);   // subnormal (q may reach 0x400: normal)
  // Normal: q in [2^10, 2^11]; q == 2^11 carries into the exponent.
  const uint32_t biased = static_cast<uint32_t>(step_exp + 10 + 15);
  const uint32_t bits = (biased << 10) + (q - 0x400);
  return static_cast<uint16_t>(sign | bits);
}

// OCP 8-bit floating point, E4M3 ("E4M3FN"; OCP OFP8 spec v1.0, 2023, §5.1): 1 sign, 4 exponent
// (bias 7), 3 fraction bits, no infinities; S.1111.111 is NaN, so the largest finite is 448.
inline float Fp8E4M3ToFloat(uint8_t b) {
  const int exponent = (b >> 3) & 0xF;
  const int fraction = b & 0x7;
  float magnitude = 0;
  if (exponent == 15 && fraction == 7) {
    magnitude = NAN;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(fraction), -9);  // subnormal: fraction · 2^(1-7-3)
  } else {
    magnitude = std::ldexp(static_cast<float>(fraction | 0x8), exponent - 10);
  }
  return (b & 0x80) != 0 ? -magnitude : magnitude;
}

// Round to nearest even, saturating at ±448 as fp8 training casts do (cuda_fp8.h's __NV_SATFINITE).
inline uint8_t FloatToFp8E4M3(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7F);
  const float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7E);
  if (a == 0) return sign;
  int exponent = 0;
  std::frexp(a, &exponent);
  // The spacing of e4m3 values near `a`: 2^(exponent - 4) for normals, 2^-9 below 2^-6.
  const int step_exp = std::max(exponent - 4, -9);
  const uint32_t q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, -step_exp)));
  if (step_exp == -9) return static_cast<uint8_t>(sign | q);  // subnormal (q == 8 is the least normal)
  // Normal: q in [8, 16]; q == 16 carries into the exponent, and nothing below 448 rounds past it.
  const uint32_t bits = (static_cast<uint32_t>(step_exp + 3 + 7) << 3) + (q - 8);
  return static_cast<uint8_t>(sign | std::min<uint32_t>(bits, 0x7E));
}

}  // namespace tally
