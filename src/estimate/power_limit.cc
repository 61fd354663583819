#include "estimate/power_limit.h"

#include <algorithm>
#include <cmath>

#include "estimate/kernel_costs.h"

namespace tally {
namespace {

// The duty sweep on an H100 SXM at its 700 W limit (docs/data/h100-gemm-duty.json; PyTorch 2.11,
// 4096 x 8192 x 8192 products taking `duty` of each 8 ms, a 1 GiB device copy the rest): the
// products' rate over their burst rate (one product after a rest). Duty 0 is the burst itself.
struct DutyPoint {
  double duty, rate;
};
constexpr DutyPoint kBf16Duty[] = {{0, 1}, {0.247, 0.9948}, {0.478, 0.9868}, {0.786, 0.8914}, {1, 0.8595}};
constexpr DutyPoint kFp8Duty[] = {{0, 1}, {0.236, 0.9768}, {0.484, 0.9703}, {0.778, 0.8940}, {1, 0.8393}};

template <size_t N>
double RateAt(const DutyPoint (&points)[N], double duty) {
  duty = std::clamp(duty, 0.0, 1.0);
  size_t i = 0;
  while (i + 2 < N && points[i + 1].duty < duty) ++i;
  const DutyPoint &a = points[i], &b = points[i + 1];
  return a.rate + (b.rate - a.rate) * (duty - a.duty) / (b.duty - a.duty);
}

template <size_t N>
double Weight(const DutyPoint (&points)[N], double duty) {
  return (1 - RateAt(points, duty)) / (1 - points[N - 1].rate);
}

}  // namespace

bool PowerLimitPriced(const HardwareSpec& hw, GemmDType dtype) {
  const bool tensor_cores = dtype == GemmDType::kBf16 || dtype == GemmDType::kFp16 || dtype == GemmDType::kFp8;
  return tensor_cores && OnMeasuredSms(hw.Peak(GemmDType::kFp32)) && std::abs(hw.board_power_w - 700) < 1;
}

double PowerLimitWeight(GemmDType dtype, double duty) {
  return dtype == GemmDType::kFp8 || dtype == GemmDType::kInt8 ? Weight(kFp8Duty, duty) : Weight(kBf16Duty, duty);
}

}  // namespace tally
