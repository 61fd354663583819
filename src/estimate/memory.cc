#include "estimate/memory.h"

#include <algorithm>
#include <map>

#include "estimate/activations.h"
#include "estimate/optimizer.h"
#include "estimate/kv_cache.h"
#include "util/checked_math.h"

namespace tally {
namespace {


// One device's share of a tensor: Megatron splits sharded tensors across the tensor-parallel group
// (K and V across at most their heads).
uint64_t Shards(const ParamEntry& t, uint64_t tp) { return TpShards(t.tp_sharded, t.tp_max_shards, tp); }
uint64_t DeviceElements(const ParamEntry& t, uint64_t tp) { return CeilDiv(t.elements, Shards(t, tp)); }


uint64_t Add(uint64_t a, uint64_t b) { return CheckedAdd(a, b, "the memory ledger"); }

// Quantized weights (inference, and QLoRA's frozen base; stated in the README): int8 with an fp16 scale per output channel
// (LLM.int8, Dettmers et al. 2022); int4 in groups of 128 weights with an fp16 scale each (GPTQ's
// and AWQ's default group size); fp8 with one fp32 scale per tensor. Only matrices inside the blocks
// are quantized; embeddings, the head and vectors stay at the weight dtype.
uint64_t QuantizedBytes(const ParamEntry& t, uint64_t n, Quant q, DType weight) {
  const bool quantizable = t.block_matrix && q != Quant::kNone;
  if (!quantizable) return BytesOf(n, weight, "weights");
  switch (q) {
    // One scale per output channel: the matrix's elements over its input dimension ([.., in, out]).
    case Quant::kInt8: return Add(n, 2 * CeilDiv(n, t.shape[t.shape.size() - 2]));
    case Quant::kInt4: return Add(BytesOf(n, DType::kInt4, "weights"), 2 * CeilDiv(n, 128));
    case Quant::kFp8: return Add(n, 4);
    case Quant::kNone: break;
  }
  return BytesOf(n, weight, "weights");
}

uint64_t Overhead(uint64_t subtotal, const Settings& s) {
  uint64_t fraction = static_cast<uint64_t>(static_cast<double>(subtotal) * s.overhead_fraction);
  return Add(s.overhead_bytes, fraction);
}

}  // namespace

ModelStates StageModelStates(const MemoryModel& model, const Settings& s, uint64_t stage) {
  ModelStates ledger;
  const Precisions& d = s.dtypes;
  for (const ParamEntry& t : model.params) {
    const uint64_t copies = StageCopies(model, t.block_type, t.after_blocks, stage, s.pp);
    if (copies == 0) continue;
    // A tied head on a later stage keeps its own copy of the embedding weight (Megatron-LM).
    if (t.tied_copy && stage == 0) continue;
    const uint64_t n = DeviceElements(t, s.tp);
    auto times = [&](uint64_t bytes) { return CheckedMul(bytes, copies, "the memory ledger"); };
    // QLoRA (Dettmers et al. 2023): frozen base weights stay quantized while adapters train.
    const bool quantized = !t.trainable && s.quant != Quant::kNone;
    ledger.weights = Add(ledger.weights, times(quantized ? QuantizedBytes(t, n, s.quant, d.param)
                                                         : BytesOf(n, d.param, "weights")));
    if (!t.trainable) continue;
    ledger.gradients = Add(ledger.gradients, times(BytesOf(n, d.grad, "gradients")));
    if (d.master) ledger.master = Add(ledger.master, times(BytesOf(n, *d.master, "master weights")));
    ledger.optimizer = Add(ledger.optimizer, times(OptimizerStateBytes(s.optimizer, d.state, t.shape, t.elements,
                                                                       Shards(t, s.tp))));
  }
  return ledger;
}

uint64_t InferenceTensorBytes(const Layer& layer, const ParamTensor& tensor, const Settings& settings, DType weight) {
  ParamEntry e;
  e.shape = tensor.shape;
  e.elements = 1;
  for (uint64_t d : tensor.shape) e.elements = CheckedMul(e.elements, d, "a parameter tensor");
  e.tp_sharded = tensor.tp_sharded;
  e.tp_max_shards = tensor.tp_max_shards;
  e.block_matrix = layer.block_type >= 0 && tensor.shape.size() >= 2;
  return QuantizedBytes(e, DeviceElements(e, settings.tp), settings.quant, weight);
}

DType InferenceWeightDtype(const ModelSpec& spec, const Settings& settings) {
  if (settings.param_dtype_given) return settings.dtypes.param;
  if (spec.family == Family::kTransformer && spec.transformer.dtype) return *spec.transformer.dtype;
  return settings.dtypes.param;
}

TrainMemory ComposeTraining(const ModelStates& states, const ActivationMemory& act, const Settings& s,
                            uint64_t stage) {
  TrainMemory m;
  m.weights = states.weights;
  m.gradients = states.gradients;
  m.master_weights = states.master;
  m.optimizer = states.optimizer;
  // ZeRO partitions over the data-parallel ranks (Rajbhandari et al. 2019, §5): stage 1 the optimizer
  // states (with the fp32 master copy), 2 also the gradients, 3 also the weights. DeepSpeed flattens
  // each category into one buffer and splits it evenly, so each is divided as a whole, rounded up.
  const uint64_t dp = s.dp();
  if (s.zero >= 1) {
    m.optimizer = CeilDiv(m.optimizer, dp);
    m.master_weights = CeilDiv(m.master_weights, dp);
  }
  if (s.zero >= 2) m.gradients = CeilDiv(m.gradients, dp);
  if (s.zero >= 3) m.weights = CeilDiv(m.weights, dp);
  m.activations = act.total;
  m.per_layer_activations = act.per_layer;
  m.stage = stage;
  const uint64_t subtotal = Add(Add(Add(m.weights, m.gradients), Add(m.master_weights, m.optimizer)), m.activations);
  m.overhead = Overhead(subtotal, s);
  m.total = Add(subtotal, m.overhead);
  return m;
}

TrainMemory MostLoadedStage(const Settings& settings, const std::function<ModelStates(uint64_t)>& states,
                            const std::function<ActivationMemory(uint64_t)>& activations) {
  TrainMemory best;
  for (uint64_t stage = 0; stage < settings.pp; ++stage) {
    TrainMemory m = ComposeTraining(states(stage), activations(stage), settings, stage);
    if (stage == 0 || m.total > best.total) best = m;
  }
  return best;
}

TrainMemory TrainingMemory(const Settings& settings, const MemoryModel& model) {
  return MostLoadedStage(
      settings, [&](uint64_t stage) { return StageModelStates(model, settings, stage); },
      [&](uint64_t stage) { return TrainingActivations(model, settings, stage); });
}

InferMemory InferenceMemory(const ModelSpec& spec, const Settings& settings, const MemoryModel& model,
                            uint64_t batch) {
  const DType weight = InferenceWeightDtype(spec, settings);
  InferMemory best;
  // Pipeline stages hold their blocks' weights and KV cache; the most-loaded stage is reported.
  for (uint64_t stage = 0; stage < settings.pp; ++stage) {
    InferMemory m;
    for (const ParamEntry& t : model.params) {
      const uint64_t copies = StageCopies(model, t.block_type, t.after_blocks, stage, settings.pp);
      if (copies == 0) continue;
      if (t.tied_copy && stage == 0) continue;  // a tied head on a later stage keeps its own copy
      m.weights = Add(m.weights, CheckedMul(QuantizedBytes(t, DeviceElements(t, settings.tp), settings.quant, weight),
                                            copies, "the memory ledger"));
    }
    m.kv_cache = KvCacheBytes(model, model.seq, batch, settings, stage);
    m.activations = InferenceActivations(model, settings, batch);
    const uint64_t subtotal = Add(Add(m.weights, m.kv_cache), m.activations);
    m.overhead = Overhead(subtotal, settings);
    m.total = Add(subtotal, m.overhead);
    if (stage == 0 || m.total > best.total) best = m;
  }
  return best;
}

}  // namespace tally
