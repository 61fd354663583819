// The vision towers and projectors of config/model_spec.h's VisionSpec as nodes: SigLIP
// (modeling_siglip.py) with Gemma 3's projector (modeling_gemma3.py), Llama 4's vision model and
// projector (modeling_llama4.py), and CLIP (modeling_clip.py) with LLaVA's (modeling_llava.py). Saved tensors follow
// the language model's conventions (graph/transformer_context.cc, build_attention.cc): each LayerNorm its input and
// fp32 mean and rstd, each linear its input, QK^T q and k, softmax its probabilities (eager) or the fp32 log-sum-exp
// per row (flash), AV v and the probabilities (eager) or its output (flash), GELU its input. The tower is bidirectional
// and keeps no KV cache; its weights are replicated over tensor-parallel ranks.
#include "graph/build_vision.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

class VisionBuilder {
 public:
  VisionBuilder(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings, std::vector<Layer>& layers)
      : v_(v),
        text_width_(text_width),
        flash_(settings.attention == Attention::kFlash),
        b_(settings.batch),
        side_(v.image_size / v.patch_size),
        patches_(Count("vision", {side_, side_})),
        llama4_(v.kind == VisionKind::kLlama4),
        clip_(v.kind == VisionKind::kClip),
        tokens_(patches_ + (llama4_ || clip_ ? 1 : 0)),  // Llama 4's and CLIP's class token
        images_(Count("vision", {b_, v.images})),
        rows_(Count("vision", {images_, tokens_})),
        layers_(layers) {}

  void Build() {
    Embeddings();
    if (llama4_ || clip_) LayerNorm("vision.pre_norm");  // layernorm_pre, pre_layrnorm
    const uint64_t live = v_.live_layers == 0 ? v_.n_layers : v_.live_layers;
    std::string features;
    for (uint64_t i = 0; i < v_.n_layers; ++i) {
      if (i == live) features = cur_;
      dead_ = i >= live;
      EncoderLayer("vision.layers." + std::to_string(i) + ".");
    }
    if (clip_) {
      ClipHead(features.empty() ? cur_ : features);
      return;
    }
    LayerNorm("vision.post_norm");
    if (llama4_)
      Llama4Projector();
    else
      Projector();
  }

 private:
  // The tower's hidden states: every patch of every image of the batch, one row each.
  std::vector<uint64_t> Hidden(uint64_t width) const { return {b_, Count("vision", {v_.images, tokens_}), width}; }

  void Push(Layer l, std::vector<uint64_t> shape, const std::string& output_id = "") {
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

  // SiglipVisionEmbeddings: a patch_size x patch_size convolution of stride patch_size with a bias
  // (an implicit GEMM over the patches; the pixels are data and need no gradient), then one learned
  // position per patch added (no class token). Llama4UnfoldConvolution: the unfolded patches (a copy
  // the linear keeps for dW) through a linear without a bias; a class token appended (the cat saves
  // nothing) and one learned position per token.
  void Embeddings() {
    const uint64_t d = v_.d_model, c = v_.channels, p = v_.patch_size;
    const uint64_t patch_rows = Count("vision", {images_, patches_});
    Layer conv;
    conv.path = "vision.embed.patch";
    conv.kind = LayerKind::kConv2d;
    conv.component = Component::kVision;
    const bool bias = !llama4_ && !clip_;  // SigLIP's convolution only
    AddParamTensor(conv, {d, c, p, p}, false);
    if (bias) AddParamTensor(conv, {d}, false);
    conv.gemms.push_back({.m = patch_rows, .n = d, .k = Count(conv.path, {c, p, p}), .grad_a = false});
    conv.non_matmul_flops = bias ? Count(conv.path, {patch_rows, d}) : 0;
    if (llama4_) {
      conv.saved.push_back(
          {.id = "vision.embed.unfold", .elements = Count(conv.path, {patch_rows, c, p, p}), .dw_only = true});
    } else {
      conv.saved.push_back({.id = kInputTensor,
                            .elements = Count(conv.path, {images_, c, v_.image_size, v_.image_size}),
                            .dw_only = true});
    }
    Push(std::move(conv), {b_, Count("vision", {v_.images, patches_}), d});
    Layer pos = MakeElementwise("vision.embed.positions", LayerKind::kEmbedding, Component::kVision,
                                Count("vision", {rows_, d}), kFlopsPerElementwise);
    if (llama4_ || clip_) AddParamTensor(pos, {d}, false);  // class_embedding
    AddParamTensor(pos, {tokens_, d}, false);
    Push(std::move(pos), Hidden(d));
  }

  // nn.LayerNorm(d) with weight and bias over every patch.
  void LayerNorm(const std::string& path) {
    const uint64_t elements = Count(path, {rows_, v_.d_model});
    Layer n = MakeElementwise(path, LayerKind::kNorm, Component::kVision, elements, kFlopsPerLayerNormElement);
    AddParamTensor(n, {v_.d_model}, false);
    AddParamTensor(n, {v_.d_model}, false);
    n.saved.push_back({cur_, elements});
    n.saved.push_back({path + ":mean", rows_, SavedClass::kFp32});
    n.saved.push_back({path + ":rstd", rows_, SavedClass::kFp32});
    Push(std::move(n), Hidden(v_.d_model));
  }

  void Linear(const std::string& path, uint64_t rows, uint64_t in, uint64_t out, bool bias, Component c,
              std::vector<uint64_t> shape) {
    Push(MakeLinear(path, c, rows, in, out, bias, cur_, true), std::move(shape));
  }

  void Residual(const std::string& path) {
    Push(MakeElementwise(path, LayerKind::kResidualAdd, Component::kVision, Count(path, {rows_, v_.d_model}),
                         kFlopsPerElementwise),
         Hidden(v_.d_model));
  }

  // SiglipEncoderLayer: x + attn(layer_norm1(x)), then + mlp(layer_norm2(.)).
  void EncoderLayer(const std::string& p) {
    const uint64_t d = v_.d_model, a = v_.n_heads, hd = d / a, s = tokens_;
    LayerNorm(p + "norm1");
    // SiglipAttention: q_proj, k_proj and v_proj (each d x d with a bias) read the same input; one
    // node with their three weights and biases.
    Layer qkv = MakeLinear(p + "attn.qkv", Component::kVision, rows_, d, 3 * d, true, cur_, true);
    qkv.params = 0;
    qkv.param_tensors.clear();
    for (int i = 0; i < 3; ++i) AddParamTensor(qkv, {d, d}, false);
    for (int i = 0; i < 3; ++i) AddParamTensor(qkv, {d}, false);
    Push(std::move(qkv), Hidden(3 * d));
    const std::string qkv_id = cur_;
    if (llama4_) {
      // vision_apply_rotary_emb: 2D rotary positions over q and k, in place.
      Push(MakeElementwise(p + "attn.rope", LayerKind::kRope, Component::kVision, Count(p, {rows_, 2 * d}),
                           kFlopsPerRopeElement),
           Hidden(3 * d), qkv_id);
    }
    const uint64_t bh = Count(p, {images_, a}), scores = Count(p, {bh, s, s}), hidden = Count(p, {rows_, d});
    const std::vector<uint64_t> score_shape = {b_, Count(p, {v_.images, a}), s, s};
    Layer qk = MakeElementwise(p + "attn.scores", LayerKind::kAttentionScores, Component::kVision, scores,
                               kFlopsPerElementwise);  // the 1/sqrt(head_dim) scaling
    qk.gemms.push_back({.m = s, .n = s, .k = hd, .count = bh});
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
    av.gemms.push_back({.m = s, .n = hd, .k = s, .count = bh});
    av.saved.push_back({.id = qkv_id + ":v", .elements = hidden});
    // Flash backward needs the output; it is also the out projection's saved input (one tensor).
    av.saved.push_back(flash_ ? SavedTensor{.id = av.path, .elements = hidden}
                              : SavedTensor{.id = cur_, .elements = scores});
    Push(std::move(av), Hidden(d));
    Linear(p + "attn.out", rows_, d, d, true, Component::kVision, Hidden(d));
    Residual(p + "attn.residual");
    LayerNorm(p + "norm2");
    // SiglipMLP: fc1, GELU (tanh approximation; it saves its input), fc2.
    Linear(p + "mlp.fc1", rows_, d, v_.d_ff, true, Component::kVision, Hidden(v_.d_ff));
    Layer act = MakeElementwise(p + "mlp.act", LayerKind::kActivation, Component::kVision, Count(p, {rows_, v_.d_ff}),
                                kFlopsPerElementwise);
    act.saved.push_back({.id = cur_, .elements = Count(p, {rows_, v_.d_ff})});
    Push(std::move(act), Hidden(v_.d_ff));
    Linear(p + "mlp.fc2", rows_, v_.d_ff, d, true, Component::kVision, Hidden(d));
    Residual(p + "mlp.residual");
  }

  // Gemma3MultiModalProjector: the patch grid (a contiguous [d, side, side] copy per image) averaged
  // over kernel = stride = side / sqrt(tokens_per_image), Gemma3RMSNorm over d (computed in fp32:
  // it keeps the fp32 input, the rstd per row and the normalized x it scales by 1 + weight;
  // graph/node_costs.h), then a d x text_width matmul without a bias.
  void Projector() {
    const uint64_t d = v_.d_model, t = v_.tokens_per_image;
    const uint64_t tokens = Count("projector", {images_, t}), elements = Count("projector", {tokens, d});
    const std::vector<uint64_t> shape = {b_, Count("projector", {v_.images, t}), d};
    // DeepSpeed's profiler counts pooling as one FLOP per input element.
    Layer pool = MakeElementwise("projector.pool", LayerKind::kPool, Component::kProjector,
                                 Count("projector", {rows_, d}), kFlopsPerElementwise);
    pool.saved.push_back({.id = pool.path + ":input", .elements = Count("projector", {rows_, d})});
    Push(std::move(pool), shape);
    Layer norm =
        MakeElementwise("projector.norm", LayerKind::kNorm, Component::kProjector, elements, kFlopsPerRmsNormElement);
    AddParamTensor(norm, {d}, false);
    SaveRmsNorm(norm, cur_, elements, tokens, true, SavedClass::kFp32);
    Push(std::move(norm), shape);
    Linear("projector.proj", tokens, d, text_width_, false, Component::kProjector,
           {b_, Count("projector", {v_.images, t}), text_width_});
  }

  // Llama 4: layernorm_post's output without the class token, pixel-shuffled (reshapes and a permute:
  // a copy that fc1 keeps) into tokens_per_image tokens of d·shuffle² features;
  // Llama4VisionPixelShuffleMLP's fc1 and fc2 without biases, each followed by GELU (which saves its
  // input); then Llama4MultiModalProjector's linear_1 to the text width without a bias.
  void Llama4Projector() {
    const uint64_t t = v_.tokens_per_image, a = v_.adapter_width;
    const uint64_t rows = Count("vision.adapter", {images_, t});
    const uint64_t wide = Count("vision.adapter", {v_.d_model, v_.shuffle, v_.shuffle});
    auto shape = [&](uint64_t width) {
      return std::vector<uint64_t>{b_, Count("vision.adapter", {v_.images, t}), width};
    };
    cur_ = "vision.adapter.shuffle";
    Linear("vision.adapter.fc1", rows, wide, a, false, Component::kVision, shape(a));
    for (const char* name : {"vision.adapter.act1", "vision.adapter.act2"}) {
      Layer act = MakeElementwise(name, LayerKind::kActivation, Component::kVision, Count(name, {rows, a}),
                                  kFlopsPerElementwise);
      act.saved.push_back({.id = cur_, .elements = Count(name, {rows, a})});
      Push(std::move(act), shape(a));
      if (name == std::string("vision.adapter.act1")) {
        Linear("vision.adapter.fc2", rows, a, a, false, Component::kVision, shape(a));
      }
    }
    Linear("projector.proj", rows, a, text_width_, false, Component::kProjector, shape(text_width_));
  }

  // CLIPVisionTransformer's post_layernorm over the class token of the last layer (its pooled output,
  // which LLaVA does not use), then LlavaMultiModalProjector over the features of layer
  // vision_feature_layer: the patches (class token dropped unless the strategy is "full"; the slice
  // is copied for linear_1), linear_1, GELU, linear_2, with biases.
  void ClipHead(const std::string& features) {
    const uint64_t d = v_.d_model, t = v_.tokens_per_image;
    dead_ = true;
    Layer post = MakeElementwise("vision.post_norm", LayerKind::kNorm, Component::kVision,
                                 Count("vision", {images_, d}), kFlopsPerLayerNormElement);
    AddParamTensor(post, {d}, false);
    AddParamTensor(post, {d}, false);
    Push(std::move(post), {b_, v_.images, d});
    dead_ = false;
    const uint64_t rows = Count("projector", {images_, t});
    auto shape = [&](uint64_t width) { return std::vector<uint64_t>{b_, Count("projector", {v_.images, t}), width}; };
    cur_ = t == tokens_ ? features : "projector.select";
    Linear("projector.linear_1", rows, d, text_width_, true, Component::kProjector, shape(text_width_));
    Layer act = MakeElementwise("projector.act", LayerKind::kActivation, Component::kProjector,
                                Count("projector", {rows, text_width_}), kFlopsPerElementwise);
    act.saved.push_back({.id = cur_, .elements = Count("projector", {rows, text_width_})});
    Push(std::move(act), shape(text_width_));
    Linear("projector.linear_2", rows, text_width_, text_width_, true, Component::kProjector, shape(text_width_));
  }

  const VisionSpec& v_;
  const uint64_t text_width_;
  const bool flash_;
  const uint64_t b_, side_, patches_;
  const bool llama4_, clip_;
  bool dead_ = false;  // building a layer whose output no loss reads
  const uint64_t tokens_, images_, rows_;
  std::vector<Layer>& layers_;
  std::string cur_ = std::string(kInputTensor);
};

}  // namespace

void AddVisionNodes(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings,
                    std::vector<Layer>& layers) {
  VisionBuilder(v, text_width, settings, layers).Build();
}

}  // namespace tally
