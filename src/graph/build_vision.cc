// The vision towers of config/model_spec.h's VisionSpec as nodes: SigLIP (modeling_siglip.py), Llama
// 4's vision model (modeling_llama4.py), CLIP (modeling_clip.py), and issue 30's: Qwen2-VL's,
// Qwen2.5-VL's and Qwen3-VL's (modeling_qwen2_vl.py, modeling_qwen2_5_vl.py, modeling_qwen3_vl.py),
// Pixtral (modeling_pixtral.py), Idefics3's SigLIP (modeling_idefics3.py), InternViT
// (modeling_internvl.py) and Mllama's (modeling_mllama.py); their projectors are in
// graph/build_projectors.cc. Saved tensors follow the language model's conventions
// (graph/transformer_context.cc, build_attention.cc): each LayerNorm its input and fp32 mean and
// rstd, each RMSNorm what graph/node_costs.h's SaveRmsNorm says, each linear its input, QK^T q and k,
// softmax its probabilities (eager) or the fp32 log-sum-exp per row (flash), AV v and the
// probabilities (eager) or its output (flash), GELU its input. The tower is bidirectional and keeps
// no KV cache; its weights are replicated over tensor-parallel ranks.
#include "graph/build_vision.h"

#include <algorithm>

#include "graph/node_costs.h"
#include "graph/vision_builder.h"

namespace tally {

VisionBuilder::VisionBuilder(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings,
                             std::vector<Layer>& layers)
    : v_(v),
      text_width_(text_width),
      flash_(settings.attention == Attention::kFlash),
      b_(settings.batch),
      side_(v.image_size / v.patch_size),
      patches_(Count("vision", {side_, side_})),
      llama4_(v.kind == VisionKind::kLlama4),
      clip_(v.kind == VisionKind::kClip),
      // Mllama pads each tile's patches and class token to a multiple of 8 before its layers.
      tokens_(v.kind == VisionKind::kMllama ? (patches_ + 1 + 7) / 8 * 8 : patches_ + (v.class_token ? 1 : 0)),
      images_(Count("vision", {b_, v.images, v.tiles})),
      rows_(Count("vision", {images_, tokens_})),
      layers_(layers) {}

void VisionBuilder::Build() {
  Embeddings();
  if (v_.pre_norm) Norm("vision.pre_norm");  // layernorm_pre, pre_layrnorm, ln_pre
  const uint64_t live = v_.live_layers == 0 ? v_.n_layers : v_.live_layers;
  std::string features;
  for (uint64_t i = 0; i < v_.n_layers; ++i) {
    if (i == live) features = cur_;
    dead_ = i >= live;
    window_ =
        v_.window_tokens > 0 && std::find(v_.full_layers.begin(), v_.full_layers.end(), i) == v_.full_layers.end();
    EncoderLayer("vision.layers." + std::to_string(i) + ".");
    outputs_.push_back(cur_);
  }
  window_ = false;
  if (clip_) {
    ClipHead(features.empty() ? cur_ : features);
    return;
  }
  if (v_.post_norm) Norm("vision.post_norm");
  switch (v_.kind) {
    case VisionKind::kSiglip:
      Projector();
      break;
    case VisionKind::kLlama4:
      Llama4Projector();
      break;
    case VisionKind::kQwenMerger:
    case VisionKind::kQwen3Merger:
      QwenMerger();
      break;
    case VisionKind::kMistral3:
      Mistral3Projector();
      break;
    case VisionKind::kMllama:
      MllamaGlobalLayers();
      MllamaProjector();
      break;
    default:  // kIdefics3, kInternVl
      ShuffleProjector();
      break;
  }
}

std::vector<uint64_t> VisionBuilder::Hidden(uint64_t width) const {
  return {b_, Count("vision", {v_.images, v_.tiles, tokens_}), width};
}

void VisionBuilder::Push(Layer l, std::vector<uint64_t> shape, const std::string& output_id) {
  l.shape = std::move(shape);
  if (dead_) {
    // A layer past the features the projector reads: its output reaches no loss, so autograd
    // neither keeps its tensors nor runs its backward.
    l.saved.clear();
    for (Gemm& g : l.gemms) g.grad_a = g.grad_b = false;
  }
  cur_ = output_id.empty() ? l.path : output_id;
  layers_.push_back(std::move(l));
}

void VisionBuilder::Linear(const std::string& path, uint64_t rows, uint64_t in, uint64_t out, bool bias, Component c,
                           std::vector<uint64_t> shape) {
  Push(MakeLinear(path, c, rows, in, out, bias, cur_, true), std::move(shape));
}

void VisionBuilder::Norm(const std::string& path, uint64_t rows, uint64_t width, Component c, NormType type) {
  if (rows == 0) rows = rows_;
  if (width == 0) width = v_.d_model;
  const uint64_t elements = Count(path, {rows, width});
  // Over the tower's rows, or over a projector's (a whole number per sequence of the batch).
  std::vector<uint64_t> shape = rows == rows_ ? Hidden(width) : std::vector<uint64_t>{b_, rows / b_, width};
  if (type == NormType::kRms || (type == NormType::kTower && v_.rms_norm)) {
    Layer n = MakeElementwise(path, LayerKind::kNorm, c, elements, kFlopsPerRmsNormElement);
    n.op = ElementwiseOp::kRmsNorm;
    AddParamTensor(n, {width}, false);
    SaveRmsNorm(n, cur_, elements, rows, true);
    Push(std::move(n), std::move(shape));
    return;
  }
  // nn.LayerNorm(width) with weight and bias.
  Layer n = MakeElementwise(path, LayerKind::kNorm, c, elements, kFlopsPerLayerNormElement);
  AddParamTensor(n, {width}, false);
  AddParamTensor(n, {width}, false);
  n.saved.push_back({cur_, elements});
  n.saved.push_back({path + ":mean", rows, SavedClass::kFp32});
  n.saved.push_back({path + ":rstd", rows, SavedClass::kFp32});
  Push(std::move(n), std::move(shape));
}

void VisionBuilder::Activation(const std::string& path, uint64_t rows, uint64_t width, Component c,
                               std::vector<uint64_t> shape) {
  Layer act = MakeElementwise(path, LayerKind::kActivation, c, Count(path, {rows, width}), kFlopsPerElementwise);
  act.saved.push_back({.id = cur_, .elements = Count(path, {rows, width})});
  Push(std::move(act), std::move(shape));
}

void VisionBuilder::Residual(const std::string& path) {
  Push(MakeElementwise(path, LayerKind::kResidualAdd, Component::kVision, Count(path, {rows_, v_.d_model}),
                       kFlopsPerElementwise),
       Hidden(v_.d_model));
}

// x · λ (InternViT's lambda_1 and lambda_2, d values) or tanh(gate) · x (Mllama's gates, one
// value): the product keeps its input for λ's gradient.
void VisionBuilder::Scale(const std::string& path, uint64_t params) {
  Layer l = MakeElementwise(path, LayerKind::kActivation, Component::kVision, Count(path, {rows_, v_.d_model}),
                            kFlopsPerElementwise);
  AddParamTensor(l, {params}, false);
  l.saved.push_back({.id = cur_, .elements = Count(path, {rows_, v_.d_model})});
  Push(std::move(l), Hidden(v_.d_model));
}

// The patches through a convolution of stride patch_size (an implicit GEMM over the patches; the
// pixels are data and need no gradient) of c·t·p·p inputs (Qwen-VL's Conv3d spans t frames), with a
// bias unless patch_bias is false; Llama4UnfoldConvolution unfolds the patches (a copy the linear
// keeps for dW) into a linear without a bias. A class token (the cat saves nothing) and learned
// positions, one per token or `position_rows` interpolated to the grid, are added.
void VisionBuilder::Embeddings() {
  const uint64_t d = v_.d_model, c = v_.channels, p = v_.patch_size, t = v_.temporal_patch;
  const uint64_t patch_rows = Count("vision", {images_, patches_});
  Layer conv;
  conv.path = "vision.embed.patch";
  conv.kind = LayerKind::kConv2d;
  conv.component = Component::kVision;
  if (t > 1)
    AddParamTensor(conv, {d, c, t, p, p}, false);
  else
    AddParamTensor(conv, {d, c, p, p}, false);
  if (v_.patch_bias) AddParamTensor(conv, {d}, false);
  conv.gemms.push_back({.m = patch_rows, .n = d, .k = Count(conv.path, {c, t, p, p}), .grad_a = false});
  conv.non_matmul_flops = v_.patch_bias ? Count(conv.path, {patch_rows, d}) : 0;
  if (llama4_) {
    conv.saved.push_back(
        {.id = "vision.embed.unfold", .elements = Count(conv.path, {patch_rows, c, p, p}), .dw_only = true});
  } else {
    conv.saved.push_back({.id = kInputTensor,
                          .elements = Count(conv.path, {images_, c, t, v_.image_size, v_.image_size}),
                          .dw_only = true});
  }
  Push(std::move(conv), {b_, Count("vision", {v_.images, v_.tiles, patches_}), d});
  if (v_.kind == VisionKind::kMllama) {
    // MllamaPrecomputedAspectRatioEmbedding (pre_tile): a tiles·d row per aspect-ratio id and a gate.
    Layer tile = MakeElementwise("vision.embed.pre_tile", LayerKind::kEmbedding, Component::kVision,
                                 Count("vision", {patch_rows, d}), kFlopsPerElementwise);
    AddParamTensor(tile, {v_.aspect_ratios, Count("vision", {v_.tiles, d})}, false);
    AddParamTensor(tile, {1}, false);
    Push(std::move(tile), {b_, Count("vision", {v_.images, v_.tiles, patches_}), d});
  }
  if (!v_.learned_positions) return;
  Layer pos = MakeElementwise("vision.embed.positions", LayerKind::kEmbedding, Component::kVision,
                              Count("vision", {rows_, d}), kFlopsPerElementwise);
  if (v_.class_token) AddParamTensor(pos, {d}, false);  // class_embedding
  AddParamTensor(pos, {v_.position_rows > 0 ? v_.position_rows : tokens_, d}, false);
  if (v_.kind == VisionKind::kMllama) {
    // MllamaPrecomputedPositionEmbedding: its gate and the tile embedding, one row of tiles x
    // (patches + 1) x d per aspect-ratio id.
    AddParamTensor(pos, {1}, false);
    AddParamTensor(pos, {v_.aspect_ratios, Count("vision", {v_.tiles, v_.position_rows, d})}, false);
  }
  Push(std::move(pos), Hidden(d));
}

// A pre-norm layer: x + attn(norm1(x)), then + mlp(norm2(.)); InternViT scales each branch by its
// layer scale, Mllama's global layers by the tanh of a learned gate.
void VisionBuilder::EncoderLayer(const std::string& p, bool gated) {
  Norm(p + "norm1");
  Attention(p);
  if (v_.layer_scale) Scale(p + "attn.scale", v_.d_model);
  if (gated) Scale(p + "attn.gate", 1);
  Residual(p + "attn.residual");
  Norm(p + "norm2");
  Mlp(p);
  if (v_.layer_scale) Scale(p + "mlp.scale", v_.d_model);
  if (gated) Scale(p + "mlp.gate", 1);
  Residual(p + "mlp.residual");
}

// q, k and v (each d x d; biases with qkv_bias) read the same input: one node with their three
// weights. InternViT's q and k RMSNorms, then 2D RoPE (Llama 4, Qwen-VL, Pixtral) in place; a
// windowed layer's queries see their window's window_tokens keys.
void VisionBuilder::Attention(const std::string& p) {
  const uint64_t d = v_.d_model, a = v_.n_heads, hd = d / a;
  const uint64_t s = tokens_, keys = window_ ? std::min(v_.window_tokens, tokens_) : tokens_;
  Layer qkv = MakeLinear(p + "attn.qkv", Component::kVision, rows_, d, 3 * d, v_.qkv_bias, cur_, true);
  qkv.params = 0;
  qkv.param_tensors.clear();
  for (int i = 0; i < 3; ++i) AddParamTensor(qkv, {d, d}, false);
  if (v_.qkv_bias) {
    for (int i = 0; i < 3; ++i) AddParamTensor(qkv, {d}, false);
  }
  Push(std::move(qkv), Hidden(3 * d));
  const std::string qkv_id = cur_;
  if (v_.qk_norm) {
    for (const char* name : {"attn.q_norm", "attn.k_norm"}) {
      Norm(p + name, rows_, d, Component::kVision, NormType::kRms);
      cur_ = qkv_id;
    }
  }
  if (v_.rope) {
    Push(MakeElementwise(p + "attn.rope", LayerKind::kRope, Component::kVision, Count(p, {rows_, 2 * d}),
                         kFlopsPerRopeElement),
         Hidden(3 * d), qkv_id);
  }
  const uint64_t bh = Count(p, {images_, a}), scores = Count(p, {bh, s, keys}), hidden = Count(p, {rows_, d});
  const std::vector<uint64_t> score_shape = {b_, Count(p, {v_.images, v_.tiles, a}), s, keys};
  Layer qk = MakeElementwise(p + "attn.scores", LayerKind::kAttentionScores, Component::kVision, scores,
                             kFlopsPerElementwise);  // the 1/sqrt(head_dim) scaling
  qk.gemms.push_back({.m = s, .n = keys, .k = hd, .count = bh});
  qk.saved = {{.id = qkv_id + ":q", .elements = hidden}, {.id = qkv_id + ":k", .elements = hidden}};
  Push(std::move(qk), score_shape);
  Layer softmax =
      MakeElementwise(p + "attn.softmax", LayerKind::kSoftmax, Component::kVision, scores, kFlopsPerElementwise);
  if (flash_) {
    softmax.saved.push_back({.id = softmax.path + ":lse", .elements = Count(p, {bh, s}), .cls = SavedClass::kFp32});
  } else {
    softmax.saved.push_back({.id = softmax.path, .elements = scores});
  }
  Push(std::move(softmax), score_shape);
  Layer av;
  av.path = p + "attn.context";
  av.kind = LayerKind::kAttentionContext;
  av.component = Component::kVision;
  av.gemms.push_back({.m = s, .n = hd, .k = keys, .count = bh});
  av.saved.push_back({.id = qkv_id + ":v", .elements = hidden});
  // Flash backward needs the output; it is also the out projection's saved input (one tensor).
  av.saved.push_back(flash_ ? SavedTensor{.id = av.path, .elements = hidden}
                            : SavedTensor{.id = cur_, .elements = scores});
  Push(std::move(av), Hidden(d));
  Linear(p + "attn.out", rows_, d, d, v_.out_bias, Component::kVision, Hidden(d));
}

// fc1, GELU (it saves its input), fc2; or, gated (Qwen2.5-VL, Pixtral), gate and up from the same
// input, SiLU(gate) · up (it saves the gate, its SiLU and up), down.
void VisionBuilder::Mlp(const std::string& p) {
  const uint64_t d = v_.d_model, f = v_.d_ff, hidden = Count(p, {rows_, f});
  if (!v_.gated_mlp) {
    Linear(p + "mlp.fc1", rows_, d, f, v_.mlp_bias, Component::kVision, Hidden(f));
    Activation(p + "mlp.act", rows_, f, Component::kVision, Hidden(f));
    Linear(p + "mlp.fc2", rows_, f, d, v_.mlp_bias, Component::kVision, Hidden(d));
    return;
  }
  const std::string input = cur_;
  Linear(p + "mlp.gate", rows_, d, f, v_.mlp_bias, Component::kVision, Hidden(f));
  const std::string gate = cur_;
  cur_ = input;
  Linear(p + "mlp.up", rows_, d, f, v_.mlp_bias, Component::kVision, Hidden(f));
  Layer act = MakeElementwise(p + "mlp.act", LayerKind::kActivation, Component::kVision, hidden, 2);
  act.op = ElementwiseOp::kGatedActivation;
  act.saved = {{.id = gate, .elements = hidden},
               {.id = p + "mlp.act:gate", .elements = hidden},
               {.id = cur_, .elements = hidden}};
  Push(std::move(act), Hidden(f));
  Linear(p + "mlp.down", rows_, f, d, v_.mlp_bias, Component::kVision, Hidden(d));
}

void AddVisionNodes(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings,
                    std::vector<Layer>& layers) {
  VisionBuilder(v, text_width, settings, layers).Build();
}

}  // namespace tally
