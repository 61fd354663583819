#include "graph/build_embeddings.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

// A Conv1d of kernel 3 with a bias from `in` channels over `in_length` positions to d_model over
// `length`, as a GEMM (rows: batch x length, k: in x 3), then GELU (which saves its input).
void Conv(TransformerContext& ctx, const std::string& path, uint64_t in, uint64_t in_length, uint64_t length,
          bool input_needs_grad) {
  const uint64_t h = ctx.t.d_model, rows = Count(path, {ctx.batch, length}), k = Count(path, {in, 3});
  Layer conv;
  conv.path = path;
  conv.kind = LayerKind::kConv2d;
  conv.component = Component::kConv2d;
  AddParamTensor(conv, {h, in, 3}, false);
  AddParamTensor(conv, {h}, false);
  conv.gemms.push_back({.m = rows, .n = h, .k = k, .grad_a = input_needs_grad});
  conv.non_matmul_flops = Count(path, {rows, h});  // the bias
  // Its input, kept for dW: the mel features are data (kInputTensor), conv2's the first GELU's output.
  conv.saved.push_back({.id = ctx.cur, .elements = Count(path, {ctx.batch, in_length, in}), .dw_only = true});
  ctx.Add(std::move(conv), {ctx.batch, length, h});
  Layer act = MakeElementwise(path + ".act", LayerKind::kActivation, Component::kConv2d, Count(path, {rows, h}),
                              kFlopsPerElementwise);
  act.saved.push_back({.id = ctx.cur, .elements = Count(path, {rows, h})});
  ctx.Add(std::move(act), {ctx.batch, length, h});
}

// modeling_bart.py, scale_embedding: the token embeddings times sqrt(d_model), one multiply each.
void EmbedScale(TransformerContext& ctx, const std::string& path) {
  ctx.Add(MakeElementwise(path, LayerKind::kActivation, Component::kEmbedding, Count(path, {ctx.rows, ctx.t.d_model}),
                          kFlopsPerElementwise),
          ctx.Hidden());
}

// modeling_whisper.py: the decoder's token table (the one the tied proj_out reads, so the first
// node) and learned positions of max_target_positions rows; the encoder's two convolutions over
// 2·seq mel frames, each followed by GELU (conv1: mel_bins -> d, conv2: d -> d with stride 2, both
// kernel 3 and padding 1, so seq frames come out), and its sinusoidal positions, stored as an
// embedding of max_source_positions rows that does not train (requires_grad False).
void AudioEmbeddings(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model;
  ctx.Stack(true);
  Layer tokens;
  tokens.path = "embed.tokens";
  tokens.kind = LayerKind::kEmbedding;
  tokens.component = Component::kEmbedding;
  AddParamTensor(tokens, {ctx.t.vocab_size, h}, true);
  ctx.Add(std::move(tokens), ctx.Hidden());
  Layer pos = MakeElementwise("decoder.embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                              Count("decoder.embed.positions", {ctx.rows, h}), kFlopsPerElementwise);
  AddParamTensor(pos, {ctx.t.target_context, h}, false);
  ctx.Add(std::move(pos), ctx.Hidden());
  ctx.Dropout("decoder.embed.dropout", Count("decoder.embed", {ctx.rows, h}), Component::kEmbedding);
  ctx.target_embedding = ctx.cur;
  ctx.Stack(false);
  const uint64_t frames = Count("encoder.conv1", {2, ctx.seq});
  ctx.cur = kInputTensor;
  Conv(ctx, "encoder.conv1", ctx.t.mel_bins, frames, frames, false);
  Conv(ctx, "encoder.conv2", h, frames, ctx.seq, true);
  Layer sinusoid = MakeElementwise("embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                   Count("embed.positions", {ctx.rows, h}), kFlopsPerElementwise);
  AddParamTensor(sinusoid, {ctx.t.context_length, h}, false);
  sinusoid.trainable = false;
  ctx.Add(std::move(sinusoid), ctx.Hidden());
  ctx.Dropout("embed.dropout", Count("embed", {ctx.rows, h}), Component::kEmbedding);
}

// modeling_deberta_v2.py, DebertaV2Encoder.get_rel_embedding: the relative-position table (one
// row per relative bucket), LayerNorm'd once per forward pass for every layer to read. The batch
// shares it; its shape is written per sequence of the batch, as every node's is (a small
// overstatement of its bytes). The token stream flows on past both nodes.
void RelativeEmbeddings(TransformerContext& ctx) {
  const DisentangledSpec& r = ctx.t.disentangled;
  const uint64_t h = ctx.t.d_model, elements = Count("encoder.rel_embeddings", {r.rel_rows, h});
  const std::string stream = ctx.cur;
  Layer table;
  table.path = "encoder.rel_embeddings";
  table.kind = LayerKind::kEmbedding;
  table.component = Component::kEmbedding;
  AddParamTensor(table, {r.rel_rows, h}, false);
  ctx.Add(std::move(table), {ctx.batch, r.rel_rows, h}, "encoder.rel_embeddings");
  if (r.rel_norm) {
    Layer norm =
        MakeElementwise("encoder.rel_norm", LayerKind::kNorm, Component::kNorm, elements, kFlopsPerLayerNormElement);
    norm.op = ElementwiseOp::kLayerNorm;
    AddParamTensor(norm, {h}, false);
    AddParamTensor(norm, {h}, false);
    norm.saved = {{"encoder.rel_embeddings", elements, SavedClass::kAutocastFp32},
                  {"encoder.rel_norm:mean", r.rel_rows, SavedClass::kFp32},
                  {"encoder.rel_norm:rstd", r.rel_rows, SavedClass::kFp32}};
    ctx.Add(std::move(norm), {ctx.batch, r.rel_rows, h}, "encoder.rel_norm");
  }
  ctx.cur = stream;
}

}  // namespace

void AddEmbeddings(TransformerContext& ctx) {
  if (ctx.t.mel_bins > 0) {
    AudioEmbeddings(ctx);
    return;
  }
  Layer tokens;
  tokens.path = "embed.tokens";
  tokens.kind = LayerKind::kEmbedding;
  tokens.component = Component::kEmbedding;
  // Vocabulary-parallel (Megatron-LM); Mllama's table has 8 rows past the head's vocabulary.
  AddParamTensor(
      tokens, {CheckedAdd(ctx.t.vocab_size, ctx.t.extra_embedding_rows, "the embedding rows"), ctx.EmbedDim()}, true);
  ctx.Add(std::move(tokens), {ctx.batch, ctx.seq, ctx.EmbedDim()});
  if (ctx.t.embed_scale) EmbedScale(ctx, "embed.scale");
  if (ctx.EmbedDim() != ctx.t.d_model) {
    ctx.Add(MakeLinear("embed.project_in", Component::kEmbedProjection, ctx.rows, ctx.EmbedDim(), ctx.t.d_model, false,
                       ctx.cur, true),
            ctx.Hidden());
  }
  if (ctx.t.position == PositionKind::kLearned) {
    Layer pos = MakeElementwise("embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                Count("embed.positions", {ctx.rows, ctx.t.d_model}), kFlopsPerElementwise);
    uint64_t rows = CheckedAdd(ctx.t.context_length, ctx.t.position_offset, "learned positions");
    AddParamTensor(pos, {rows, ctx.t.d_model}, false);
    ctx.Add(std::move(pos), ctx.Hidden());
  }
  if (ctx.t.token_types > 0) {  // modeling_bert.py, BertEmbeddings: word + position + token type
    Layer types = MakeElementwise("embed.token_types", LayerKind::kEmbedding, Component::kEmbedding,
                                  Count("embed.token_types", {ctx.rows, ctx.t.d_model}), kFlopsPerElementwise);
    AddParamTensor(types, {ctx.t.token_types, ctx.t.d_model}, false);
    ctx.Add(std::move(types), ctx.Hidden());
  }
  if (ctx.t.embedding_norm) ctx.Add(ctx.Norm("embed.norm"), ctx.Hidden());
  ctx.Dropout("embed.dropout", Count("embed", {ctx.rows, ctx.t.d_model}), Component::kEmbedding);
  if (ctx.t.disentangled.rel_rows > 0) RelativeEmbeddings(ctx);
  if (ctx.t.encoder_layers > 0) {
    // modeling_t5.py and modeling_bart.py: the decoder looks its target tokens up in the same
    // shared table (the models' `shared`), whose weight embed.tokens holds; BART's decoder has
    // its own learned positions and embedding LayerNorm.
    const std::string source = ctx.cur;
    ctx.Stack(true);
    Layer lookup;
    lookup.path = "decoder.embed.tokens";
    lookup.kind = LayerKind::kEmbedding;
    lookup.component = Component::kEmbedding;
    ctx.Add(std::move(lookup), ctx.Hidden());
    if (ctx.t.embed_scale) EmbedScale(ctx, "decoder.embed.scale");
    if (ctx.t.position == PositionKind::kLearned) {
      Layer pos = MakeElementwise("decoder.embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                  Count("decoder.embed.positions", {ctx.rows, ctx.t.d_model}), kFlopsPerElementwise);
      AddParamTensor(pos, {CheckedAdd(ctx.t.context_length, ctx.t.position_offset, "learned positions"), ctx.t.d_model},
                     false);
      ctx.Add(std::move(pos), ctx.Hidden());
    }
    if (ctx.t.embedding_norm) ctx.Add(ctx.Norm("decoder.embed.norm"), ctx.Hidden());
    ctx.Dropout("decoder.embed.dropout", Count("decoder.embed", {ctx.rows, ctx.t.d_model}), Component::kEmbedding);
    ctx.target_embedding = ctx.cur;
    ctx.Stack(false);
    ctx.cur = source;
  }
}

}  // namespace tally
