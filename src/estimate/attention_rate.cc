#include "estimate/attention_rate.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally {
namespace {

// One batch x heads row of the sweep: forward + backward TFLOP/s at sequences 1,024, 2,048, ... (x2).
struct SweepRow {
  double batch_heads;
  std::vector<double> tflops;
};

// docs/data/h100-kernel-sweep.json, "attention", dtype fp32, backend default (the memory-efficient
// kernel): forward_backward_tflops. The sweep stops at 32 x 4,096 tokens of fp32 per call.
const std::vector<SweepRow> kHeadDim64 = {{8, {9.8, 15.9, 22.6, 28.3, 32.0}}, {32, {19.0, 25.1, 29.8}}, {128, {25.3}}};
const std::vector<SweepRow> kHeadDim128 = {
    {8, {16.0, 22.0, 30.1, 36.1, 38.8}}, {32, {24.1, 30.7, 35.7}}, {128, {28.7}}};
constexpr double kSweepFp32Peak = 67e12;  // h100-sxm.yaml peak_flops.fp32
constexpr double kFirstSeq = 1024;

// Linear interpolation at fractional index x of `v`, clamped to its ends.
double At(const std::vector<double>& v, double x) {
  x = std::clamp(x, 0.0, static_cast<double>(v.size() - 1));
  const size_t i = std::min(static_cast<size_t>(x), v.size() - 1);
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (v[j] - v[i]) * (x - static_cast<double>(i));
}

double TflopsOf(const std::vector<SweepRow>& rows, double batch_heads, double seq) {
  const double s = std::log2(seq / kFirstSeq);
  std::vector<double> by_rows;
  for (const SweepRow& r : rows) by_rows.push_back(At(r.tflops, s));
  // The rows are 4x apart in batch x heads: index log4(batch_heads / 8).
  return At(by_rows, std::log2(batch_heads / rows.front().batch_heads) / 2);
}

}  // namespace

double Fp32AttentionEfficiency(double batch_heads, double seq, double head_dim) {
  const double low = TflopsOf(kHeadDim64, batch_heads, seq), high = TflopsOf(kHeadDim128, batch_heads, seq);
  const double t = std::clamp((head_dim - 64) / 64, 0.0, 1.0);
  return (low + (high - low) * t) * 1e12 / kSweepFp32Peak;
}

}  // namespace tally
