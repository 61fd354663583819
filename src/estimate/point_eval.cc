#include "estimate/point_eval.h"

#include <algorithm>

#include "estimate/estimate_graph.h"
#include "util/checked_math.h"

namespace tally {
namespace {

const std::vector<std::string> kFastKeys = {"params.total",
                                            "params.embedding",
                                            "params.non_embedding",
                                            "params.per_layer",
                                            "params.active",
                                            "params.trainable",
                                            "flops.forward",
                                            "flops.backward",
                                            "flops.recompute",
                                            "flops.step",
                                            "flops.per_token.forward",
                                            "flops.per_token.backward",
                                            "flops.per_token.step",
                                            "flops.per_sample.forward",
                                            "flops.per_sample.backward",
                                            "flops.per_sample.step",
                                            "flops.macs.forward",
                                            "flops.non_matmul.forward",
                                            "memory.train.weights",
                                            "memory.train.gradients",
                                            "memory.train.master_weights",
                                            "memory.train.optimizer",
                                            "memory.train.activations",
                                            "memory.train.overhead",
                                            "memory.train.total",
                                            "memory.infer.weights",
                                            "memory.infer.kv_cache",
                                            "memory.infer.activations",
                                            "memory.infer.overhead",
                                            "memory.infer.total",
                                            "kv_cache.per_token",
                                            "activations.per_layer"};

}  // namespace

bool PointEvaluator::IsFastKey(const std::string& key) {
  return std::find(kFastKeys.begin(), kFastKeys.end(), key) != kFastKeys.end();
}

TrainMemory PointEvaluator::Training(GraphCache& c, const Settings& s) {
  const Precisions& d = s.dtypes;
  auto states = [&](uint64_t stage) {
    const std::vector<uint64_t> key = {static_cast<uint64_t>(d.param),
                                       static_cast<uint64_t>(d.grad),
                                       d.master ? 1 + static_cast<uint64_t>(*d.master) : 0,
                                       static_cast<uint64_t>(d.state),
                                       static_cast<uint64_t>(s.optimizer),
                                       s.tp,
                                       s.pp,
                                       static_cast<uint64_t>(s.quant),
                                       stage,
                                       static_cast<uint64_t>(d.activation)};  // QLoRA's dequantization buffer
    auto it = c.states.find(key);
    if (it == c.states.end()) it = c.states.emplace(key, StageModelStates(c.summary->memory, s, stage)).first;
    return it->second;
  };
  auto activations = [&](uint64_t stage) {
    const std::vector<uint64_t> key = {s.micro_batch,
                                       s.tp,
                                       s.sp,
                                       s.pp,
                                       static_cast<uint64_t>(s.recompute),
                                       s.grad_accum,
                                       static_cast<uint64_t>(d.activation),
                                       stage};
    auto it = c.activations.find(key);
    if (it == c.activations.end())
      it = c.activations.emplace(key, TrainingActivations(c.summary->memory, s, stage)).first;
    return it->second;
  };
  return MostLoadedStage(s, states, activations);
}

PointEvaluator::GraphCache& PointEvaluator::CacheFor(const Settings& settings) {
  // The evaluation caches summaries by every setting a graph depends on; the ledger parts are
  // cached here per summary.
  std::shared_ptr<const GraphSummary> summary = evaluation_.Summary(settings);
  auto it = caches_.find(summary.get());
  if (it != caches_.end()) return it->second;
  if (caches_.size() >= 1024) {  // full: a scratch entry, as the evaluation does
    scratch_ = GraphCache{.summary = summary};
    return scratch_;
  }
  GraphCache c;
  c.summary = summary;
  return caches_.emplace(summary.get(), std::move(c)).first->second;
}

std::vector<std::optional<Value>> PointEvaluator::Evaluate(const std::vector<std::string>& keys, const Settings& s) {
  GraphCache& c = CacheFor(s);
  const GraphSummary& g = *c.summary;
  std::optional<TrainMemory> train;
  std::optional<InferMemory> infer;
  const bool transformer = evaluation_.spec().family == Family::kTransformer;
  constexpr std::string_view what = "the FLOPs of the sweep point";
  // Every FLOP count is linear in the batch: each GEMM's m or count carries it.
  const uint64_t forward = CheckedMul(g.flops.forward, s.batch, what);
  const uint64_t backward = CheckedMul(g.flops.backward, s.batch, what);
  const uint64_t recompute = RecomputeFlopsOf(g, s);
  const uint64_t step = CheckedAdd(CheckedAdd(forward, backward, what), recompute, what);
  const uint64_t units = transformer ? CheckedMul(s.batch, g.seq, what) : s.batch;
  std::vector<std::optional<Value>> out;
  for (const std::string& k : keys) {
    std::optional<Value> v;
    if (k == "params.total")
      v = g.params.total;
    else if (k == "params.embedding" && transformer)
      v = g.params.embedding;
    else if (k == "params.non_embedding" && transformer)
      v = g.params.non_embedding;
    else if (k == "params.per_layer" && transformer)
      v = g.params.per_layer;
    else if (k == "params.active" && g.params.active != g.params.total)
      v = g.params.active;
    else if (k == "params.trainable" && g.params.trainable != g.params.total)
      v = g.params.trainable;
    else if (k == "flops.forward")
      v = forward;
    else if (k == "flops.backward")
      v = backward;
    else if (k == "flops.recompute")
      v = recompute;
    else if (k == "flops.step")
      v = step;
    else if (k == (transformer ? "flops.per_token.forward" : "flops.per_sample.forward"))
      v = PerUnit(forward, units);
    else if (k == (transformer ? "flops.per_token.backward" : "flops.per_sample.backward"))
      v = PerUnit(backward, units);
    else if (k == (transformer ? "flops.per_token.step" : "flops.per_sample.step"))
      v = PerUnit(step, units);
    else if (k == "flops.macs.forward")
      v = forward / 2;
    else if (k == "flops.non_matmul.forward")
      v = CheckedMul(g.flops.non_matmul_forward, s.batch, what);
    else if (k.rfind("memory.train.", 0) == 0 || k == "activations.per_layer") {
      if (s.mode == Mode::kInfer) {
        out.push_back(v);
        continue;
      }
      if (!train) train = Training(c, s);
      if (k == "memory.train.weights")
        v = train->weights;
      else if (k == "memory.train.gradients")
        v = train->gradients;
      else if (k == "memory.train.master_weights")
        v = train->master_weights;
      else if (k == "memory.train.optimizer")
        v = train->optimizer;
      else if (k == "memory.train.activations")
        v = train->activations;
      else if (k == "memory.train.overhead" && train->overhead > 0)
        v = train->overhead;
      else if (k == "memory.train.total")
        v = train->total;
      else if (k == "activations.per_layer" && transformer)
        v = train->per_layer_activations;
    } else if (k.rfind("memory.infer.", 0) == 0) {
      if (s.mode == Mode::kTrain) {
        out.push_back(v);
        continue;
      }
      if (!infer) infer = InferenceMemory(evaluation_.spec(), s, g.memory, InferenceBatch(s));
      if (k == "memory.infer.weights")
        v = infer->weights;
      else if (k == "memory.infer.kv_cache" && transformer)
        v = infer->kv_cache;
      else if (k == "memory.infer.activations")
        v = infer->activations;
      else if (k == "memory.infer.overhead" && infer->overhead > 0)
        v = infer->overhead;
      else if (k == "memory.infer.total")
        v = infer->total;
    } else if (k == "kv_cache.per_token" && transformer && s.mode != Mode::kTrain) {
      v = KvBytesPerToken(g.memory, KvDtype(s));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace tally
