// What one timed GEMM is: C (m x n) = op(A) (m x k) · op(B) (k x n), row-major, and its element
// type. op is the identity or a transpose of the stored operand, as BLAS's transa/transb say.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/compute_dtype.h"

namespace tally {

// Reads one --dtype item (fp32, fp64, bf16, fp16, tf32, fp8 and the usual aliases: the types measure
// times); another name is an InputError with a suggestion.
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

}  // namespace tally
