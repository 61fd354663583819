#include "estimate/gemm_shape.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace tally {
namespace {

#include "estimate/gemm_shapes.inc"

// The position of `x` between the grid's points, in log space: the lower index and the weight of
// the upper one, clamped to the grid's ends.
template <size_t N>
std::pair<size_t, double> Locate(const double (&grid)[N], double x) {
  if (x <= grid[0]) return {0, 0};
  if (x >= grid[N - 1]) return {N - 2, 1};
  size_t i = 0;
  while (grid[i + 1] < x) ++i;
  return {i, std::log(x / grid[i]) / std::log(grid[i + 1] / grid[i])};
}

template <size_t NN, size_t NK, size_t NM>
double Interpolate(const double (&table)[NN][NK][NM], double m, double n, double k) {
  const auto [mi, mw] = Locate(kSweepM, m);
  const auto [ni, nw] = Locate(kSweepN, n);
  const auto [ki, kw] = Locate(kSweepK, k);
  double out = 0;
  for (size_t a = 0; a < 2; ++a) {
    for (size_t b = 0; b < 2; ++b) {
      for (size_t c = 0; c < 2; ++c) {
        const double w = (a ? nw : 1 - nw) * (b ? kw : 1 - kw) * (c ? mw : 1 - mw);
        if (w > 0) out += w * table[ni + a][ki + b][mi + c];
      }
    }
  }
  return out;
}

}  // namespace

double GemmShapeFactor(GemmDType dtype, double m, double n, double k) {
  const double rows = std::max(m, kSweepM[0]);
  double f = 0;
  switch (dtype) {
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      f = Interpolate(kShape_fp8, rows, n, k);
      break;
    case GemmDType::kTf32:
      f = Interpolate(kShape_tf32, rows, n, k);
      break;
    case GemmDType::kFp32:
    case GemmDType::kFp64:
      f = Interpolate(kShape_fp32, rows, n, k);
      break;
    default:
      f = Interpolate(kShape_bf16, rows, n, k);
  }
  return std::min(1.0, f);
}

double GemmPowerFactor(GemmDType dtype, double m, double n, double k) {
  const double rows = std::max(m, kSweepM[0]);
  switch (dtype) {
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      return std::min(1.0, Interpolate(kPower_fp8, rows, n, k));
    case GemmDType::kBf16:
    case GemmDType::kFp16:
      return std::min(1.0, Interpolate(kPower_bf16, rows, n, k));
    default:
      return 1;
  }
}

double GemmAlignmentFactor(GemmDType dtype, uint64_t n, uint64_t k) {
  const uint64_t per_16_bytes = dtype == GemmDType::kFp8 || dtype == GemmDType::kInt8    ? 16
                                : dtype == GemmDType::kBf16 || dtype == GemmDType::kFp16 ? 8
                                                                                         : 0;
  if (per_16_bytes == 0) return 1;
  return n % per_16_bytes == 0 && k % per_16_bytes == 0 ? 1 : 0.195;
}

}  // namespace tally
