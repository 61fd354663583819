#include "estimate/point_eval.h"

#include <utility>

#include "sections/estimate_report.h"
#include "sections/sections.h"

namespace tally {
namespace {

enum class Key {
  kParamsTotal,
  kParamsEmbedding,
  kParamsNonEmbedding,
  kParamsPerLayer,
  kParamsActive,
  kParamsTrainable,
  kFlopsForward,
  kFlopsBackward,
  kFlopsRecompute,
  kFlopsStep,
  kPerTokenForward,
  kPerTokenBackward,
  kPerTokenStep,
  kPerSampleForward,
  kPerSampleBackward,
  kPerSampleStep,
  kMacsForward,
  kNonMatmulForward,
  kTrainWeights,
  kTrainGradients,
  kTrainMaster,
  kTrainOptimizer,
  kTrainActivations,
  kTrainOverhead,
  kTrainTotal,
  kInferWeights,
  kInferKvCache,
  kInferActivations,
  kInferOverhead,
  kInferTotal,
  kKvPerToken,
  kActivationsPerLayer,
};

constexpr std::pair<Key, std::string_view> kKeys[] = {
    {Key::kParamsTotal, "params.total"},
    {Key::kParamsEmbedding, "params.embedding"},
    {Key::kParamsNonEmbedding, "params.non_embedding"},
    {Key::kParamsPerLayer, "params.per_layer"},
    {Key::kParamsActive, "params.active"},
    {Key::kParamsTrainable, "params.trainable"},
    {Key::kFlopsForward, "flops.forward"},
    {Key::kFlopsBackward, "flops.backward"},
    {Key::kFlopsRecompute, "flops.recompute"},
    {Key::kFlopsStep, "flops.step"},
    {Key::kPerTokenForward, "flops.per_token.forward"},
    {Key::kPerTokenBackward, "flops.per_token.backward"},
    {Key::kPerTokenStep, "flops.per_token.step"},
    {Key::kPerSampleForward, "flops.per_sample.forward"},
    {Key::kPerSampleBackward, "flops.per_sample.backward"},
    {Key::kPerSampleStep, "flops.per_sample.step"},
    {Key::kMacsForward, "flops.macs.forward"},
    {Key::kNonMatmulForward, "flops.non_matmul.forward"},
    {Key::kTrainWeights, "memory.train.weights"},
    {Key::kTrainGradients, "memory.train.gradients"},
    {Key::kTrainMaster, "memory.train.master_weights"},
    {Key::kTrainOptimizer, "memory.train.optimizer"},
    {Key::kTrainActivations, "memory.train.activations"},
    {Key::kTrainOverhead, "memory.train.overhead"},
    {Key::kTrainTotal, "memory.train.total"},
    {Key::kInferWeights, "memory.infer.weights"},
    {Key::kInferKvCache, "memory.infer.kv_cache"},
    {Key::kInferActivations, "memory.infer.activations"},
    {Key::kInferOverhead, "memory.infer.overhead"},
    {Key::kInferTotal, "memory.infer.total"},
    {Key::kKvPerToken, "kv_cache.per_token"},
    {Key::kActivationsPerLayer, "activations.per_layer"},
};

int KeyIndex(const std::string& key) {
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    if (kKeys[i].second == key) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

PointEvaluator::PointEvaluator(const ModelSpec& spec, const std::vector<std::string>& keys) : evaluation_(spec) {
  for (const std::string& k : keys) keys_.push_back(KeyIndex(k));
}

bool PointEvaluator::IsFastKey(const std::string& key) { return KeyIndex(key) >= 0; }

std::vector<std::optional<Value>> PointEvaluator::Evaluate(const Settings& s) {
  const std::shared_ptr<const GraphSummary> summary = evaluation_.Summary(s);
  const GraphSummary& g = *summary;
  const ParamCounts& p = g.params;
  const bool transformer = evaluation_.spec().family == Family::kTransformer;
  const FlopTotals flops = FlopTotalsOf(g, s);
  const FlopCounts& f = flops.counts;
  std::optional<TrainMemory> train;
  std::optional<InferMemory> infer;
  auto training = [&]() -> const TrainMemory* {
    if (s.mode == Mode::kInfer) return nullptr;
    if (!train) train = TrainingMemory(s, g.memory);
    return &*train;
  };
  auto inference = [&]() -> const InferMemory* {
    if (s.mode == Mode::kTrain) return nullptr;
    if (!infer) infer = InferenceMemory(evaluation_.spec(), s, g.memory, InferenceBatch(s));
    return &*infer;
  };
  // A value only where the report has the key, under the report's own conditions.
  auto when = [](bool present, auto value) { return present ? std::optional<Value>(value) : std::nullopt; };
  std::vector<std::optional<Value>> out;
  out.reserve(keys_.size());
  for (int index : keys_) {
    std::optional<Value> v;
    if (index >= 0) {
      const TrainMemory* t = nullptr;
      const InferMemory* i = nullptr;
      switch (kKeys[index].first) {
        case Key::kParamsTotal:
          v = p.total;
          break;
        case Key::kParamsEmbedding:
          v = when(transformer, p.embedding);
          break;
        case Key::kParamsNonEmbedding:
          v = when(transformer, p.non_embedding);
          break;
        case Key::kParamsPerLayer:
          v = when(transformer, p.per_layer);
          break;
        case Key::kParamsActive:
          v = when(p.active != p.total, p.active);
          break;
        case Key::kParamsTrainable:
          v = when(p.trainable != p.total, p.trainable);
          break;
        case Key::kFlopsForward:
          v = f.forward;
          break;
        case Key::kFlopsBackward:
          v = f.backward;
          break;
        case Key::kFlopsRecompute:
          v = flops.recompute;
          break;
        case Key::kFlopsStep:
          v = flops.step;
          break;
        case Key::kPerTokenForward:
          if (transformer) v = PerUnit(f.forward, flops.units);
          break;
        case Key::kPerTokenBackward:
          if (transformer) v = PerUnit(f.backward, flops.units);
          break;
        case Key::kPerTokenStep:
          if (transformer) v = PerUnit(flops.step, flops.units);
          break;
        case Key::kPerSampleForward:
          if (!transformer) v = PerUnit(f.forward, flops.units);
          break;
        case Key::kPerSampleBackward:
          if (!transformer) v = PerUnit(f.backward, flops.units);
          break;
        case Key::kPerSampleStep:
          if (!transformer) v = PerUnit(flops.step, flops.units);
          break;
        case Key::kMacsForward:
          v = f.forward / 2;
          break;
        case Key::kNonMatmulForward:
          v = f.non_matmul_forward;
          break;
        case Key::kTrainWeights:
          if ((t = training())) v = t->weights;
          break;
        case Key::kTrainGradients:
          if ((t = training())) v = t->gradients;
          break;
        case Key::kTrainMaster:
          if ((t = training())) v = t->master_weights;
          break;
        case Key::kTrainOptimizer:
          if ((t = training())) v = t->optimizer;
          break;
        case Key::kTrainActivations:
          if ((t = training())) v = t->activations;
          break;
        case Key::kTrainOverhead:
          if ((t = training())) v = when(t->overhead > 0, t->overhead);
          break;
        case Key::kTrainTotal:
          if ((t = training())) v = t->total;
          break;
        case Key::kActivationsPerLayer:
          if (transformer && (t = training())) v = t->per_layer_activations;
          break;
        case Key::kInferWeights:
          if ((i = inference())) v = i->weights;
          break;
        case Key::kInferKvCache:
          if (transformer && (i = inference())) v = i->kv_cache;
          break;
        case Key::kInferActivations:
          if ((i = inference())) v = i->activations;
          break;
        case Key::kInferOverhead:
          if ((i = inference())) v = when(i->overhead > 0, i->overhead);
          break;
        case Key::kInferTotal:
          if ((i = inference())) v = i->total;
          break;
        case Key::kKvPerToken:
          if (transformer && s.mode != Mode::kTrain) v = KvBytesPerToken(g.memory, KvDtype(s));
          break;
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace tally
