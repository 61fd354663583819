// What PyTorch's fused attention (SDPA) reaches where the catalog's attention_efficiency, a 16-bit
// figure, does not apply: fp32, where no flash or cuDNN kernel runs.
#pragma once

namespace tally {

// SDPA on fp32 tensors runs the memory-efficient kernel on the CUDA cores, with TF32 matmuls on or
// off alike (PyTorch 2.11: the flash and cuDNN kernels take 16-bit inputs only). Its forward +
// backward rate over the device's fp32 peak, causal, by batch x heads a device runs, the sequence
// and the head dim, as measured on an H100 SXM (docs/data/h100-kernel-sweep.json,
// scripts/gpu/kernel_sweep.py; 9.8 to 38.8 of 67 TFLOP/s, FLOPs counted as 4·b·h·s²·d/2 forward and
// 2.5x that backward, tally's count). Between the measured shapes linear in log2 of the sequence, of
// batch x heads and in the head dim; beyond them the nearest measured.
double Fp32AttentionEfficiency(double batch_heads, double seq, double head_dim);

}  // namespace tally
