#include "measure/gemm_shape.h"

#include "util/any_case.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"

namespace tally {

GemmDType ParseGemmDType(const std::string& text, std::string_view flag) {
  return ParseNameAnyCase<GemmDType>(
      text, flag,
      {GemmDType::kFp32, GemmDType::kFp64, GemmDType::kBf16, GemmDType::kFp16, GemmDType::kTf32, GemmDType::kFp8},
      "dtype");
}

uint64_t GemmShape::Flops() const { return CheckedProduct({2, m, n, k}, "the FLOPs of GEMM " + Text()); }

std::string GemmShape::Text() const {
  const std::string dims = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  return trans_a || trans_b ? dims + ":" + Layout() : dims;
}

std::string GemmShape::Layout() const { return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N"); }

GemmShape ParseGemmShape(const std::string& text, const std::string& flag) {
  const size_t colon = text.find(':');
  const std::string dims = text.substr(0, colon);
  const size_t x1 = dims.find('x');
  const size_t x2 = x1 == std::string::npos ? x1 : dims.find('x', x1 + 1);
  if (x2 == std::string::npos || dims.find('x', x2 + 1) != std::string::npos) {
    throw InputError("--" + flag + ": '" + text + "' is not a shape MxNxK such as 2048x768x3072");
  }
  const std::string name = "--" + flag;
  GemmShape shape = {ParseCount(dims.substr(0, x1), name), ParseCount(dims.substr(x1 + 1, x2 - x1 - 1), name),
                     ParseCount(dims.substr(x2 + 1), name)};
  if (colon == std::string::npos) return shape;
  const std::string layout = text.substr(colon + 1);
  static const std::vector<std::string> kLayouts = {"NN", "NT", "TN", "TT"};
  if (layout.size() != 2 || (layout[0] != 'N' && layout[0] != 'T') || (layout[1] != 'N' && layout[1] != 'T')) {
    throw InputError("--" + flag + ": '" + text + "': unknown layout '" + layout + "'" + DidYouMean(layout, kLayouts) +
                     "; use NN, NT, TN or TT (op(A) then op(B); T reads the stored operand transposed)");
  }
  shape.trans_a = layout[0] == 'T';
  shape.trans_b = layout[1] == 'T';
  return shape;
}

double GemmMinBytes(const GemmShape& s, GemmDType d) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  // C is written at the input width, except fp8's, written as bf16 (cuda_backend.cc); the CPU's
  // bf16 GEMM writes fp32 and would move a little more.
  const double in = static_cast<double>(GemmDTypeBytes(d)), out = d == GemmDType::kFp8 ? 2.0 : in;
  return in * (m * k + k * n) + out * m * n;
}

}  // namespace tally
