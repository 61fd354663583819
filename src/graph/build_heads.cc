#include "graph/build_heads.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

// A dense h x h with a bias over the first token of each sequence, then tanh (which saves its
// output for backward).
void FirstTokenDense(TransformerContext& ctx, const std::string& path) {
  const uint64_t h = ctx.t.d_model;
  ctx.Add(MakeLinear(path + ".dense", Component::kHead, ctx.batch, h, h, true, ctx.cur, true), {ctx.batch, h});
  Layer act = MakeElementwise(path + ".act", LayerKind::kActivation, Component::kHead, Count(path, {ctx.batch, h}),
                              kFlopsPerElementwise);
  act.saved.push_back({.id = path + ".act", .elements = Count(path, {ctx.batch, h})});
  ctx.Add(std::move(act), {ctx.batch, h});
}

// modeling_modernbert.py, ModernBertPredictionHead over the pooled vector (the first token's, or
// the mean of the tokens under classifier_pooling "mean"): a dense h x h (classifier_bias), GELU
// (which saves its input) and a norm of the encoder's kind.
void PredictionHead(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model, elements = Count("head", {ctx.batch, h});
  ctx.Add(MakeLinear("head.dense", Component::kHead, ctx.batch, h, h, ctx.t.head_dense_bias, ctx.cur, true),
          {ctx.batch, h});
  Layer act = MakeElementwise("head.act", LayerKind::kActivation, Component::kHead, elements, kFlopsPerElementwise);
  act.saved.push_back({.id = ctx.cur, .elements = elements});
  ctx.Add(std::move(act), {ctx.batch, h});
  Layer norm = MakeElementwise("head.norm", LayerKind::kNorm, Component::kHead, elements, kFlopsPerLayerNormElement);
  norm.op = ElementwiseOp::kLayerNorm;
  AddParamTensor(norm, {h}, false);
  if (ctx.t.norm_params == NormParams::kAffine) AddParamTensor(norm, {h}, false);
  norm.saved = {{ctx.cur, elements, SavedClass::kAutocastFp32},
                {"head.norm:mean", ctx.batch, SavedClass::kFp32},
                {"head.norm:rstd", ctx.batch, SavedClass::kFp32}};
  ctx.Add(std::move(norm), {ctx.batch, h});
}

}  // namespace

void AddLmHead(TransformerContext& ctx) {
  if (ctx.EmbedDim() != ctx.t.d_model) {
    ctx.Add(MakeLinear("embed.project_out", Component::kEmbedProjection, ctx.rows, ctx.t.d_model, ctx.EmbedDim(), false,
                       ctx.cur, true),
            {ctx.batch, ctx.seq, ctx.EmbedDim()});
  }
  if (ctx.t.head_scale) {
    // modeling_t5.py: a tied head's input is rescaled by d_model^-0.5 (a multiply by a constant
    // saves nothing for backward).
    ctx.Add(MakeElementwise("head.scale", LayerKind::kActivation, Component::kLmHead,
                            Count("head.scale", {ctx.rows, ctx.t.d_model}), kFlopsPerElementwise),
            ctx.Hidden());
  }
  Layer head = MakeLinear("lm_head", Component::kLmHead, ctx.rows, ctx.EmbedDim(), ctx.t.vocab_size, ctx.t.lm_head_bias,
                          ctx.cur, true, TpSplit::kColumn);
  if (ctx.t.tied_embeddings) {
    head.params = 0;
    head.param_tensors.erase(head.param_tensors.begin());  // the weight is embed.tokens'; a bias is its own
    if (ctx.t.lm_head_bias) head.params = ctx.t.vocab_size;
    head.weights_of = 0;  // embed.tokens is always the first node
  }
  ctx.Add(std::move(head), {ctx.batch, ctx.seq, ctx.t.vocab_size});
  if (ctx.t.logits_bias) {
    // modeling_bart.py: lm_logits + final_logits_bias, a [1, V] buffer (no parameter).
    Layer bias = MakeElementwise("head.logits_bias", LayerKind::kResidualAdd, Component::kLmHead,
                                 Count("head.logits_bias", {ctx.rows, ctx.t.vocab_size}), kFlopsPerElementwise);
    SplitOverTp(bias);  // on the vocabulary-parallel logits
    ctx.Add(std::move(bias), {ctx.batch, ctx.seq, ctx.t.vocab_size});
  }
  // Cross-entropy in fp32 over the vocabulary-parallel logits (Megatron-LM's
  // vocab_parallel_cross_entropy: each rank its V / tp) keeps the log-probabilities for backward; a
  // fused kernel (torch.compile's of the same function, Transformer Engine's) keeps one fp32
  // log-sum-exp a row and forms the softmax again from the logits in its backward.
  const uint64_t logits = Count("loss", {ctx.rows, ctx.t.vocab_size});
  Layer loss = MakeElementwise("loss", LayerKind::kLoss, Component::kLoss, logits, kFlopsPerElementwise);
  loss.op_elements = logits;
  if (ctx.settings.loss_kernel == LossKernel::kFused) {
    // Every rank keeps every row's (its vocabulary share is reduced across the group): split at most once.
    loss.saved.push_back(
        {.id = "loss:lse", .elements = ctx.rows, .cls = SavedClass::kFp32, .tp_sharded = true, .tp_max_shards = 1});
  } else {
    loss.saved.push_back({.id = "loss:log_probs", .elements = logits, .cls = SavedClass::kFp32});
  }
  SplitOverTp(loss);
  ctx.Add(std::move(loss), {ctx.batch, ctx.seq});
}

// modeling_bert.py: BertForMaskedLM ends in BertLMPredictionHead (a dense h x h, the activation,
// a LayerNorm, then the decoder); BertModel in BertPooler (a dense and tanh over the first token);
// BertForSequenceClassification in the pooler and a classifier. RoBERTa's and DistilBERT's
// classifiers have their own dense instead of a pooler (RobertaClassificationHead,
// DistilBertForSequenceClassification's pre_classifier): the same shapes.
void AddEncoderHeads(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model;
  if (ctx.t.head == EncoderHead::kMaskedLm) {
    ctx.Add(MakeLinear("head.transform", Component::kHead, ctx.rows, h, h, ctx.t.head_dense_bias, ctx.cur, true),
            ctx.Hidden());
    Layer act = MakeElementwise("head.act", LayerKind::kActivation, Component::kHead, Count("head", {ctx.rows, h}),
                                kFlopsPerElementwise);
    act.saved.push_back({.id = ctx.cur, .elements = Count("head", {ctx.rows, h})});  // GELU's input
    ctx.Add(std::move(act), ctx.Hidden());
    ctx.Add(ctx.Norm("head.norm"), ctx.Hidden());
    AddLmHead(ctx);
    return;
  }
  if (!ctx.t.pooler && ctx.t.head == EncoderHead::kNone) return;  // DistilBertModel: the hidden states
  // The first token's vector, a view of the hidden states.
  const std::string first = ctx.cur + ":first";
  ctx.cur = first;
  if (ctx.t.pooler) FirstTokenDense(ctx, "pooler");
  if (ctx.t.head != EncoderHead::kClassifier) return;
  if (ctx.t.prediction_head) {
    PredictionHead(ctx);
  } else if (!ctx.t.pooler) {
    FirstTokenDense(ctx, "head.dense");
  }
  ctx.Add(MakeLinear("head.classifier", Component::kHead, ctx.batch, h, ctx.t.num_labels, true, ctx.cur, true),
          {ctx.batch, ctx.t.num_labels});
  const uint64_t logits = Count("loss", {ctx.batch, ctx.t.num_labels});
  Layer loss = MakeElementwise("loss", LayerKind::kLoss, Component::kLoss, logits, kFlopsPerElementwise);
  loss.op_elements = logits;
  loss.saved.push_back({.id = "loss:log_probs", .elements = logits, .cls = SavedClass::kFp32});
  ctx.Add(std::move(loss), {ctx.batch});
}

}  // namespace tally
