#include "estimate/kernel_costs.h"

namespace tally {
namespace {

// One op's measured cost: bytes per output element at the copy bandwidth, forward and backward
// (forward + backward less forward), for 16-bit and fp32 activations, and its kernels.
struct Measured {
  double forward16, backward16, forward32, backward32;
  double forward_kernels, backward_kernels;
};

// docs/data/h200-op-costs.json (scripts/gpu/op_costs.py): one H200, PyTorch 2.11, transformers 5.17,
// 8,192 x 2,048 activations (RoPE: q and k of 4 x 2,048 tokens, 16 and 8 heads of 128, laid out as
// Hugging Face does; the loss: 4,096 tokens x 128,256 logits, within 4% of the same at 50,257). The
// GPU time alone: 20 calls captured in a CUDA graph and replayed (median of 10), so no launch gap
// sits between kernels, as in a step whose queue the host keeps full; the host's launches are priced
// apart (kHostSecondsPerKernel). Kernels: torch.profiler's count of one call in the first run of the
// same script (docs/data/h200-op-costs-first-run.json, whose bytes were wall-clock, launches included);
// the later run's counts, taken after its CUDA-graph captures, miss kernels and are not used.
constexpr Measured kRmsNormHf = {55.04, 129.97, 38.53, 126.22, 8, 19};  // LlamaRMSNorm: upcast, pow, mean, rsqrt, mul
constexpr Measured kLayerNorm = {8.10, 25.72, 12.39, 40.76, 1, 5};      // torch.nn.LayerNorm: one kernel
constexpr Measured kGelu = {6.01, 13.58, 8.43, 23.63, 1, 2};            // F.gelu, one kernel (ReLU, SiLU alike)
constexpr Measured kGeluInOps = {37.66, 64.31, 73.20, 124.16, 8, 12};   // NewGELUActivation's tanh formula
constexpr Measured kGatedAct = {10.90, 30.61, 20.17, 58.87, 2, 5};      // silu(gate) * up
constexpr Measured kResidualAdd = {6.18, 6.12, 11.86, 11.77, 1, 1};     // a + b
constexpr Measured kDropout = {7.91, 11.19, 12.37, 20.99, 1, 2};        // F.dropout(p = 0.1)
// apply_rotary_pos_emb on q and k, measured in bf16 only: fp32 moves twice the bytes.
constexpr Measured kRope = {60.10, 87.64, 2 * 60.10, 2 * 87.64, 10, 20};
// nn.Embedding(128256, 2048): the lookup, and a backward that zero-fills the table's gradient and
// sorts the tokens to sum theirs, per output element; fp32 taken as twice the bytes.
constexpr Measured kEmbedding = {5.33, 206.42, 2 * 5.33, 2 * 206.42, 1, 32};
// The loss per logit: Hugging Face's ForCausalLMLoss upcasts 16-bit logits to fp32 before the
// cross-entropy (the fp32 columns: fp32 logits, no upcast).
constexpr Measured kLoss = {27.38, 31.34, 15.82, 31.34, 3, 6};

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
  return {.forward_bytes = wide ? m->forward32 : m->forward16,
          .backward_bytes = wide ? m->backward32 : m->backward16,
          .forward_kernels = m->forward_kernels,
          .backward_kernels = m->backward_kernels,
          .measured = true};
}

std::optional<double> MeasuredAdamBytes(OptimizerImpl impl, double param_bytes) {
  // torch.optim.AdamW on 64 tensors of 2^24 parameters each, weights and gradients of one dtype
  // (docs/data/h200-op-costs.json; wall time, the host's Python included, since the update's launches
  // are not hidden under other work): foreach runs about ten passes over the states
  // (torch/optim/adamw.py, _multi_tensor_adamw), for-loop the same per tensor, fused one.
  const bool wide = param_bytes >= 4;
  switch (impl) {
    case OptimizerImpl::kForeach:
      return wide ? 91.58 : 55.88;
    case OptimizerImpl::kFused:
      return wide ? 35.40 : 22.30;
    case OptimizerImpl::kForLoop:
      return wide ? 84.56 : 43.80;
  }
  return std::nullopt;
}

double OptimizerKernelsPerTensor(OptimizerImpl impl) {
  // for-loop: 512 kernels for 64 tensors (docs/data/h200-op-costs-first-run.json).
  return impl == OptimizerImpl::kForLoop ? 8 : 0;
}

}  // namespace tally
