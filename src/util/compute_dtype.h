// The number formats a matrix multiply computes in: what the hardware catalog's peaks, GEMM
// efficiencies and measured rates are keyed by, what `measure` times, and what a training
// precision runs its GEMMs at. util/dtype.h lists storage types instead (fp8 there names its
// variant; int4 is stored, not computed).
#pragma once

#include <cstdint>

#include "util/names.h"

namespace tally {

// fp64 is measurement and catalog only; tf32 is fp32 storage with tensor-core rounding of the
// inputs; int8 is a catalog peak only (measure does not time integer GEMMs).
enum class GemmDType { kFp32, kFp64, kBf16, kFp16, kTf32, kFp8, kInt8 };

template <>
struct EnumNames<GemmDType> {
  static constexpr NameEntry<GemmDType> kTable[] = {
      {GemmDType::kFp32, "fp32"}, {GemmDType::kFp64, "fp64"}, {GemmDType::kBf16, "bf16"}, {GemmDType::kFp16, "fp16"},
      {GemmDType::kTf32, "tf32"}, {GemmDType::kFp8, "fp8"},   {GemmDType::kInt8, "int8"}};
  // BLAS's and PyTorch's spellings.
  static constexpr NameEntry<GemmDType> kAliases[] = {
      {GemmDType::kFp32, "float32"},  {GemmDType::kFp32, "float"},   {GemmDType::kFp32, "sgemm"},
      {GemmDType::kFp64, "float64"},  {GemmDType::kFp64, "double"},  {GemmDType::kFp64, "dgemm"},
      {GemmDType::kBf16, "bfloat16"}, {GemmDType::kBf16, "sbgemm"},  {GemmDType::kFp16, "float16"},
      {GemmDType::kFp16, "half"},     {GemmDType::kFp8, "fp8_e4m3"}, {GemmDType::kFp8, "e4m3"}};
};

inline const char* GemmDTypeName(GemmDType d) { return Name(d); }

// Bytes per stored element of A and B (tf32 is stored as fp32).
inline uint64_t GemmDTypeBytes(GemmDType d) {
  switch (d) {
    case GemmDType::kFp64:
      return 8;
    case GemmDType::kFp32:
    case GemmDType::kTf32:
      return 4;
    case GemmDType::kBf16:
    case GemmDType::kFp16:
      return 2;
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      return 1;
  }
  return 4;
}

}  // namespace tally
