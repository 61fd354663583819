#include "estimate/attention_rate.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally {
namespace {

// A head dim's sweep: per batch x heads row (8, 32, 128), forward + backward TFLOP/s at sequences
// 1,024, 2,048, ... (x2).
using Rows = std::vector<std::vector<double>>;

struct Sweep {
  Rows head_dim64, head_dim128;
  double peak;  // the H100 SXM's dense peak for the dtype (h100-sxm.yaml)
};

// docs/data/h100-kernel-sweep.json, "attention_kernels": forward_backward_kernel_tflops. The fp32
// sweep stops at 32 x 4,096 tokens a call, the bf16 one at 128 x 8,192.
const Sweep kCudnn = {.head_dim64 = {{78.8, 182.2, 251.6, 351.2, 443.9},
                                     {179.8, 263.0, 348.3, 422.9, 465.7},
                                     {231.2, 318.6, 392.2, 445.0}},
                      .head_dim128 = {{113.5, 249.9, 332.5, 467.3, 585.6},
                                      {225.4, 344.8, 467.5, 552.5, 601.5},
                                      {300.9, 425.8, 517.3, 574.1}},
                      .peak = 989.5};
const Sweep kMemoryEfficient = {.head_dim64 = {{10.5, 16.7, 23.2, 28.6, 32.1}, {19.5, 25.8, 30.0}, {25.9}},
                                .head_dim128 = {{17.9, 22.8, 30.7, 36.6, 39.3}, {25.3, 31.2, 36.1}, {29.3}},
                                .peak = 67};

// Linear interpolation at fractional index x of `v`, clamped to its ends.
double At(const std::vector<double>& v, double x) {
  x = std::clamp(x, 0.0, static_cast<double>(v.size() - 1));
  const size_t i = std::min(static_cast<size_t>(x), v.size() - 1);
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (v[j] - v[i]) * (x - static_cast<double>(i));
}

double TflopsOf(const Rows& rows, double batch_heads, double seq) {
  const double s = std::log2(seq / 1024);
  // A row the sweep stopped short of `seq` (more heads, fewer tokens a call) takes at least the rate
  // of the row below it there: more heads never slowed a kernel the sweep measured.
  std::vector<double> by_rows;
  for (const std::vector<double>& r : rows) by_rows.push_back(std::max(At(r, s), by_rows.empty() ? 0 : by_rows.back()));
  // The rows are 4x apart in batch x heads: index log4(batch_heads / 8).
  return At(by_rows, std::log2(batch_heads / 8) / 2);
}

double EfficiencyOf(const Sweep& sweep, double batch_heads, double seq, double head_dim) {
  const double low = TflopsOf(sweep.head_dim64, batch_heads, seq);
  const double high = TflopsOf(sweep.head_dim128, batch_heads, seq);
  const double t = std::clamp((head_dim - 64) / 64, 0.0, 1.0);
  return (low + (high - low) * t) / sweep.peak;
}

}  // namespace

double CudnnAttentionEfficiency(double batch_heads, double seq, double head_dim) {
  return EfficiencyOf(kCudnn, batch_heads, seq, head_dim);
}

double Fp32AttentionEfficiency(double batch_heads, double seq, double head_dim) {
  return EfficiencyOf(kMemoryEfficient, batch_heads, seq, head_dim);
}

}  // namespace tally
