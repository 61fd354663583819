#include "graph/build_attention.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

// What the attention core (scores, softmax, context) works on, from whichever projections made
// q, k and v.
struct Core {
  std::string qkv;               // id of the tensor holding q, k and v
  uint64_t qk_dim = 0;           // per head: the scores' inner dimension
  uint64_t v_dim = 0;            // per head: the context's output width
  uint64_t k_width = 0;          // K elements per token (all heads), as saved for backward
  uint64_t v_width = 0;          // V elements per token
  uint64_t kv_shards = 0;        // tensor-parallel ranks K and V split over at most (0: every rank)
  uint64_t cache_per_token = 0;  // KV cache elements per token (graph/layer.h)
  uint64_t cache_shards = 0;
  AttentionKind cache_kind = AttentionKind::kFull;
  std::string q;        // id of the tensor holding q alone, when not qkv (cross-attention)
  uint64_t k_rows = 0;  // rows of K and V when not the queries' (cross-attention: the source's)
};
// modeling_t5.py, T5Attention.compute_bias: a [buckets, heads] embedding looked up at each
// query-key pair's bucket gives a [1, heads, q, k] bias, which every layer of the stack adds to
// its scores (the add is the scores node's one FLOP per element: T5 does not scale them).
void RelativeBias(TransformerContext& ctx) {
  Layer bias;
  bias.path = ctx.P("attn.relative_bias");
  bias.kind = LayerKind::kEmbedding;
  bias.component = Component::kAttention;
  AddParamTensor(bias, {ctx.t.relative_buckets, ctx.t.n_heads}, false);
  ctx.Add(std::move(bias), {ctx.batch, ctx.t.n_heads, ctx.seq, ctx.kv}, ctx.cur);  // the block's input flows on past it
}

// modeling_t5.py, T5LayerCrossAttention: q from the decoder's stream, k and v from the encoder's
// output (source rows); no RoPE, no cache split beyond the heads.
Core CrossProjections(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model, a = ctx.t.n_heads, d = ctx.t.head_dim;
  const uint64_t width = Count(ctx.P("cross"), {a, d});
  ctx.AddLinear(MakeLinear(ctx.P("cross.q"), Component::kAttention, ctx.rows, h, width, ctx.t.qkv_bias, ctx.cur, true,
                           TpSplit::kColumn),
                {ctx.batch, ctx.seq, width}, "qkv");
  const std::string q = ctx.cur;
  const uint64_t src_rows = Count("tokens", {ctx.batch, ctx.src_seq});
  Layer kv = MakeLinear(ctx.P("cross.kv"), Component::kAttention, src_rows, h, Count(ctx.P("cross"), {2, width}),
                        ctx.t.qkv_bias, ctx.encoder_output, true, TpSplit::kColumn);
  if (ctx.t.qkv_bias && !ctx.t.k_bias) {  // v's bias only
    kv.params -= width;
    kv.param_tensors.back().shape = {width};
    kv.non_matmul_flops = Count(ctx.P("cross.kv"), {src_rows, width});
  }
  if (!ctx.t.qkv_fused) {  // k_proj and v_proj, stored apart
    kv.params = 0;
    kv.param_tensors.clear();
    for (int i = 0; i < 2; ++i) AddParamTensor(kv, {h, width}, true);
    if (ctx.t.qkv_bias && ctx.t.k_bias) AddParamTensor(kv, {width}, true);
    if (ctx.t.qkv_bias) AddParamTensor(kv, {width}, true);
  }
  ctx.source_side = true;  // projected once per source; a decode step reads the cache instead
  using Parts = std::vector<std::pair<std::string, uint64_t>>;
  ctx.AddLinear(std::move(kv), {ctx.batch, ctx.src_seq, Count(ctx.P("cross"), {2, width})}, "qkv",
                ctx.t.qkv_fused ? Parts{} : Parts{{"k", width}, {"v", width}});
  ctx.source_side = false;
  return {.qkv = ctx.cur,
          .qk_dim = d,
          .v_dim = d,
          .k_width = width,
          .v_width = width,
          .kv_shards = a,
          .cache_per_token = Count(ctx.P("cross"), {2, width}),
          .cache_shards = a,
          .cache_kind = AttentionKind::kCross,
          .q = q,
          .k_rows = src_rows};
}

// Rotary positions over q and k in place: `heads` heads of `rotary` dimensions each, in a tensor
// of `width` elements per token. It runs on the heads tensor parallelism splits, every rank its own
// (the K heads past their number, and MLA's one shared key, counted split as the query heads are).
void Rope(TransformerContext& ctx, uint64_t heads, uint64_t rotary, uint64_t width, const std::string& qkv) {
  if (ctx.t.position != PositionKind::kRope || rotary == 0) return;
  Layer rope = MakeElementwise(ctx.P("attn.rope"), LayerKind::kRope, Component::kAttention,
                               Count(ctx.P("attn.rope"), {ctx.rows, heads, rotary}), kFlopsPerRopeElement);
  SplitOverTp(rope);
  ctx.Add(std::move(rope), {ctx.batch, ctx.seq, width}, qkv);
}

// Multi-head, grouped-query and multi-query attention: q, k and v projections of a·d, g·d, g·d.
Core HeadProjections(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model, a = ctx.t.n_heads, g = ctx.t.n_kv_heads, d = ctx.t.head_dim;
  const uint64_t q_width = Count(ctx.P("attn"), {a, d}), kv_width = Count(ctx.P("attn"), {g, d});
  // Qwen3-Next's q_proj also makes the output gate, a·d more (TransformerSpec::attention_output_gate).
  const uint64_t q_proj = ctx.t.attention_output_gate ? Count(ctx.P("attn"), {2, q_width}) : q_width;
  const uint64_t qkv_width = CheckedAdd(q_proj, Count(ctx.P("attn"), {2, kv_width}), "width of " + ctx.P("attn.qkv"));
  Layer qkv_linear = MakeLinear(ctx.P("attn.qkv"), Component::kAttention, ctx.rows, h, qkv_width, ctx.t.qkv_bias,
                                ctx.cur, true, TpSplit::kColumn);
  if (ctx.t.qkv_bias && !ctx.t.k_bias) {
    // modeling_whisper.py: k_proj has no bias; q_proj and v_proj do.
    qkv_linear.params -= kv_width;
    qkv_linear.param_tensors.back().shape = {q_width + kv_width};
    qkv_linear.non_matmul_flops = Count(ctx.P("attn.qkv"), {ctx.rows, q_width + kv_width});
  }
  if (g < a || !ctx.t.qkv_fused) {
    // Grouped-query attention: Q splits over every tensor-parallel rank, K and V over at most
    // their g heads, each rank past them holding a replica (vLLM's QKVParallelLinear; tp must
    // divide g or be a multiple of it: build_graph.cc). Three tensors, as models that store
    // q_proj, k_proj and v_proj apart hold them (which Adafactor factors apart).
    qkv_linear.params = 0;
    qkv_linear.param_tensors.clear();
    const std::pair<uint64_t, uint64_t> parts[] = {{q_proj, 0}, {kv_width, g}, {kv_width, g}};  // width, max shards
    for (const auto& [width, shards] : parts) AddParamTensor(qkv_linear, {h, width}, true, shards);
    if (ctx.t.qkv_bias) {
      for (size_t i = 0; i < 3; ++i) {
        if (i != 1 || ctx.t.k_bias) AddParamTensor(qkv_linear, {parts[i].first}, true, parts[i].second);
      }
    }
  }
  using Parts = std::vector<std::pair<std::string, uint64_t>>;
  ctx.AddLinear(std::move(qkv_linear), {ctx.batch, ctx.seq, qkv_width}, "qkv",
                ctx.t.qkv_fused ? Parts{} : Parts{{"q", q_proj}, {"k", kv_width}, {"v", kv_width}});
  const std::string qkv = ctx.cur;
  if (ctx.t.qk_norm != QkNorm::kNone) {
    // Normalized in place before RoPE; each norm saves the q or k it reads. A per-head norm runs on
    // each rank's own heads; one over the whole projection needs all of them, which vLLM's
    // Olmo2Attention gathers across the tensor-parallel group first: replicated.
    const bool per_head = ctx.t.qk_norm == QkNorm::kPerHead;
    Layer q_norm = ctx.Norm(ctx.P("attn.q_norm"), q_width, per_head ? d : q_width, ctx.P("attn.q_norm") + ":in", true);
    Layer k_norm =
        ctx.Norm(ctx.P("attn.k_norm"), kv_width, per_head ? d : kv_width, ctx.P("attn.k_norm") + ":in", true);
    q_norm.op_elements = Count(ctx.P("attn.q_norm"), {ctx.rows, q_width});
    k_norm.op_elements = Count(ctx.P("attn.k_norm"), {ctx.rows, kv_width});
    if (per_head) {
      SplitOverTp(q_norm);
      SplitOverTp(k_norm, g);
    }
    ctx.Add(std::move(q_norm), {ctx.batch, ctx.seq, qkv_width}, qkv);
    ctx.Add(std::move(k_norm), {ctx.batch, ctx.seq, qkv_width}, qkv);
  }
  if (ctx.t.v_norm) {
    // modeling_gemma3n.py, Gemma3nTextAttention.v_norm: Gemma3nRMSNorm(head_dim, with_scale=False).
    Layer v_norm = MakeElementwise(ctx.P("attn.v_norm"), LayerKind::kNorm, Component::kNorm,
                                   Count(ctx.P("attn.v_norm"), {ctx.rows, kv_width}), kFlopsPerRmsNormElement - 1);
    v_norm.op = ElementwiseOp::kRmsNorm;
    v_norm.op_elements = Count(ctx.P("attn.v_norm"), {ctx.rows, kv_width});
    SplitOverTp(v_norm, g);  // per head
    ctx.Add(std::move(v_norm), {ctx.batch, ctx.seq, qkv_width}, qkv);
  }
  Rope(ctx, a + g, ctx.t.rotary_dim == 0 ? d : ctx.t.rotary_dim, Count(ctx.P("attn.rope"), {a + g, d}), qkv);
  return {.qkv = qkv,
          .qk_dim = d,
          .v_dim = d,
          .k_width = kv_width,
          .v_width = kv_width,
          .kv_shards = g,
          .cache_per_token = Count(ctx.P("attn"), {2, kv_width}),
          .cache_shards = g,
          .cache_kind = ctx.layer.attention};
}

// Multi-head latent attention (MlaSpec in config/model_spec.h). The graph computes it as
// transformers does, with K and V expanded per head; the cache holds the latent and the shared
// RoPE key, kv_lora_rank + qk_rope_head_dim per token, as engines that absorb kv_b_proj into the
// query and output keep it (DeepSeek-V2 §2.1.2), or full K and V per head if asked.
Core LatentProjections(TransformerContext& ctx) {
  const MlaSpec& m = ctx.t.mla;
  const uint64_t h = ctx.t.d_model, a = ctx.t.n_heads;
  const uint64_t qk = CheckedAdd(m.qk_nope_head_dim, m.qk_rope_head_dim, "the MLA head size");
  const uint64_t q_width = Count(ctx.P("attn"), {a, qk});
  const std::string input = ctx.cur;
  if (m.q_lora_rank > 0) {
    ctx.Add(
        MakeLinear(ctx.P("attn.q_a"), Component::kAttention, ctx.rows, h, m.q_lora_rank, ctx.t.qkv_bias, input, true),
        {ctx.batch, ctx.seq, m.q_lora_rank});
    ctx.Add(ctx.Norm(ctx.P("attn.q_a_norm"), m.q_lora_rank), {ctx.batch, ctx.seq, m.q_lora_rank});
    ctx.AddLinear(MakeLinear(ctx.P("attn.q_b"), Component::kAttention, ctx.rows, m.q_lora_rank, q_width, false, ctx.cur,
                             true, TpSplit::kColumn),
                  {ctx.batch, ctx.seq, q_width}, "qkv");
  } else {
    ctx.AddLinear(MakeLinear(ctx.P("attn.q"), Component::kAttention, ctx.rows, h, q_width, ctx.t.qkv_bias, input, true,
                             TpSplit::kColumn),
                  {ctx.batch, ctx.seq, q_width}, "qkv");
  }
  const std::string q = ctx.cur;
  const uint64_t latent = CheckedAdd(m.kv_lora_rank, m.qk_rope_head_dim, "the MLA latent size");
  ctx.Add(MakeLinear(ctx.P("attn.kv_a"), Component::kAttention, ctx.rows, h, latent, ctx.t.qkv_bias, input, true),
          {ctx.batch, ctx.seq, latent});
  ctx.Add(ctx.Norm(ctx.P("attn.kv_a_norm"), m.kv_lora_rank), {ctx.batch, ctx.seq, m.kv_lora_rank});
  const uint64_t kv_b = Count(ctx.P("attn"), {a, CheckedAdd(m.qk_nope_head_dim, m.v_head_dim, "the MLA head size")});
  ctx.AddLinear(MakeLinear(ctx.P("attn.kv_b"), Component::kAttention, ctx.rows, m.kv_lora_rank, kv_b, false, ctx.cur,
                           true, TpSplit::kColumn),
                {ctx.batch, ctx.seq, kv_b}, "qkv");
  const std::string qkv = ctx.cur;
  Rope(ctx, a + 1, m.qk_rope_head_dim, q_width, q);  // every query head and the one shared key
  Core c{.qkv = qkv,
         .qk_dim = qk,
         .v_dim = m.v_head_dim,
         .k_width = q_width,
         .v_width = Count(ctx.P("attn"), {a, m.v_head_dim}),
         .kv_shards = 0};
  if (m.full_kv_cache) {
    c.cache_per_token = CheckedAdd(c.k_width, c.v_width, "the MLA cache");
    c.cache_shards = a;
    c.cache_kind = AttentionKind::kFull;
  } else {
    c.cache_per_token = latent;
    c.cache_shards = 1;  // one latent for all heads: every rank keeps it whole
    c.cache_kind = AttentionKind::kLatent;
  }
  return c;
}

// QK^T, softmax, dropout and AV of `name` ("attn", or "cross"), each query seeing `keys` keys.
void AttentionCore(TransformerContext& ctx, const Core& c, const std::string& name, uint64_t keys, bool causal) {
  const uint64_t a = ctx.t.n_heads;
  const uint64_t k_rows = c.k_rows == 0 ? ctx.rows : c.k_rows;
  const uint64_t q_width = Count(ctx.P(name), {a, c.qk_dim}), o_width = Count(ctx.P(name), {a, c.v_dim});
  const uint64_t scores = Count(ctx.P(name), {ctx.batch, a, ctx.seq, keys});
  // The 1/sqrt(d) scaling (T5 instead adds its position bias), plus the bias add under ALiBi (Press et al. 2022).
  Layer qk = MakeElementwise(ctx.P(name + ".scores"), LayerKind::kAttentionScores, Component::kAttentionCore, scores,
                             ctx.t.position == PositionKind::kAlibi ? 2 : kFlopsPerElementwise);
  qk.gemms.push_back(
      {.m = ctx.seq, .n = keys, .k = c.qk_dim, .count = Count(ctx.P(name), {ctx.batch, a}), .halved = causal});
  // Eager grouped-query attention repeats K and V to every query head before its matmuls
  // (transformers' repeat_kv: expand, then a copy), and the matmuls save the copies; flash and SDPA
  // kernels read the K/V heads as they are.
  const bool repeated = !ctx.flash && c.k_width < q_width;
  const std::string k_id = c.qkv + (repeated ? ":k_repeated" : ":k"), v_id = c.qkv + (repeated ? ":v_repeated" : ":v");
  const uint64_t k_width = repeated ? q_width : c.k_width, v_width = repeated ? o_width : c.v_width;
  const uint64_t kv_shards = repeated ? 0 : c.kv_shards;
  qk.saved = {
      {.id = c.q.empty() ? c.qkv + ":q" : c.q, .elements = Count(ctx.P(name), {ctx.rows, q_width}), .tp_sharded = true},
      {.id = k_id, .elements = Count(ctx.P(name), {k_rows, k_width}), .tp_sharded = true, .tp_max_shards = kv_shards}};
  qk.tp_split = true;  // the query heads', split over every rank
  qk.attention = c.cache_kind;
  qk.attention_span = c.cache_kind == AttentionKind::kCross ? keys : ctx.layer.span;
  // An encoder runs once over its whole input: nothing is cached; nor does a Gemma 3n layer that
  // reads an earlier layer's K and V (LayerSpec::kv_shared).
  const uint64_t cache_per_token = ctx.bidirectional || ctx.layer.kv_shared ? 0 : c.cache_per_token;
  qk.kv_elements_per_token = cache_per_token;
  qk.kv_tp_max_shards = c.cache_shards;
  ctx.Add(std::move(qk), {ctx.batch, a, ctx.seq, keys});
  // Softmax: one FLOP per element, as DeepSpeed's profiler counts it. Eager attention saves the
  // probabilities; flash attention (Dao et al. 2022, §3.1) keeps only the fp32 log-sum-exp per
  // row and recomputes them in backward, dropout masks included (from the RNG state).
  Layer softmax = MakeElementwise(ctx.P(name + ".softmax"), LayerKind::kSoftmax, Component::kAttentionCore, scores,
                                  kFlopsPerElementwise);
  softmax.tp_split = true;
  if (ctx.flash) {
    softmax.saved.push_back({.id = ctx.P(name + ".softmax:lse"),
                             .elements = Count(ctx.P(name), {ctx.batch, a, ctx.seq}),
                             .cls = SavedClass::kFp32,
                             .tp_sharded = true});
  } else {
    softmax.saved.push_back({.id = ctx.P(name + ".softmax"),
                             .elements = scores,
                             .cls = SavedClass::kAutocastFp32,
                             .tp_sharded = true,
                             .selective = true});
  }
  ctx.Add(std::move(softmax), {ctx.batch, a, ctx.seq, keys});
  if (ctx.t.dropout > 0) {
    Layer drop = MakeElementwise(ctx.P(name + ".dropout"), LayerKind::kDropout, Component::kAttentionCore, scores,
                                 kFlopsPerElementwise);
    drop.tp_split = true;
    if (!ctx.flash) {
      drop.saved.push_back({.id = drop.path + ":mask",
                            .elements = scores,
                            .cls = ctx.MaskClass(),
                            .tp_sharded = true,
                            .selective = true});
    }
    ctx.Add(std::move(drop), {ctx.batch, a, ctx.seq, keys});
  }
  Layer av;  // reads V of k_rows rows
  av.path = ctx.P(name + ".context");
  av.kind = LayerKind::kAttentionContext;
  av.component = Component::kAttentionCore;
  av.tp_split = true;
  av.gemms.push_back(
      {.m = ctx.seq, .n = c.v_dim, .k = keys, .count = Count(ctx.P(name), {ctx.batch, a}), .halved = causal});
  av.kv_elements_per_token = cache_per_token;  // the V it reads is half of it
  av.kv_tp_max_shards = c.cache_shards;
  av.saved = {
      {.id = v_id, .elements = Count(ctx.P(name), {k_rows, v_width}), .tp_sharded = true, .tp_max_shards = kv_shards}};
  if (ctx.flash) {
    // Flash backward needs the output O; it is the out projection's saved input, counted once.
    av.saved.push_back({.id = av.path, .elements = Count(ctx.P(name), {ctx.rows, o_width}), .tp_sharded = true});
  } else {
    av.saved.push_back(
        {.id = ctx.cur, .elements = scores, .cls = SavedClass::kAutocastFp32, .tp_sharded = true, .selective = true});
  }
  ctx.Add(std::move(av), {ctx.batch, ctx.seq, o_width});
}

// modeling_deberta_v2.py, DisentangledSelfAttention.disentangled_attention_bias: the shared
// relative table projected to position keys (c2p) and queries (p2c), through this layer's k_proj
// and q_proj (share_att_key) or its own pos_key_proj and pos_query_proj with biases; then
// q·pos_kᵀ and k·pos_qᵀ per head over every relative bucket, gathered to the query–key pairs (an
// int64 index each), scaled and added to the scores. The batch shares the table's projections.
void DisentangledScores(TransformerContext& ctx, const Core& c) {
  const DisentangledSpec& r = ctx.t.disentangled;
  const uint64_t h = ctx.t.d_model, a = ctx.t.n_heads, d = ctx.t.head_dim, w = Count(ctx.P("attn"), {a, d});
  const uint64_t kinds = (r.c2p ? 1U : 0U) + (r.p2c ? 1U : 0U);
  if (kinds == 0) return;
  const std::string table = r.rel_norm ? "encoder.rel_norm" : "encoder.rel_embeddings";
  const std::string& qkv = c.qkv;
  Layer proj = MakeLinear(ctx.P("attn.rel_proj"), Component::kAttention, r.rel_rows, h,
                          Count(ctx.P("attn"), {kinds, w}), !r.share_att_key, table, true, TpSplit::kColumn);
  if (r.share_att_key) {  // the weights are this layer's k_proj and q_proj (and their biases)
    proj.params = 0;
    proj.param_tensors.clear();
    proj.non_matmul_flops = Count(proj.path, {r.rel_rows, kinds, w});
  } else if (kinds == 2) {  // pos_key_proj and pos_query_proj, two tensors each
    proj.params = 0;
    proj.param_tensors.clear();
    for (int i = 0; i < 2; ++i) AddParamTensor(proj, {h, w}, true);
    for (int i = 0; i < 2; ++i) AddParamTensor(proj, {w}, true);
  }
  ctx.Add(std::move(proj), {ctx.batch, r.rel_rows, Count(ctx.P("attn"), {kinds, w})});  // shared by the batch
  const uint64_t pairs = Count(ctx.P("attn.rel_scores"), {ctx.batch, a, ctx.seq, ctx.seq});
  Layer scores = MakeElementwise(ctx.P("attn.rel_scores"), LayerKind::kAttentionScores, Component::kAttentionCore,
                                 Count(ctx.P("attn.rel_scores"), {pairs, kinds}), 2);  // scale and add
  scores.tp_split = true;
  for (uint64_t i = 0; i < kinds; ++i) {
    scores.gemms.push_back({.m = ctx.seq, .n = r.rel_rows, .k = d, .count = Count(ctx.P("attn"), {ctx.batch, a})});
  }
  scores.saved = {
      {.id = qkv + ":q", .elements = Count(ctx.P("attn"), {ctx.rows, w}), .tp_sharded = true},
      {.id = qkv + ":k", .elements = Count(ctx.P("attn"), {ctx.rows, w}), .tp_sharded = true},
      {.id = ctx.P("attn.rel_proj"), .elements = Count(ctx.P("attn"), {r.rel_rows, kinds, w}), .tp_sharded = true},
      {.id = ctx.P("attn.rel_scores:index"),
       .elements = Count(ctx.P("attn"), {ctx.seq, ctx.seq, kinds}),
       .cls = SavedClass::kIndex}};
  ctx.Add(std::move(scores), {ctx.batch, a, ctx.seq, ctx.seq}, qkv);
}

}  // namespace

// Self-attention ("attn"), or an encoder–decoder's cross-attention ("cross") over the encoder's output.
void AddAttention(TransformerContext& ctx, const std::string& name) {
  const bool cross = name == "cross";
  Core c = cross ? CrossProjections(ctx) : ctx.t.mla.kv_lora_rank > 0 ? LatentProjections(ctx) : HeadProjections(ctx);
  if (ctx.layer.relative_bias && !cross) RelativeBias(ctx);
  if (ctx.t.disentangled.rel_rows > 0 && !cross) DisentangledScores(ctx, c);
  AttentionCore(ctx, c, name, cross ? ctx.src_seq : ctx.kv, !cross && ctx.causal);
  const uint64_t o_width = Count(ctx.P(name), {ctx.t.n_heads, c.v_dim});
  if (ctx.t.attention_output_gate && !cross) {
    // modeling_qwen3_next.py, Qwen3NextAttention: attn_output · sigmoid(gate), 2 FLOPs per element;
    // the product keeps both factors (the sigmoid's output is its own saved tensor).
    const uint64_t elements = Count(ctx.P(name), {ctx.rows, o_width});
    Layer gate = MakeElementwise(ctx.P(name + ".gate"), LayerKind::kActivation, Component::kAttention, elements, 2);
    gate.saved = {{.id = ctx.cur, .elements = elements}, {.id = gate.path + ":sigmoid", .elements = elements}};
    SplitOverTp(gate);
    ctx.Add(std::move(gate), {ctx.batch, ctx.seq, o_width});
  }
  Layer out = MakeLinear(ctx.P(name + ".out"), Component::kAttention, ctx.rows, o_width, ctx.t.d_model, ctx.t.out_bias,
                         ctx.cur, true, TpSplit::kRow);
  // gpt-oss's sinks: one learned logit per head that joins each softmax (modeling_gpt_oss.py),
  // split with the heads.
  if (ctx.t.attention_sinks) AddParamTensor(out, {ctx.t.n_heads}, true);
  ctx.AddLinear(std::move(out), ctx.Hidden(), "out");
  ctx.Dropout(ctx.P(name + ".resid_dropout"), Count(ctx.P(name), {ctx.rows, ctx.t.d_model}), Component::kAttention);
}

void AddImageCrossAttention(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model, a = ctx.t.n_heads, g = ctx.t.n_kv_heads, d = ctx.t.head_dim;
  const uint64_t q_width = Count(ctx.P("cross"), {a, d}), kv_width = Count(ctx.P("cross"), {g, d});
  const uint64_t image_rows = Count(ctx.P("cross"), {ctx.batch, ctx.image_tokens});
  ctx.AddLinear(
      MakeLinear(ctx.P("cross.q"), Component::kAttention, ctx.rows, h, q_width, false, ctx.cur, true, TpSplit::kColumn),
      {ctx.batch, ctx.seq, q_width}, "qkv");
  const std::string q = ctx.cur;
  Layer q_norm = ctx.Norm(ctx.P("cross.q_norm"), q_width, d, q + ":in");  // per head
  SplitOverTp(q_norm);
  ctx.Add(std::move(q_norm), {ctx.batch, ctx.seq, q_width}, q);
  Layer kv = MakeLinear(ctx.P("cross.kv"), Component::kAttention, image_rows, h, Count(ctx.P("cross"), {2, kv_width}),
                        false, ctx.image_features, true, TpSplit::kColumn);
  kv.params = 0;
  kv.param_tensors.clear();
  for (int i = 0; i < 2; ++i) AddParamTensor(kv, {h, kv_width}, true, g);
  kv.source_side = true;  // projected once per prompt; a decode step reads the cache
  // MllamaTextCrossAttention stores k_proj and v_proj apart: an adapter on each.
  ctx.AddLinear(std::move(kv), {ctx.batch, ctx.image_tokens, Count(ctx.P("cross"), {2, kv_width})}, "qkv",
                {{"k", kv_width}, {"v", kv_width}});
  const std::string kv_id = ctx.cur;
  // k_norm over the image rows' keys, one weight of head_dim.
  Layer k_norm = MakeElementwise(ctx.P("cross.k_norm"), LayerKind::kNorm, Component::kNorm,
                                 Count(ctx.P("cross"), {image_rows, kv_width}), kFlopsPerRmsNormElement);
  k_norm.op = ElementwiseOp::kRmsNorm;
  k_norm.source_side = true;
  AddParamTensor(k_norm, {d}, false);
  SaveRmsNorm(k_norm, kv_id + ":k_in", Count(ctx.P("cross"), {image_rows, kv_width}),
              Count(ctx.P("cross"), {image_rows, g}), true);
  SplitOverTp(k_norm, g);  // per head
  ctx.Add(std::move(k_norm), {ctx.batch, ctx.image_tokens, Count(ctx.P("cross"), {2, kv_width})}, kv_id);
  const Core c{.qkv = kv_id,
               .qk_dim = d,
               .v_dim = d,
               .k_width = kv_width,
               .v_width = kv_width,
               .kv_shards = g,
               .cache_per_token = Count(ctx.P("cross"), {2, kv_width}),
               .cache_shards = g,
               .cache_kind = AttentionKind::kCross,
               .q = q,
               .k_rows = image_rows};
  ctx.cur = q;
  AttentionCore(ctx, c, "cross", ctx.image_tokens, false);
  ctx.AddLinear(
      MakeLinear(ctx.P("cross.out"), Component::kAttention, ctx.rows, q_width, h, false, ctx.cur, true, TpSplit::kRow),
      ctx.Hidden(), "out");
}

}  // namespace tally
