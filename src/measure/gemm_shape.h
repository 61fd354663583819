// What one timed GEMM is: C (m x n) = op(A) (m x k) · op(B) (k x n), row-major, and its element
// type. op is the identity or a transpose of the stored operand, as BLAS's transa/transb say.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/names.h"

namespace tally {

// The element types measure can time. fp64 is measurement-only (util/dtype.h lists storage types);
// tf32 is fp32 storage with tensor-core rounding of the inputs.
enum class GemmDType { kFp32, kFp64, kBf16, kFp16, kTf32, kFp8 };

const char* GemmDTypeName(GemmDType d);  // from the name table below
// Bytes per stored element of A and B (tf32 is stored as fp32).
uint64_t GemmDTypeBytes(GemmDType d);
// Reads one --dtype item (fp32, fp64, bf16, fp16, tf32, fp8 and the usual aliases); an unknown
// name is an InputError with a suggestion.
GemmDType ParseGemmDType(const std::string& text, std::string_view flag = "--dtype");

struct GemmShape {
  uint64_t m = 0, n = 0, k = 0;
  bool trans_a = false;  // A is stored k x m and read transposed
  bool trans_b = false;  // B is stored n x k and read transposed

  // 2·m·n·k: one multiply and one add per multiply-accumulate (the convention of estimate/flops.cc).
  uint64_t Flops() const;
  // "2048x2048x2048", with ":NT" appended when an operand is read transposed.
  std::string Text() const;
  // BLAS's name for the operand layout: "NN", "NT", "TN" or "TT" (op(A) then op(B)).
  std::string Layout() const;
  bool operator==(const GemmShape&) const = default;
};

// Reads "MxNxK" or "MxNxK:LAYOUT" (each a positive count, LAYOUT one of NN NT TN TT); errors
// name `flag`.
GemmShape ParseGemmShape(const std::string& text, const std::string& flag);

// Minimum bytes a GEMM must move: read A and B, write C once (the roofline's arithmetic intensity
// denominator, Williams et al. 2009).
double GemmMinBytes(const GemmShape& s, GemmDType d);

template <>
struct EnumNames<GemmDType> {
  static constexpr NameEntry<GemmDType> kTable[] = {{GemmDType::kFp32, "fp32"}, {GemmDType::kFp64, "fp64"},
                                                    {GemmDType::kBf16, "bf16"}, {GemmDType::kFp16, "fp16"},
                                                    {GemmDType::kTf32, "tf32"}, {GemmDType::kFp8, "fp8"}};
  // BLAS's and PyTorch's spellings.
  static constexpr NameEntry<GemmDType> kAliases[] = {
      {GemmDType::kFp32, "float32"},  {GemmDType::kFp32, "float"},   {GemmDType::kFp32, "sgemm"},
      {GemmDType::kFp64, "float64"},  {GemmDType::kFp64, "double"},  {GemmDType::kFp64, "dgemm"},
      {GemmDType::kBf16, "bfloat16"}, {GemmDType::kBf16, "sbgemm"},  {GemmDType::kFp16, "float16"},
      {GemmDType::kFp16, "half"},     {GemmDType::kFp8, "fp8_e4m3"}, {GemmDType::kFp8, "e4m3"}};
};

}  // namespace tally
