// Layer nodes of the LayerGraph: typed, with resolved shapes, parameters, GEMMs, non-matmul FLOPs
// and the tensors autograd saves for backward.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/model_spec.h"

namespace tally {

enum class LayerKind {
  kEmbedding,
  kLinear,
  kAttentionScores,  // Q·K^T
  kSoftmax,
  kAttentionContext,  // probabilities · V
  kRope,
  kNorm,
  kActivation,
  kResidualAdd,
  kDropout,
  kLoss,
  kConv2d,
  kPool,
  kFlatten,
  kConcat,     // branches joined along the channels (no saved tensors, no FLOPs)
  kMultiply,   // branches multiplied elementwise, broadcasting (squeeze-excitation)
  kConv1d,     // a causal depthwise convolution along the sequence (Mamba)
  kScan,       // the selective state-space recurrence (Mamba's S6, Mamba-2's SSD)
  kDeltaRule,  // the gated delta rule's recurrence (Gated DeltaNet, Kimi Delta Attention)
  kLightning,  // lightning attention's blockwise linear attention (MiniMax-01)
  kLru,        // Griffin's real-gated linear recurrent unit (RG-LRU), its gates included
};

// Which kernels eager PyTorch runs for an elementwise node, where the kind alone does not say: a
// norm is one fused kernel (LayerNorm) or an op-by-op chain (Hugging Face's RMSNorm), an activation
// one kernel (F.gelu, ReLU) or several (gelu_new's tanh formula, a gated act(gate) · up). The step's time prices
// each (estimate/kernel_costs.h).
enum class ElementwiseOp { kGeneric, kLayerNorm, kRmsNorm, kActivation, kGeluInOps, kGatedActivation };

// The rollup a node's cost is reported under.
enum class Component {
  kEmbedding,
  kAttention,      // projections: qkv and out
  kAttentionCore,  // QK^T, softmax, AV: no parameters, grows with seq^2
  kMlp,
  kNorm,
  kLmHead,
  kEmbedProjection,  // project_in / project_out around a narrower embedding (OPT-350m)
  kRouter,           // MoE gate
  kLora,             // low-rank adapters
  kLoss,             // softmax cross-entropy over the logits
  kHead,             // an encoder's pooler, masked-LM transform and classifier
  kSsm,              // a state-space mixer: its projections, convolution and scan
  kVision,           // a multimodal model's vision tower: every node of it (graph/build_vision.cc)
  kProjector,        // the projector from the vision tower into the language model
  kAudio,            // a multimodal model's audio tower (Gemma 3n: its parameters alone)
  kLinear,           // sequential models from here on
  kConv2d,
  kPool,
  kActivation,
  kOther,
};

// One matrix product family: `count` independent products of (m x k) · (k x n).
struct Gemm {
  uint64_t m = 0, n = 0, k = 0;
  uint64_t count = 1;   // batch x heads for attention, groups for a grouped conv
  bool grad_a = true;   // backward computes d(left operand): false for raw input data
  bool grad_b = true;   // backward computes d(right operand): false for frozen weights
  bool halved = false;  // causal attention counted as half the products (--causal)
};

// How a saved tensor's bytes are counted: the activation dtype, a 1-byte dropout mask, int64
// indices, fp32 whatever the policy (softmax statistics, the loss's log-probabilities), or the
// activation dtype except under autocast, which runs the op that makes it in fp32 (torch.amp's fp32
// list: norms, softmax, pow) or keeps it in the fp32 residual stream.
enum class SavedClass { kActivation, kMask, kIndex, kFp32, kAutocastFp32 };

// The id of a sequential model's input batch: saved for the first layer's dW, but it is data the
// caller holds, not an activation, so activation memory leaves it out.
inline constexpr const char* kInputTensor = "input";

struct SavedTensor {
  std::string id;  // tensors with the same id are one tensor (e.g. the input shared by gate and up)
  uint64_t elements = 0;
  SavedClass cls = SavedClass::kActivation;
  bool tp_sharded = false;     // split across the tensor-parallel group (Korthikanti et al. 2022, §4.2.1)
  bool selective = false;      // dropped by selective recomputation: the s² attention tensors
  bool dw_only = false;        // a linear's input, kept only for its weight gradient: none when frozen
  uint64_t tp_max_shards = 0;  // as ParamTensor's: K and V split over at most their heads
  // A reduce-scatter's output, which exists only under sequence parallelism (--sp with tp > 1): what
  // --recompute op keeps of a row-parallel linear (graph/op_checkpoint.h).
  bool reduce_scatter = false;
};

// A parameter tensor; `tp_sharded` ones are split across the tensor-parallel group (Megatron-LM).
struct ParamTensor {
  std::vector<uint64_t> shape;
  bool tp_sharded = false;
  // 0: split over every tensor-parallel rank. Else split at most this many ways: the K/V heads of
  // grouped-query attention, which ranks beyond them replicate (vLLM's QKVParallelLinear).
  uint64_t tp_max_shards = 0;
};

// How many ways a tensor is split over `tp` tensor-parallel ranks.
inline uint64_t TpShards(bool tp_sharded, uint64_t tp_max_shards, uint64_t tp) {
  if (!tp_sharded) return 1;
  return tp_max_shards == 0 || tp < tp_max_shards ? tp : tp_max_shards;
}

struct Layer {
  std::string path;  // "blocks.3.attn.qkv": the first block this node stands for
  LayerKind kind = LayerKind::kLinear;
  Component component = Component::kOther;
  int block = -1;               // the first transformer block it stands for, -1 outside the blocks
  int block_type = -1;          // index of its distinct block (LayerGraph::runs), -1 outside the blocks
  uint64_t repeat = 1;          // how many identical blocks this one node stands for
  std::vector<uint64_t> shape;  // output shape, batch first
  uint64_t params = 0;          // parameters this node owns: the sum over `param_tensors`
  std::vector<ParamTensor> param_tensors;
  bool trainable = true;  // false: frozen, no gradient or optimizer state
  // An encoder–decoder's source side (the encoder, and the cross-attention K/V projections of its
  // output): run once per source, then cached; a decode step (a graph with a context) skips it.
  bool source_side = false;
  std::optional<size_t> weights_of;  // index of the node whose weight it shares (tied head)
  std::vector<Gemm> gemms;
  // A linear the checkpoint stores as several modules (Llama's q_proj, k_proj and v_proj): their
  // output widths, in order, summing to the GEMM's n. Empty: one module.
  std::vector<uint64_t> module_widths;
  // One module with the linear before it (a gated MLP's up in Phi-3's gate_up_proj): one call.
  bool fused_with_previous = false;
  uint64_t non_matmul_flops = 0;  // forward, per the conventions in graph/build_graph.cc
  // LoRA adapters in fp32 on a 16-bit model (GraphSettings::lora_fp32): their GEMMs run in fp32,
  // beside the casts of their input and output (estimate/kernel_costs.h, LoraTraffic).
  bool fp32_adapter = false;
  // A memory-bound op's elements where its output shape does not give them (estimate/roofline.h,
  // OpElements): the loss reads the [b, s, V] logits and writes a [b, s] loss (its measured bytes are
  // per logit, estimate/kernel_costs.cc); the per-head q, k and v norms rewrite their part of the
  // [b, s, qkv] projection in place. 0: its output's.
  uint64_t op_elements = 0;
  ElementwiseOp op = ElementwiseOp::kGeneric;
  std::vector<SavedTensor> saved;
  // Its output lies on dimensions Megatron's tensor parallelism splits (Shoeybi et al. 2019, §3;
  // Korthikanti et al. 2022, §4.2.1): between a column-parallel and a row-parallel linear (the MLP's
  // activation, RoPE on q and k, per-head q/k norms, the attention core) or over the
  // vocabulary-parallel logits (the loss), each rank computing its share with or without sequence
  // parallelism; K and V heads over at most `tp_max_shards` ranks (0: every rank). The rest (the
  // residual stream's norms, adds and dropouts) is replicated unless --sp (ElementwiseTpShards,
  // estimate/roofline.h).
  bool tp_split = false;
  uint64_t tp_max_shards = 0;
  // Elements its backward holds beyond the gradients of its output and input: an op-by-op function's
  // intermediate gradients (estimate/step_timeline.cc).
  uint64_t backward_scratch = 0;
  // Attention scores only: how the queries choose their keys, the window or chunk, and the K and V
  // elements (the latent, under MLA) one token adds to this layer's cache, split over at most
  // `kv_tp_max_shards` tensor-parallel ranks (0: every rank; the K/V heads; 1 for a latent cache).
  AttentionKind attention = AttentionKind::kFull;
  uint64_t attention_span = 0;
  uint64_t kv_elements_per_token = 0;
  uint64_t kv_tp_max_shards = 0;
  // A recurrent node (a scan, the delta rule, the RG-LRU): the state one sequence keeps between
  // decode steps (the convolution's and the recurrence's, elements), whatever the context
  // (estimate/kv_cache.h).
  uint64_t state_elements_per_sequence = 0;
  uint64_t n_experts = 0;  // MoE expert weights: params hold all experts, `active_experts` of them run
  uint64_t active_experts = 0;
  // --recompute op (graph/op_checkpoint.h): the share of its forward the backward runs again (0
  // outside the blocks), and the outputs the policy keeps until then.
  double op_rerun = 0;
  std::vector<SavedTensor> op_kept;
};

const char* LayerKindName(LayerKind k);
const char* ComponentName(Component c);

}  // namespace tally
