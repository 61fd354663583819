// Integer arithmetic that reports overflow instead of wrapping: counts in tally are exact or an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/error.h"

namespace tally {

__extension__ using u128 = unsigned __int128;

inline CountOverflow OverflowError(std::string_view what) {
  return CountOverflow(std::string(what) +
                       " would exceed 2^64 - 1 and cannot be counted exactly; reduce the model or the batch/sequence");
}

// Adds or multiplies; `what` names the quantity in the error when the result exceeds 2^64 - 1.
inline uint64_t CheckedAdd(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw OverflowError(what);
  }
  return r;
}

inline uint64_t CheckedMul(uint64_t a, uint64_t b, std::string_view what) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw OverflowError(what);
  }
  return r;
}

// Runs `f`; an overflow it throws without a file is blamed on `source`, the model config whose
// sizes (with the batch and sequence) produced it.
template <typename F>
auto BlameOverflowOn(const std::string& source, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CountOverflow& e) {
    if (!e.loc().file.empty()) throw;
    throw CountOverflow({source, 0, 0}, e.message());
  }
}

// a / b rounded up (b > 0): shares split across devices, mostly over one device (no division then).
inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return b == 1 ? a : a / b + (a % b != 0); }

inline uint64_t CheckedProduct(std::initializer_list<uint64_t> factors, std::string_view what) {
  uint64_t r = 1;
  for (uint64_t f : factors) r = CheckedMul(r, f, what);
  return r;
}

}  // namespace tally
