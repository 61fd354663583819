// transformers modeling_gemma3n.py as nodes. n = altup_inputs streams of width h, P =
// hidden_size_per_layer_input, L = num_hidden_layers, r = laurel_rank. Matmul FLOPs are exact; the
// elementwise ones follow graph/node_costs.h (one per element and operation; RMSNorm 4; a tanh or
// GELU 1). AltUp's per-token mixing of the streams, torch.matmul([h, n], [n, n]) for every token,
// is a batched GEMM of m = h, n = n, k = n. Training activations are not modelled
// (graph/build_transformer.cc refuses them): the nodes' saved tensors are not meaningful.
#include "graph/build_gemma3n.h"

#include <string>
#include <tuple>
#include <vector>

#include "graph/build_attention.h"
#include "graph/build_mlp.h"
#include "graph/build_mobilenetv5.h"
#include "graph/node_costs.h"

namespace tally {
namespace {

std::vector<uint64_t> Streams(const TransformerContext& ctx, uint64_t n) {
  return {ctx.batch, ctx.seq, Count("streams", {n, ctx.t.d_model})};
}

void Linear(TransformerContext& ctx, const std::string& name, Component c, uint64_t in, uint64_t out,
            uint64_t copies = 1) {
  Layer l = MakeLinear(ctx.P(name), c, ctx.rows, in, out, false, ctx.cur, true);
  if (copies > 1) {  // `copies` separate linears of the same shape (altup_projections)
    l.params = 0;
    l.param_tensors.clear();
    for (uint64_t i = 0; i < copies; ++i) AddParamTensor(l, {in, out}, false);
    l.gemms.front().count = copies;
  }
  ctx.Add(std::move(l), {ctx.batch, ctx.seq, copies > 1 ? Count(ctx.P(name), {copies, out}) : out});
}

// An elementwise node of `flops` per element over `elements`, with `params` weights (0: none).
void Elementwise(TransformerContext& ctx, const std::string& name, LayerKind kind, Component c, uint64_t elements,
                 uint64_t flops, std::vector<uint64_t> shape, uint64_t params = 0) {
  Layer l = MakeElementwise(ctx.P(name), kind, c, elements, flops);
  if (params > 0) AddParamTensor(l, {params}, false);
  ctx.Add(std::move(l), std::move(shape));
}

// Gemma3nRMSNorm over `width` features with a weight of `width` (or `weight` when given).
void Norm(TransformerContext& ctx, const std::string& name, uint64_t width, uint64_t weight = 0) {
  ctx.Add(ctx.Norm(ctx.P(name), width, weight), {ctx.batch, ctx.seq, width});
}

// The streams after the first brought to the first's magnitude (Gemma3nTextModel.forward):
// each stream's mean square and root (2 per element), then · target / new (2 per element); the
// target's mean square is 2 more per element of the first stream.
uint64_t MagnitudeFlops(const TransformerContext& ctx, uint64_t n) {
  return Count("altup", {ctx.rows, ctx.t.d_model, CheckedAdd(2, CheckedMul(4, n - 1, "altup"), "altup")});
}

// Gemma3nTextAltUp.compute_router_modalities: router_norm (RMSNorm, weight h), · 1/h, the
// modality_router (h -> n, no bias), tanh. `first`: the weights are counted here; the correct
// step reuses them.
void Router(TransformerContext& ctx, const std::string& name, bool first) {
  const uint64_t h = ctx.t.d_model, n = ctx.t.gemma3n.altup_inputs;
  Layer norm = MakeElementwise(ctx.P(name + ".router_norm"), LayerKind::kNorm, Component::kNorm,
                               Count(ctx.P(name), {ctx.rows, h}), kFlopsPerRmsNormElement + 1);
  norm.op = ElementwiseOp::kRmsNorm;
  if (first) AddParamTensor(norm, {h}, false);
  ctx.Add(std::move(norm), ctx.Hidden());
  Layer router = MakeLinear(ctx.P(name + ".router"), Component::kRouter, ctx.rows, h, n, false, ctx.cur, true);
  if (!first) {
    router.params = 0;
    router.param_tensors.clear();
  }
  router.non_matmul_flops = Count(ctx.P(name), {ctx.rows, n});  // the tanh
  ctx.Add(std::move(router), {ctx.batch, ctx.seq, n});
}

}  // namespace

uint64_t Gemma3nAudioParams(const Gemma3nSpec& s) {
  if (s.audio_width == 0) return 0;
  const std::string what = "the audio tower's parameters";
  const uint64_t h = s.audio_width;
  auto sum = [&](std::initializer_list<uint64_t> terms) {
    uint64_t total = 0;
    for (uint64_t x : terms) total = CheckedAdd(total, x, what);
    return total;
  };
  // Gemma3nAudioSubSampleConvProjection: two Conv2d without biases (1 -> c0, c0 -> c1 channels),
  // each with a CumulativeGroupNorm weight per channel; the frequency axis padded by 1 on each side,
  // f_out = (f_in + 2 - kernel_w) / stride_w + 1; then input_proj_linear (c1 · f1 -> h, no bias).
  uint64_t f = s.audio_mel_bins;
  uint64_t in_channels = 1, sscp = 0;
  for (size_t i = 0; i < 2; ++i) {
    const uint64_t c = s.sscp_channels[i], kh = s.sscp_kernels[i][0], kw = s.sscp_kernels[i][1];
    sscp = sum({sscp, CheckedProduct({c, in_channels, kh, kw}, what), c});
    f = (f + 2 - kw) / s.sscp_strides[i][1] + 1;
    in_channels = c;
  }
  sscp = sum({sscp, CheckedProduct({in_channels, f, h}, what)});
  const uint64_t hh = CheckedMul(h, h, what);
  // Gemma3nAudioConformerFeedForward: pre and post RMSNorms, h -> 4h -> h without biases.
  const uint64_t ffw = sum({CheckedMul(8, hh, what), CheckedMul(2, h, what)});
  // Gemma3nAudioConformerAttention: pre_attn_norm, q, k, v (h x h), the relative position
  // embedding's pos_proj (h x h), per_dim_scale (head_dim), post (h x h), post_norm.
  const uint64_t attention = sum({CheckedMul(5, hh, what), CheckedMul(2, h, what), h / s.audio_heads});
  // Gemma3nAudioConformerLightConv1d: pre_layer_norm, linear_start (h -> 2h), the depthwise Conv1d
  // (h x kernel, no bias), conv_norm, linear_end (h x h).
  const uint64_t lconv =
      sum({CheckedMul(3, hh, what), CheckedMul(h, s.audio_conv_kernel, what), CheckedMul(2, h, what)});
  // Gemma3nAudioConformerBlock: ffw_layer_start, attention, lconv1d, ffw_layer_end, norm.
  const uint64_t block = sum({CheckedMul(2, ffw, what), attention, lconv, h});
  return sum({sscp, CheckedMul(s.audio_layers, block, what)});
}

void AddGemma3nInputs(TransformerContext& ctx) {
  const Gemma3nSpec& s = ctx.t.gemma3n;
  const uint64_t h = ctx.t.d_model, n = s.altup_inputs, width = Count("embed", {ctx.t.n_layers, s.per_layer_width});
  const uint64_t elements = Count("embed.per_layer", {ctx.rows, width});
  const std::vector<uint64_t> per_layer_shape = {ctx.batch, ctx.seq, width};
  const std::string embedded = ctx.cur;
  // embed_tokens_per_layer: a table of vocab_size_per_layer_input x L·P, scaled by sqrt(P).
  Layer table =
      MakeElementwise("embed.per_layer", LayerKind::kEmbedding, Component::kEmbedding, elements, kFlopsPerElementwise);
  AddParamTensor(table, {s.per_layer_vocab, width}, false);
  ctx.Add(std::move(table), per_layer_shape);
  // per_layer_model_projection (h -> L·P, no bias) of the scaled token embedding, · h^-0.5, the
  // per_layer_projection_norm over each P (weight P), then (projection + table) · 2^-0.5.
  ctx.cur = embedded;
  Layer projection =
      MakeLinear("embed.per_layer_projection", Component::kEmbedProjection, ctx.rows, h, width, false, ctx.cur, true);
  projection.non_matmul_flops = elements;  // the scale
  ctx.Add(std::move(projection), per_layer_shape);
  ctx.Add(ctx.Norm("embed.per_layer_norm", width, s.per_layer_width), per_layer_shape);
  Elementwise(ctx, "embed.per_layer_combine", LayerKind::kResidualAdd, Component::kEmbedding, elements, 2,
              per_layer_shape);
  // altup_projections: n - 1 linears h -> h of the embedded tokens, each stream then brought to
  // the first's magnitude.
  ctx.cur = embedded;
  if (n > 1) {
    Linear(ctx, "embed.altup_projections", Component::kEmbedProjection, h, h, n - 1);
    Elementwise(ctx, "embed.altup_magnitude", LayerKind::kNorm, Component::kEmbedProjection, MagnitudeFlops(ctx, n), 1,
                Streams(ctx, n));
  }
  if (s.vision_tower_counted) {
    // The vision tower's weights, tensor by tensor (timm's mobilenetv5_300m_enc:
    // graph/build_mobilenetv5.cc); like the audio tower's, its FLOPs are not counted.
    Layer vision;
    vision.path = "vision_tower";
    vision.kind = LayerKind::kConv2d;
    vision.component = Component::kVision;
    for (std::vector<uint64_t>& shape : MobileNetV5Tensors()) AddParamTensor(vision, std::move(shape), false);
    ctx.Add(std::move(vision), ctx.Hidden(), ctx.cur);
  }
  if (s.audio_width > 0) {
    // The audio tower's weights, counted (not its FLOPs: the conformer is not built as nodes),
    // and the embedders (Gemma3nMultimodalEmbedder): a table of vocab_size soft-token rows, the
    // hard and soft embedding norms, embedding_projection (width -> h, no bias); its post-projection
    // norm has no weight.
    Layer audio;
    audio.path = "audio_tower";
    audio.kind = LayerKind::kLinear;
    audio.component = Component::kAudio;
    AddParamTensor(audio, {Gemma3nAudioParams(s)}, false);
    ctx.Add(std::move(audio), ctx.Hidden(), ctx.cur);
  }
  for (const auto& [name, w, vocab] :
       {std::tuple<const char*, uint64_t, uint64_t>{"embed_audio", s.audio_width, s.audio_vocab},
        {"embed_vision", s.vision_width, s.vision_vocab}}) {
    if (w == 0) continue;
    Layer embedder;
    embedder.path = name;
    embedder.kind = LayerKind::kLinear;
    embedder.component = Component::kProjector;
    AddParamTensor(embedder, {vocab, w}, false);
    AddParamTensor(embedder, {w}, false);
    AddParamTensor(embedder, {w}, false);
    AddParamTensor(embedder, {w, h}, false);
    ctx.Add(std::move(embedder), ctx.Hidden(), ctx.cur);
  }
}

void AddGemma3nBlock(TransformerContext& ctx) {
  const Gemma3nSpec& s = ctx.t.gemma3n;
  const uint64_t h = ctx.t.d_model, n = s.altup_inputs, r = s.laurel_rank, p = s.per_layer_width;
  const uint64_t hidden = Count(ctx.P("hidden"), {ctx.rows, h});
  const uint64_t streams = Count(ctx.P("streams"), {hidden, n});
  // Gemma3nTextAltUp.predict: the router over the active stream, prediction_coefs (n -> n², no
  // bias) per token, the streams mixed by those n x n coefficients, plus the streams.
  Router(ctx, "altup", true);
  Layer predict = MakeLinear(ctx.P("altup.predict"), Component::kRouter, ctx.rows, n, n * n, false, ctx.cur, true);
  predict.gemms.push_back({.m = h, .n = n, .k = n, .count = ctx.rows});
  predict.non_matmul_flops = streams;  // + the streams
  ctx.Add(std::move(predict), Streams(ctx, n));
  // input_layernorm of the active prediction; LAuReL (Gemma3nTextLaurelBlock): linear_left
  // (h -> r), linear_right (r -> h), post_laurel_norm, + its input.
  Norm(ctx, "attn_norm", h);
  const std::string normed = ctx.cur;
  Linear(ctx, "laurel.left", Component::kMlp, h, r);
  Linear(ctx, "laurel.right", Component::kMlp, r, h);
  Norm(ctx, "laurel.norm", h);
  Elementwise(ctx, "laurel.residual", LayerKind::kResidualAdd, Component::kMlp, hidden, 1, ctx.Hidden());
  // Self-attention over the normed prediction, post_attention_layernorm, + the active prediction,
  // then (that + LAuReL's output) / sqrt(2).
  ctx.cur = normed;
  AddAttention(ctx);
  Norm(ctx, "attn.post_norm", h);
  ctx.Residual(ctx.P("attn.residual"), 1);
  Elementwise(ctx, "laurel.combine", LayerKind::kResidualAdd, Component::kMlp, hidden, 2, ctx.Hidden());
  // pre_feedforward_layernorm, the MLP, post_feedforward_layernorm, + its input. A sparse layer's
  // gate first goes through Gemma3nTextMLP._gaussian_topk: mean (1), deviation, square and sum for
  // the std (3), the cutoff subtracted (1) and a ReLU (1): 6 per element of the gate.
  Norm(ctx, "mlp_norm", h);
  AddMlp(ctx);
  if (ctx.layer.sparse_gate) {
    const uint64_t f = ctx.layer.d_ff == 0 ? ctx.t.d_ff : ctx.layer.d_ff;
    Elementwise(ctx, "mlp.sparsity", LayerKind::kActivation, Component::kMlp, Count(ctx.P("mlp"), {ctx.rows, f}), 6,
                ctx.Hidden());
  }
  Norm(ctx, "mlp.post_norm", h);
  ctx.Residual(ctx.P("mlp.residual"), 1);
  // Gemma3nTextAltUp.correct: the router again (its weights counted above), correction_coefs
  // (n -> n, no bias) + 1 per token and stream, the innovation (output - active prediction: 1 per
  // element of h), then each stream + innovation · its coefficient (2 per element of each stream).
  Router(ctx, "altup.correct", false);
  Layer correct = MakeLinear(ctx.P("altup.correct.coefs"), Component::kRouter, ctx.rows, n, n, false, ctx.cur, true);
  correct.non_matmul_flops =
      CheckedAdd(Count(ctx.P("altup"), {ctx.rows, n}),
                 Count(ctx.P("altup"), {hidden, CheckedAdd(1, CheckedMul(2, n, "altup"), "altup")}), "altup");
  ctx.Add(std::move(correct), Streams(ctx, n));
  // correct_output_scale (a weight of h) on the first corrected stream; per_layer_input_gate
  // (h -> P), the activation and · this layer's per-layer input; per_layer_projection (P -> h),
  // post_per_layer_input_norm, added to the n - 1 other streams.
  Elementwise(ctx, "altup.scale", LayerKind::kActivation, Component::kRouter, hidden, 1, ctx.Hidden(), h);
  Linear(ctx, "per_layer.gate", Component::kMlp, h, p);
  Elementwise(ctx, "per_layer.act", LayerKind::kActivation, Component::kMlp, Count(ctx.P("per_layer"), {ctx.rows, p}),
              2, {ctx.batch, ctx.seq, p});
  Linear(ctx, "per_layer.projection", Component::kMlp, p, h);
  Norm(ctx, "per_layer.norm", h);
  Elementwise(ctx, "per_layer.residual", LayerKind::kResidualAdd, Component::kMlp,
              Count(ctx.P("per_layer"), {hidden, n - 1}), 1, Streams(ctx, n));
}

void AddGemma3nOutputs(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model, n = ctx.t.gemma3n.altup_inputs;
  if (n > 1) {
    // altup_unembed_projections: n - 1 linears h -> h of the other streams, brought to the first
    // stream's magnitude, then the mean of the n streams (n per element of h).
    Linear(ctx, "altup_unembed", Component::kEmbedProjection, h, h, n - 1);
    Elementwise(ctx, "altup_unembed.magnitude", LayerKind::kNorm, Component::kEmbedProjection,
                CheckedAdd(MagnitudeFlops(ctx, n), Count("altup_unembed", {ctx.rows, h, n}), "altup_unembed"), 1,
                ctx.Hidden());
  }
}

}  // namespace tally
