// What PyTorch's fused attention (SDPA) reaches, forward + backward, by shape: measured on an H100
// SXM (docs/data/h100-kernel-sweep.json, "attention_kernels"; scripts/gpu/kernel_sweep.py), each
// shape's kernels' GPU time summed under torch.profiler (no launch gaps), causal, FLOPs counted as
// 4·b·h·s²·d/2 forward and 2.5x that backward (tally's count). Between the measured shapes linear in
// log2 of the sequence (1,024 to 16,384), in log4 of batch x heads (8, 32, 128: what one device
// runs) and in the head dim (64 to 128); beyond them the nearest measured, and never less for more
// heads than for fewer (the sweep stops sooner in sequence the more heads a call runs).
#pragma once

namespace tally {

// 16-bit: SDPA's default on Hopper, cuDNN's fused attention (the sm90 flash kernels PyTorch 2.11
// picks, as Transformer Engine does under Megatron-LM), over the H100's 989.5 TFLOP/s bf16 peak:
// 0.08 at 8 heads of 64 over 1,024 tokens to 0.61 at 32 heads of 128 over 16,384. Measured on the
// GH100's SMs only: the step applies it where the catalog's fp32 peak says those SMs
// (kernel_costs.h, OnMeasuredSms), elsewhere the catalog's attention_efficiency.
double CudnnAttentionEfficiency(double batch_heads, double seq, double head_dim);

// fp32 (with TF32 matmuls on or off alike): no flash or cuDNN kernel takes fp32 inputs, and SDPA runs
// its memory-efficient kernel on the CUDA cores, over the H100's 67 TFLOP/s fp32 peak: 10.5 to 39.3
// TFLOP/s. Applied on every device over its own fp32 peak.
double Fp32AttentionEfficiency(double batch_heads, double seq, double head_dim);

}  // namespace tally
