#include "estimate/kernel_costs.h"

#include <cmath>

namespace tally {
namespace {

// One op's measured cost per output element, forward and backward (forward + backward less
// forward), for 16-bit and fp32 activations, and its kernels.
struct Measured {
  ElementCost forward16, backward16, forward32, backward32;
  double forward_kernels, backward_kernels;
};

// Each op timed on an H100 SXM (docs/data/h100-op-costs.json) and an H200 (h200-op-costs.json), one
// script (scripts/gpu/op_costs.py), PyTorch 2.11, transformers 5.17, 8,192 x 2,048 activations (RoPE:
// q and k of 4 x 2,048 tokens, 16 and 8 heads of 128, laid out as Hugging Face does; the loss: 4,096
// tokens x 128,256 logits). The GPU time alone: 20 calls captured in a CUDA graph and replayed (median
// of 10), so no launch gap sits between kernels, as in a step whose queue the host keeps full; the
// host's launches are priced apart (kHostSecondsPerKernel). Each figure solves t = bytes / (0.85 x
// datasheet bandwidth) + SM seconds on both devices (3.35 and 4.8 TB/s; a negative SM part, noise, is
// 0 with the bytes fitted to both), so that the model gives each device's measured time; the test
// (time_parts_test) solves it again from the files. Kernels: torch.profiler's count of one call in
// the H200's first run (docs/data/h200-op-costs-first-run.json); the later runs' counts, taken after
// their CUDA-graph captures, miss kernels and are not used.
constexpr double ps = 1e-12;
// LlamaRMSNorm: upcast, pow, mean, rsqrt, mul.
constexpr Measured kRmsNormHf = {{22.43, 7.95 * ps}, {76.70, 12.9 * ps}, {17.59, 5.1 * ps}, {85.29, 9.93 * ps}, 8, 19};
// torch.nn.LayerNorm: one kernel.
constexpr Measured kLayerNorm = {{1.21, 1.68 * ps}, {8.99, 4.08 * ps}, {3.34, 2.21 * ps}, {32.86, 1.9 * ps}, 1, 5};
// F.gelu, one kernel (ReLU, SiLU alike).
constexpr Measured kGelu = {{1.09, 1.2 * ps}, {8.20, 1.31 * ps}, {7.10, 0.319 * ps}, {22.19, 0.334 * ps}, 1, 2};
// NewGELUActivation's tanh formula.
constexpr Measured kGeluInOps = {
    {34.62, 0.713 * ps}, {57.62, 1.58 * ps}, {65.72, 1.77 * ps}, {113.48, 2.51 * ps}, 8, 12};
// silu(gate) * up.
constexpr Measured kGatedAct = {
    {8.82, 0.503 * ps}, {28.19, 0.567 * ps}, {18.40, 0.417 * ps}, {56.08, 0.636 * ps}, 2, 5};
// a + b.
constexpr Measured kResidualAdd = {
    {5.88, 0.0688 * ps}, {5.60, 0.122 * ps}, {11.21, 0.149 * ps}, {11.19, 0.134 * ps}, 1, 1};
// F.dropout(p = 0.1).
constexpr Measured kDropout = {{3.05, 1.19 * ps}, {10.39, 0.187 * ps}, {7.04, 1.29 * ps}, {19.29, 0.398 * ps}, 1, 2};
// apply_rotary_pos_emb on q and k, measured in bf16 only: fp32 is taken as twice the work.
constexpr Measured kRope = {{2.54, 14.1 * ps}, {17.84, 17.0 * ps}, {5.08, 28.2 * ps}, {35.68, 34.0 * ps}, 10, 20};
// nn.Embedding(128256, 2048): the lookup, and a backward that zero-fills the table's gradient and
// sorts the tokens to sum theirs, per output element; fp32 taken as twice the work.
constexpr Measured kEmbedding = {
    {4.52, 0.192 * ps}, {93.76, 27.4 * ps}, {9.04, 0.384 * ps}, {187.52, 54.8 * ps}, 1, 32};
// The loss per logit: Hugging Face's ForCausalLMLoss upcasts 16-bit logits to fp32 before the
// cross-entropy (the fp32 columns: fp32 logits, no upcast).
constexpr Measured kLoss = {{16.12, 2.74 * ps}, {27.97, 0.8 * ps}, {14.16, 0.394 * ps}, {28.25, 0.73 * ps}, 3, 6};

const Measured* EagerOf(const Layer& l) {
  switch (l.kind) {
    case LayerKind::kNorm:
      // Hugging Face writes RMSNorm op by op in nearly every model (LlamaRMSNorm and its copies).
      return l.op == ElementwiseOp::kLayerNorm ? &kLayerNorm : &kRmsNormHf;
    case LayerKind::kActivation:
      if (l.op == ElementwiseOp::kGatedActivation) return &kGatedAct;
      if (l.op == ElementwiseOp::kGeluInOps) return &kGeluInOps;
      return &kGelu;
    case LayerKind::kResidualAdd:
      return &kResidualAdd;
    case LayerKind::kDropout:
      return &kDropout;
    case LayerKind::kRope:
      return &kRope;
    case LayerKind::kEmbedding:
      return &kEmbedding;
    case LayerKind::kLoss:
      return &kLoss;
    default:
      return nullptr;
  }
}

}  // namespace

OpTraffic ElementwiseTraffic(const Layer& l, Kernels kernels, double act_bytes, bool autocast) {
  const Measured* m = kernels == Kernels::kEager ? EagerOf(l) : nullptr;
  if (m == nullptr) {
    // A fused kernel (and an eager op not measured: the attention's softmax, pooling): it reads its
    // input and writes its output; its backward reads the output's gradient and the saved input and
    // writes the input's gradient.
    return {
        .forward_bytes = 2 * act_bytes, .backward_bytes = 4 * act_bytes, .forward_kernels = 1, .backward_kernels = 1};
  }
  const bool half_under_autocast =
      l.kind == LayerKind::kRope ||
      (l.kind == LayerKind::kActivation && l.op != ElementwiseOp::kGeluInOps && l.op != ElementwiseOp::kGeneric);
  const bool wide = act_bytes >= 4 || (autocast && !half_under_autocast);
  const ElementCost& forward = wide ? m->forward32 : m->forward16;
  const ElementCost& backward = wide ? m->backward32 : m->backward16;
  return {.forward_bytes = forward.bytes,
          .backward_bytes = backward.bytes,
          .forward_sm_seconds = forward.sm_seconds,
          .backward_sm_seconds = backward.sm_seconds,
          .forward_kernels = m->forward_kernels,
          .backward_kernels = m->backward_kernels,
          .measured = true};
}

std::optional<ElementCost> MeasuredAdamCost(OptimizerImpl impl, double param_bytes) {
  // torch.optim.AdamW on 64 tensors of 2^24 parameters each, weights and gradients of one dtype
  // (docs/data/h100-op-costs.json and h200-op-costs.json, split as the ops are; wall time, the host's
  // Python included, since the update's launches are not hidden under other work): foreach runs about
  // ten passes over the states (torch/optim/adamw.py, _multi_tensor_adamw), for-loop the same per
  // tensor, fused one.
  const bool wide = param_bytes >= 4;
  switch (impl) {
    case OptimizerImpl::kForeach:
      return wide ? ElementCost{76.26, 3.68 * ps} : ElementCost{32.47, 5.69 * ps};
    case OptimizerImpl::kFused:
      return wide ? ElementCost{24.46, 2.65 * ps} : ElementCost{8.82, 3.29 * ps};
    case OptimizerImpl::kForLoop:
      return wide ? ElementCost{72.19, 2.96 * ps} : ElementCost{37.83, 1.43 * ps};
  }
  return std::nullopt;
}

OpTraffic LoraTraffic(double in, double out, bool fp32) {
  if (!fp32) {
    return {.forward_bytes = 10 * out,
            .backward_bytes = 6 * in + 4 * out,
            .forward_kernels = 2,
            .backward_kernels = 2,
            .measured = true};
  }
  return {.forward_bytes = 6 * in + 24 * out,
          .backward_bytes = 12 * in + 20 * out,
          .forward_kernels = 4,
          .backward_kernels = 5,
          .measured = true};
}

double SmSecondsScale(std::optional<double> fp32_peak, double copy_bandwidth) {
  constexpr double kH200CopyBandwidth = 4.8e12 * kCopyEfficiency;
  if (OnMeasuredSms(fp32_peak)) return 1;
  return kH200CopyBandwidth / copy_bandwidth;
}

bool OnMeasuredSms(std::optional<double> fp32_peak) {
  return fp32_peak && std::abs(*fp32_peak / kMeasuredSmFp32Peak - 1) < 0.01;
}

double OptimizerKernelsPerTensor(OptimizerImpl impl) {
  // for-loop: 512 kernels for 64 tensors (docs/data/h200-op-costs-first-run.json).
  return impl == OptimizerImpl::kForLoop ? 8 : 0;
}

}  // namespace tally
