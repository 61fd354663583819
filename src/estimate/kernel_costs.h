// What a training step's memory-bound work costs: the bytes each non-GEMM node moves and the kernels
// it launches, eager (PyTorch op by op, as Hugging Face models run) or fused (Megatron-LM, NeMo,
// TransformerEngine, torch.compile); the optimizer update's bytes per parameter; the host's time to
// launch a kernel. The eager figures are measured (scripts/gpu/op_costs.py) on two devices with the
// same SMs at the same clocks and different memory (an H100 SXM, docs/data/h100-op-costs.json, and an
// H200, h200-op-costs.json): each op's time per element splits into what scales with the memory
// bandwidth (its bytes) and what does not (its SM time), so that each device's bandwidth turns them
// back into seconds.
#pragma once

#include <optional>

#include "config/settings.h"
#include "graph/layer.h"

namespace tally {

struct OpTraffic {
  double forward_bytes = 0, backward_bytes = 0;  // per element of the node's output
  // Per element, the seconds beyond its bytes on the measured SMs (SmSecondsScale); 0 unless measured.
  double forward_sm_seconds = 0, backward_sm_seconds = 0;
  double forward_kernels = 0, backward_kernels = 0;  // launches
  bool measured = false;  // bytes at the copy bandwidth (kCopyEfficiency), not at the step's mbu
};

// A measured cost of one element (or one parameter): bytes at the copy bandwidth plus SM seconds.
struct ElementCost {
  double bytes = 0;
  double sm_seconds = 0;
};

// An elementwise (non-GEMM) node whose output elements are `act_bytes` wide (2 or 4). Under
// `autocast` (torch.amp with fp32 weights) the residual stream stays fp32 and autocast runs its fp32
// list in fp32 (norms, pow, softmax, the loss: torch/amp autocast op reference): those nodes, the
// residual adds, dropout and the embedding take the fp32 figures; activations of a GEMM's output
// (GELU, SiLU and its product) and RoPE keep the half-precision ones.
OpTraffic ElementwiseTraffic(const Layer& l, Kernels kernels, double act_bytes, bool autocast = false);

// What a LoRA adapter on a linear of `in` inputs and `out` outputs moves per token beside its two
// GEMMs, eager, as PEFT's Linear.forward runs it (peft/tuners/lora/layer.py: result + B(A x) *
// scaling; torchtune's LoRALinear alike). In the weights' 16-bit dtype (--lora-dtype base): forward
// the scaling (2 + 2 bytes an output) and the add (2 + 2 + 2): 10 out, 2 kernels; backward the
// scaling's (4 out) and the input gradient's sum with the frozen linear's (2 + 2 + 2 an input): 6 in
// + 4 out, 2 kernels. With fp32 adapters on 16-bit weights (`fp32`, PEFT's default): forward the
// input's cast to fp32 (2 + 4 an input), the scaling (4 + 4), the promoting add (2 + 4 + 4) and the
// cast back (4 + 2): 6 in + 24 out, 4 kernels; backward the output gradient's cast to fp32 and the
// base output's back (6 + 6), the scaling (8), the input gradient's cast to 16-bit (6 an input) and
// its sum (6): 12 in + 20 out, 5 kernels. By formula, at the copy bandwidth.
OpTraffic LoraTraffic(double in, double out, bool fp32);

// PyTorch's Adam/AdamW update measured per parameter whose weight is `param_bytes` wide, where the
// weight is what the optimizer updates (no fp32 master copy); nullopt for the other optimizers,
// whose update the step prices from the tensors it reads and writes.
std::optional<ElementCost> MeasuredAdamCost(OptimizerImpl impl, double param_bytes);

// The part of an eager op's time that did not follow the memory bandwidth between the H100 and the
// H200 (their ops' time ratio is 1.0-1.4 where the bandwidths' is 1.43: the rest is the SMs' work and
// what the L2 cache serves). It was measured on GH100's 132 SMs at 1,980 MHz, the CUDA-core fp32 peak
// `kMeasuredSmFp32Peak` the catalog gives the H100 SXM, H200 and H800: there its scale is 1. On a
// device of other SMs it was not measured, and it keeps its H200 share of the bandwidth, as bytes at
// the H200's copy bandwidth (the scale is that bandwidth over the device's), so that a device whose
// ops were not measured is priced as its bandwidth says.
inline constexpr double kMeasuredSmFp32Peak = 67e12;
double SmSecondsScale(std::optional<double> fp32_peak, double copy_bandwidth);
// Whether a device has the SMs the op costs and the attention sweep were measured on: its catalog
// fp32 peak is kMeasuredSmFp32Peak (within 1%).
bool OnMeasuredSms(std::optional<double> fp32_peak);

// Kernel launches per parameter tensor of the update: a for-loop runs each tensor's ops one by one;
// foreach and fused launch per group of tensors, which the per-tensor count leaves out.
double OptimizerKernelsPerTensor(OptimizerImpl impl);

// The host's time to launch one eager op from Python: 5.7 µs per in-place add launched back to back
// (PyTorch 2.11, the H200 machine's host; scripts/gpu/step_times.py, "micro"). A phase whose kernels
// run shorter than their launches waits on the host.
inline constexpr double kHostSecondsPerKernel = 5.7e-6;

// A device-to-device copy's fraction of the datasheet bandwidth: 4.09 of 4.8 TB/s on an H200 (0.85;
// docs/data/h200-op-costs.json), 2.94 of 3.35 TB/s on an H100 (0.88; docs/data/h100-op-costs.json).
// The eager bytes are at this rate.
inline constexpr double kCopyEfficiency = 0.85;

// A GPU kernel's fixed time, whatever its bytes: what a decode step of small tensors is made of.
// Measured on an H200 in a CUDA graph, so without the host's launch (scripts/gpu/decode_sweep.py,
// docs/data/h200-decode-sweep.json); tally assumes them for every GPU, as no other was measured.
struct KernelFloors {
  double gemm = 0;         // a weight GEMM: t = gemm + bytes / (bandwidth x mbu)
  double elementwise = 0;  // a norm, activation, rotary or residual kernel on a few kilobytes
  double attention = 0;    // a fused (flash) attention kernel, or each GEMM of eager attention
};
// gemm: the intercept of the least-squares line through the bf16 decode GEMMs (M = 1..64 tokens,
// weights of 100 MB and more, past the L2 cache: 84 products), 3.85 us, whose slope is 4.22 TB/s
// (0.879 of 4.8: h200.yaml's decode_bandwidth_efficiency); elementwise: the median of one bf16 add
// over 1 to 256 KiB operands, 1.27 us; attention: SDPA's decode kernel over 128 cached positions at
// batch 1, 4.41 us.
inline constexpr KernelFloors kGpuKernelFloors{.gemm = 3.85e-6, .elementwise = 1.27e-6, .attention = 4.41e-6};

// What a weight-only quantized GEMM (W8A16, W4A16: --quant int8 | int4 | nf4 | mxfp4, a GPTQ, AWQ or
// compressed-tensors checkpoint) costs beside a bf16 one of the same shape. It streams its stored
// bytes (packed values, scales and zeros) at `bandwidth` x the device's decode bandwidth (the bf16
// GEMMs' MBU), with the GEMM floor; its FLOPs run at the activation dtype's GEMM rate, or, where
// `compute` > 0, at `compute` x the dense peak of the activation dtype, the rate its in-kernel
// dequantization allows once more than a few tokens share each weight.
struct DequantKernelCost {
  double bandwidth = 1;
  double compute = 0;  // 0: as the activation dtype's GEMMs (tensor cores, the dequantization hidden)
};
// Marlin (Frantar et al. 2024, arXiv 2408.11743; github.com/IST-DASLab/marlin README, "Benchmarks",
// an A10 at groupsize 128 against PyTorch's FP16 matmul): "essentially ideal speedups at all
// batchsizes", the full 3.87x of 16 over 4.125 stored bits "up to batchsizes around 16-32", where the
// ideal is max(bytes / bandwidth, FLOPs / tensor-core peak) for both kernels. So its stored bytes
// stream at the FP16 GEMM's rate and its FLOPs run at the tensor-core rate. vLLM runs GPTQ, AWQ and
// compressed-tensors WNA16 checkpoints with Marlin (gptq_marlin, awq_marlin) on compute capability 8.0
// and later; Marlin's 8-bit variant is assumed to match its 4-bit one (not published apart).
inline constexpr DequantKernelCost kMarlinCost{.bandwidth = 1, .compute = 0};
// tinygemm (PyTorch's torch._weight_int4pack_mm, groups of 128 with bf16 scales and zeros), measured on
// an H200 beside cuBLAS bf16 at the same shapes (scripts/gpu/int4_sweep.py, docs/data/h200-int4-sweep.json;
// time_parts_test refits both): at M = 1 and 2 tokens over the 7 weights of 100 MB and more (bf16),
// the slope of t = floor + stored bytes / rate is 0.484 of bf16's t = floor + bytes / rate (2.09 of
// 4.33 TB/s); from M = 8 to 64 its time grows with the FLOPs at 29.4 TFLOP/s, 0.0297 of the 989.5
// TFLOP/s bf16 peak (its dequantization, redone for each row of tokens, binds).
inline constexpr DequantKernelCost kTinygemmCost{.bandwidth = 0.484, .compute = 0.0297};

// What an fp8 linear's cast of one 16-bit input (forward) or output gradient (backward) moves per
// element and launches, by recipe (Transformer Engine 2.x, transformer_engine/pytorch/csrc/quantizer.cpp):
// the cast reads 2 bytes and writes the fp8 tensor and its transpose, 1 + 1 (cast_transpose; MXFP8
// and blockwise quantize both directions from the 16-bit input). Current scaling first reads the
// tensor for its amax (nvte_compute_amax, then the scale from it, then nvte_quantize): 2 more bytes
// and two more kernels. Delayed scaling takes its scale from the amax history and updates the amax
// inside the cast. Block scales are found inside the cast and stored beside it: E8M0 bytes per 32
// values (MXFP8), fp32 per 128 (blockwise), each direction.
struct Fp8CastCost {
  double bytes = 0;    // per element
  double kernels = 0;  // launches
};
inline constexpr Fp8CastCost Fp8CastCostOf(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise:
      return {.bytes = 6, .kernels = 3};
    case Fp8Recipe::kDelayed:
      return {.bytes = 4, .kernels = 1};
    case Fp8Recipe::kBlockwise:
      return {.bytes = 4 + 2 * 4.0 / 128, .kernels = 1};
    case Fp8Recipe::kMxfp8:
      return {.bytes = 4 + 2 * 1.0 / 32, .kernels = 1};
  }
  return {};
}

inline constexpr DequantKernelCost DequantCostOf(DequantKernel k) {
  return k == DequantKernel::kTinygemm ? kTinygemmCost : kMarlinCost;
}

}  // namespace tally
