// How a GEMM's shape rolls its rate off the device's best: a (m x k)·(k x n) product's fraction of
// the catalog's gemm_efficiency (the best-shape rate, as maximum-achievable-matmul sweeps report it),
// by dtype, from a sweep of kernel times on an H200 (scripts/gpu/gemm_sweep.py,
// docs/data/h200-gemm-sweep.json): 5 m x 6 n x 4 k shapes, each 10 products in one CUDA graph, so no
// launch gap inflates small shapes. Between the sweep's shapes the factor is interpolated in log m,
// log n and log k; outside them it is held at the edge. A shape the H200 ran at its bandwidth's pace
// has factor 1: the callers' memory term (operands / bandwidth) prices it on each device's own
// bandwidth. Other devices take the H200's roll-off: an assumption (their tiles and SM counts
// differ), named in `tally time --explain`.
#pragma once

#include <cstdint>

#include "util/compute_dtype.h"

namespace tally {

double GemmShapeFactor(GemmDType dtype, double m, double n, double k);

// The fraction of its burst rate (GemmShapeFactor's) a 16-bit or fp8 tensor-core GEMM keeps with the
// board at its power limit: the shape's time in the H200's burst sweep over its time right after
// 100 ms of back-to-back 8192^3 products (scripts/gpu/steady_gemm.py, docs/data/h200-steady-gemm.json;
// bf16 0.75-1, fp8 0.69-1: short products lose the most, long ones were part-throttled in the burst already). 1 for
// fp32 on the CUDA cores (they held 1,965 MHz there) and tf32 (not measured). estimate/power_limit.h
// says how much of it a step takes.
double GemmPowerFactor(GemmDType dtype, double m, double n, double k);

// A 16-bit or 8-bit GEMM whose n or k (the operands' leading dimensions) is not a multiple of 16
// bytes runs cuBLAS's unaligned kernels: 0.195 of the aligned rate, the median of 72 products (a
// linear's forward, input and weight gradients; n = 50,257 and 32,001 against 50,304 and 32,000; k 768
// to 4,096; bf16 and fp16) on an H200 (scripts/gpu/gemm_align.py, docs/data/h200-gemm-align.json;
// 0.13-0.25). fp32 runs at its aligned rate; tf32 was not measured and is taken as aligned.
double GemmAlignmentFactor(GemmDType dtype, uint64_t n, uint64_t k);

}  // namespace tally
