// How the board's power limit slows a training step's GEMMs as they fill more of its time.
//
// A Hopper board holds its 700 W limit by lowering the SM clock: with bf16 GEMMs back to back the
// clock settles at 1,275-1,470 MHz, not the 1,980 it boosts to (NVML's reason: software power cap),
// on an H200 and on an H100 (scripts/gpu/steady_gemm.py, docs/data/h200-steady-gemm.json,
// docs/data/h100-steady-gemm.json). GEMM sweeps time a few products at a time, so their rates
// (estimate/gemm_shape.h) are burst rates: short shapes at the boost clock, long ones part-throttled.
// A step's GEMMs keep the burst rate while they take a small share of the device's time and fall
// toward the steady rate as that share (the duty) nears 1 (scripts/gpu/gemm_duty.py,
// docs/data/h100-gemm-duty.json).
#pragma once

#include <cmath>
#include <utility>

#include "config/hardware.h"
#include "util/compute_dtype.h"

namespace tally {

// Whether GEMMs of `dtype` on the device are priced at its power limit: a device the power sweeps
// measured, GH100's SMs (estimate/kernel_costs.h, OnMeasuredSms) at a 700 W board limit (the H100
// SXM, H200 and H800 of the catalog), and the tensor cores' 16-bit or fp8 (fp32 runs on the CUDA
// cores, which held 1,965 MHz under the limit; tf32 was not measured). Elsewhere none is priced, and
// `tally time --explain` says so (time.power.tensor_duty).
bool PowerLimitPriced(const HardwareSpec& hw, GemmDType dtype);

// How far a GEMM has gone from its burst rate toward its power-limited rate (GemmPowerFactor), 0 to 1,
// when tensor-core kernels take `duty` of the device's time: the duty sweep's loss of rate at that
// duty over its loss at duty 1, interpolated in duty between the measured points.
double PowerLimitWeight(GemmDType dtype, double duty);

// A pass (a training step, an inference forward) priced at the burst rates, then again at the weight
// its own GEMM share gives until the weight settles: the slower GEMMs raise the share, so the weight
// approaches its fixed point from below. `at(weight)` returns a result with `tensor_duty` and
// `power_weight`; the pair is the burst pass and the settled one.
template <class At>
auto SettleAtPowerLimit(GemmDType dtype, At at) {
  const auto burst = at(0.0);
  auto out = burst;
  for (int i = 0; i < 8; ++i) {
    const double weight = PowerLimitWeight(dtype, out.tensor_duty);
    if (std::abs(weight - out.power_weight) < 1e-4) break;
    out = at(weight);
  }
  return std::pair{burst, out};
}

}  // namespace tally
