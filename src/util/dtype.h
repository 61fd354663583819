// Number formats and their storage size. Sizes are in bits so that int4 (half a byte) stays exact.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/names.h"

namespace tally {

enum class DType { kFp32, kTf32, kFp16, kBf16, kFp8E4m3, kFp8E5m2, kInt8, kInt4 };

// Storage bits per element (tf32 is stored as fp32).
inline uint64_t BitsPer(DType d) {
  switch (d) {
    case DType::kFp32:
    case DType::kTf32:
      return 32;
    case DType::kFp16:
    case DType::kBf16:
      return 16;
    case DType::kFp8E4m3:
    case DType::kFp8E5m2:
    case DType::kInt8:
      return 8;
    case DType::kInt4:
      return 4;
  }
  return 32;
}

template <>
struct EnumNames<DType> {
  static constexpr NameEntry<DType> kTable[] = {
      {DType::kFp32, "fp32"},        {DType::kTf32, "tf32"},        {DType::kFp16, "fp16"}, {DType::kBf16, "bf16"},
      {DType::kFp8E4m3, "fp8_e4m3"}, {DType::kFp8E5m2, "fp8_e5m2"}, {DType::kInt8, "int8"}, {DType::kInt4, "int4"}};
  // fp8 alone is e4m3, the format of forward GEMMs; the long names are PyTorch's (torch_dtype).
  static constexpr NameEntry<DType> kAliases[] = {
      {DType::kFp8E4m3, "fp8"},      {DType::kFp8E4m3, "fp8-e4m3"}, {DType::kFp8E4m3, "e4m3"},
      {DType::kFp8E5m2, "fp8-e5m2"}, {DType::kFp8E5m2, "e5m2"},     {DType::kFp32, "float32"},
      {DType::kFp16, "float16"},     {DType::kFp16, "half"},        {DType::kBf16, "bfloat16"}};
};

// The canonical name: fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, int4.
inline const char* DTypeName(DType d) { return Name(d); }

// Reads a dtype for `--flag`; accepts the canonical names and the aliases above. Throws InputError
// listing the accepted names (restricted to `allowed` when given).
DType ParseDType(const std::string& text, const std::string& flag, const std::vector<DType>& allowed = {});

// Bytes of `elements` values of `d`, rounded up to whole bytes; overflow is an InputError.
uint64_t BytesOfSlow(uint64_t elements, DType d, std::string_view what);
inline uint64_t BytesOf(uint64_t elements, DType d, std::string_view what) {
  const uint64_t bits = BitsPer(d);
  uint64_t bytes = 0;
  // The common case, whole bytes per element, without 128-bit arithmetic (this is a hot path of sweep).
  if (bits % 8 == 0 && !__builtin_mul_overflow(elements, bits / 8, &bytes)) return bytes;
  return BytesOfSlow(elements, d, what);
}

}  // namespace tally
