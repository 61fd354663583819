#include "estimate/memory_estimate.h"

#include "config/resolve.h"
#include "estimate/checkpoint_weights.h"
#include "estimate/context_parallel.h"
#include "estimate/expert_parallel.h"
#include "estimate/kv_cache.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// The figures of the KV cache's formula (kv_cache.h's rule, term by term).
KvFormula KvFormulaOf(const ModelSpec& spec, const Settings& s, const MemoryModel& model) {
  KvFormula f;
  const TransformerSpec& t = spec.transformer;
  f.uniform = model.kv.size() == 1 && model.kv[0].kind == AttentionKind::kFull &&
              model.kv[0].elements_per_token == 2 * t.n_kv_heads * t.head_dim;
  if (f.uniform) {
    f.heads = CeilDiv(t.n_kv_heads, s.tp);
    f.tokens = PagedTokens(model.seq, s);
    return f;
  }
  const uint64_t context = model.target_seq > 0 ? model.target_seq : model.seq;
  for (const KvEntry& e : model.kv) {
    KvTerm term{.layers = StageCopies(model, e.block_type, false, 0, 1),
                .kind = e.kind,
                .span = e.span,
                .elements = CeilDiv(e.elements_per_token, TpShards(true, e.tp_max_shards, s.tp)),
                .tokens = PagedTokens(KvTokens(e.kind, e.span, context), s)};
    (e.kind == AttentionKind::kCross ? f.cross : f.self).push_back(term);
  }
  return f;
}

Korthikanti KorthikantiOf(const ModelSpec& spec, const Settings& s, const MemoryModel& model, uint64_t exact) {
  constexpr std::string_view what = "Korthikanti et al.'s activation formula";
  Korthikanti k{
      .s = model.seq, .b = s.micro_batch, .h = spec.transformer.d_model, .a = spec.transformer.n_heads, .t = s.tp};
  const uint64_t sbh = CheckedProduct({k.s, k.b, k.h}, what);
  const uint64_t as2b = CheckedProduct({5, k.a, k.s, k.s, k.b}, what);
  k.no_attention_scores = s.recompute == Recompute::kSelective || s.attention == Attention::kFlash;
  uint64_t bytes = 0;
  if (s.recompute == Recompute::kFull) {
    k.equation = KorthikantiEquation::kFull;
    bytes = CheckedMul(2, sbh, what) / (s.sp ? k.t : 1);
  } else if (k.t > 1 && !s.sp) {
    k.equation = KorthikantiEquation::kEq2;
    bytes = CheckedAdd(CheckedMul(10, sbh, what), CheckedMul(24, sbh, what) / k.t, what);
    if (!k.no_attention_scores) bytes = CheckedAdd(bytes, as2b / k.t, what);
  } else {
    k.equation = s.sp ? KorthikantiEquation::kEq4 : KorthikantiEquation::kEq1;
    bytes = CheckedMul(34, sbh, what);
    if (!k.no_attention_scores) bytes = CheckedAdd(bytes, as2b, what);
    bytes /= s.sp ? k.t : 1;
  }
  // Context parallel (flash attention only): every term is linear in s, and a device keeps s/cp tokens.
  k.bytes = bytes / s.cp;
  k.ratio = k.bytes == 0 ? 0.0 : static_cast<double>(exact) / static_cast<double>(k.bytes);
  return k;
}

void EstimateTraining(const ModelSpec& spec, const Settings& s, MemoryEstimate& e, MemoryRequest request) {
  const MemoryModel& model = e.model();
  e.train = TrainingMemory(s, model, &e.summary->ledgers);
  if (request.step) e.step = TrainingStepMemory(model, s, *e.train, request.events);
  if (ExpertGrid(s) && s.zero > 0) e.expert_data_parallel = ExpertDataParallel(s);  // what ZeRO shards experts over
  const std::optional<QuantizationSpec> frozen = FrozenQuantization(model, s);
  if (frozen && (s.lora_rank > 0 || !s.frozen.empty())) e.frozen = frozen;
  if (!e.transformer) return;
  e.ssm = HasSsmBlocks(spec.transformer);
  // A GPT block's; Korthikanti et al. have no form for torchtitan's per-op policy.
  if (!e.ssm && s.recompute != Recompute::kOp)
    e.korthikanti = KorthikantiOf(spec, s, model, e.train->per_layer_activations);
}

void EstimateInference(const ModelSpec& spec, const Settings& s, MemoryEstimate& e) {
  const MemoryModel& model = e.model();
  e.infer_batch = InferenceBatch(s);
  e.infer = InferenceMemory(spec, s, model, e.infer_batch, &e.summary->ledgers);
  // The inference ledger is already its peak: the weights, the cache and the largest working set.
  e.infer_overheads = InferenceOverheads(s, e.infer->total);
  e.infer_device = CheckedAdd(e.infer->total, e.infer_overheads.Total(), "inference memory");
  e.infer_weight_dtype = InferenceWeightDtype(spec, s);
  e.infer_quantization = WeightQuantization(spec, s);
  e.checkpoint_weights = UsesCheckpointWeights(spec, s);
  if (spec.checkpoint) {
    e.weights_source = e.checkpoint_weights      ? CheckpointRatesOf(*spec.checkpoint, model).Coverage()
                       : s.quant != Quant::kNone ? "--quant"
                                                 : "--param-dtype";
  }
  if (e.transformer) {
    e.kv = KvFormulaOf(spec, s, model);
    e.kv_per_token = KvBytesPerToken(model, e.kv_dtype);
  }
  for (const StateEntry& state : model.states) {
    e.ssm_terms.push_back({StageCopies(model, state.block_type, false, 0, 1), state.elements_per_sequence});
  }
  if (!model.states.empty()) {
    Settings whole = s;  // every layer, as kv_cache.per_token counts them
    whole.pp = 1;
    e.ssm_state_per_sequence = SsmStateBytes(model, 1, whole, 0);
  }
}

}  // namespace

MemoryEstimate EstimateMemory(Evaluation& evaluation, const Settings& s, MemoryRequest request) {
  const ModelSpec& spec = evaluation.spec();
  MemoryEstimate e;
  e.spec = &spec;
  e.settings = &s;
  e.summary = evaluation.Summary(s);
  e.transformer = spec.family == Family::kTransformer;
  e.kv_dtype = KvDtype(s);
  e.gradient_ranks = GradientRanks(s);
  if (s.mode != Mode::kInfer) EstimateTraining(spec, s, e, request);
  if (s.mode != Mode::kTrain) EstimateInference(spec, s, e);
  if (s.device != nullptr) {
    e.limit = UsableMemory(*s.device, s);
    if (e.step) e.train_fits = e.step->device <= *e.limit;
    if (e.infer) e.infer_fits = e.infer_device <= *e.limit;
  }
  return e;
}

}  // namespace tally
