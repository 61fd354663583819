#include "estimate/memory.h"

#include <algorithm>
#include <map>
#include <optional>

#include "estimate/activations.h"
#include "estimate/checkpoint_weights.h"
#include "estimate/context_parallel.h"
#include "estimate/expert_parallel.h"
#include "estimate/kv_cache.h"
#include "estimate/offload.h"
#include "estimate/optimizer.h"
#include "util/checked_math.h"

namespace tally {
namespace {

uint64_t Shards(const ParamEntry& t, uint64_t tp) { return TpShards(t.tp_sharded, t.tp_max_shards, tp); }

uint64_t Add(uint64_t a, uint64_t b) { return CheckedAdd(a, b, "the memory ledger"); }

// What a method of config/quantization.h calls the module of a parameter: only matrices inside the
// blocks and the head are ever quantized.
QuantModule ModuleOf(const ParamEntry& t) {
  if (t.component == Component::kLmHead && !t.tied_copy) return QuantModule::kHead;
  if (t.block_type < 0) return QuantModule::kOther;
  switch (t.component) {
    case Component::kAttention:
      return QuantModule::kAttention;
    case Component::kMlp:
      return t.expert ? QuantModule::kExperts : QuantModule::kMlp;
    case Component::kRouter:
      return QuantModule::kRouter;
    default:
      return QuantModule::kOther;
  }
}

// A weight matrix [.., in, out] (experts: [experts, in, out]), not a bias or a norm's vector.
bool IsMatrix(const ParamEntry& t) { return t.shape.size() >= (t.expert ? 3u : 2u); }

bool Quantized(const ParamEntry& t, const QuantizationSpec* q) {
  return q != nullptr && IsMatrix(t) && Quantizes(*q, ModuleOf(t));
}

// The elements of one [in, out] matrix of `t` on one device.
uint64_t MatrixElements(const ParamEntry& t, uint64_t tp) {
  const uint64_t n = CheckedMul(t.shape[t.shape.size() - 2], t.shape.back(), "a parameter tensor");
  return CeilDiv(n, Shards(t, tp));
}

// The one place weights become bytes. A matrix `q` quantizes takes QuantizedLinearBytes for each
// of its [in, out] matrices (each expert's its own), that total split evenly over the
// tensor-parallel shards, rounded up; everything else its elements at `weight`.
uint64_t QuantizedBytes(const ParamEntry& t, const QuantizationSpec* q, uint64_t tp, DType weight) {
  if (!Quantized(t, q)) return BytesOf(DeviceElements(t, tp), weight, "weights");
  const uint64_t in = t.shape[t.shape.size() - 2], out = t.shape.back();
  if (in == 0 || out == 0) return 0;
  const uint64_t matrices = t.elements / (in * out);
  return CeilDiv(CheckedMul(matrices, QuantizedLinearBytes(*q, out, in), "weights"), Shards(t, tp));
}

// Inference bytes of `t` on one device: the checkpoint's (estimate/checkpoint_weights.h) when it
// stores the tensor's role, else the rules.
uint64_t InferenceBytes(const ParamEntry& t, const QuantizationSpec* q, const CheckpointRates* rates, uint64_t tp,
                        DType weight) {
  if (rates != nullptr) {
    if (const auto b = rates->Bytes(GraphRole(t.component, t.block_type >= 0), DeviceElements(t, tp))) return *b;
  }
  return QuantizedBytes(t, q, tp, weight);
}

// --quant's method, else the config's quantization_config.
std::optional<QuantizationSpec> QuantizationOf(Quant quant, const std::optional<QuantizationSpec>& config) {
  if (quant != Quant::kNone) return QuantFlagSpec(quant);
  return config;
}

uint64_t Overhead(uint64_t subtotal, const Settings& s) {
  uint64_t fraction = static_cast<uint64_t>(static_cast<double>(subtotal) * s.overhead_fraction);
  return Add(s.overhead_bytes, fraction);
}

}  // namespace

StatesSettings StatesSettingsOf(const Settings& s) {
  return {.dtypes = s.dtypes,
          .optimizer = s.optimizer,
          .quant = s.quant,
          .tp = s.tp,
          .pp = s.pp,
          .ep = s.ep,
          .etp = s.expert_tp(),
          .adapter = AdapterDtypes(s)};
}

ModelStates StageModelStates(const MemoryModel& model, const StatesSettings& s, uint64_t stage) {
  ModelStates ledger;
  const std::optional<QuantizationSpec> flag = QuantizationOf(s.quant, model.quantization);
  const QuantizationSpec* quant = flag ? &*flag : nullptr;
  std::map<int, uint64_t> block_weights, block_gradients;  // one block of each type
  std::optional<ParamEntry> share;
  for (const ParamEntry& whole : model.params) {
    const ParamEntry& t = ExpertShare(whole, s.ep, share);  // --ep: E / ep routed experts
    const uint64_t copies = StageCopies(model, t.block_type, t.after_blocks, stage, s.pp);
    if (copies == 0) continue;
    // A tied head on a later stage keeps its own copy of the embedding weight (Megatron-LM).
    if (t.tied_copy && stage == 0) continue;
    const Precisions& d = s.adapter && t.component == Component::kLora ? *s.adapter : s.dtypes;
    const uint64_t tp = TensorParallelOf(t.expert, s.tp, s.etp);  // --etp splits the routed experts
    const uint64_t n = DeviceElements(t, tp);
    auto times = [&](uint64_t bytes) { return CheckedMul(bytes, copies, "the memory ledger"); };
    // QLoRA (Dettmers et al. 2023): frozen base weights stay quantized while adapters train, and
    // each is dequantized to the compute dtype (the activations') when its layer runs: one buffer of
    // the largest such matrix (one expert's, for experts) is live at a time.
    const QuantizationSpec* frozen = t.trainable ? nullptr : quant;
    const uint64_t weight = QuantizedBytes(t, frozen, tp, d.param);
    ledger.weights = Add(ledger.weights, times(weight));
    if (t.expert) ledger.expert_weights = Add(ledger.expert_weights, times(weight));
    if (t.block_type >= 0) {
      block_weights[t.block_type] = Add(block_weights[t.block_type], weight);
    } else {
      ledger.outside_blocks = Add(ledger.outside_blocks, times(weight));
    }
    if (Quantized(t, frozen)) {
      ledger.dequant = std::max(ledger.dequant, BytesOf(MatrixElements(t, tp), d.activation, "a dequantized weight"));
    }
    if (!t.trainable) continue;
    const uint64_t one_copy = BytesOf(n, d.grad, "gradients");
    if (t.block_type >= 0) block_gradients[t.block_type] = Add(block_gradients[t.block_type], one_copy);
    const uint64_t gradients = times(one_copy);
    const uint64_t master = d.master ? times(BytesOf(n, *d.master, "master weights")) : 0;
    const uint64_t optimizer = times(OptimizerStateBytes(s.optimizer, d.state, t.shape, t.elements, Shards(t, tp)));
    ledger.gradients = Add(ledger.gradients, gradients);
    ledger.master = Add(ledger.master, master);
    ledger.optimizer = Add(ledger.optimizer, optimizer);
    if (t.expert) {
      ledger.expert_gradients = Add(ledger.expert_gradients, gradients);
      ledger.expert_master = Add(ledger.expert_master, master);
      ledger.expert_optimizer = Add(ledger.expert_optimizer, optimizer);
    }
  }
  for (const auto& [type, bytes] : block_weights) ledger.largest_block = std::max(ledger.largest_block, bytes);
  for (const auto& [type, bytes] : block_gradients) {
    ledger.largest_block_gradients = std::max(ledger.largest_block_gradients, bytes);
  }
  return ledger;
}

std::optional<QuantizationSpec> FrozenQuantization(const MemoryModel& model, const Settings& settings) {
  return QuantizationOf(settings.quant, model.quantization);
}

std::optional<QuantizationSpec> WeightQuantization(const ModelSpec& spec, const Settings& settings) {
  return QuantizationOf(settings.quant, spec.quantization);
}

namespace {

ParamEntry EntryOf(const Layer& layer, const ParamTensor& tensor) {
  ParamEntry e;
  e.shape = tensor.shape;
  e.elements = 1;
  for (uint64_t d : tensor.shape) e.elements = CheckedMul(e.elements, d, "a parameter tensor");
  e.tp_sharded = tensor.tp_sharded;
  e.tp_max_shards = tensor.tp_max_shards;
  e.block_type = layer.block_type;
  e.component = layer.component;
  e.expert = layer.n_experts > 0;
  return e;
}

}  // namespace

uint64_t InferenceTensorBytes(const Layer& layer, const ParamTensor& tensor, const ModelSpec& spec,
                              const Settings& settings, DType weight, const CheckpointRates* rates) {
  const std::optional<QuantizationSpec> q = WeightQuantization(spec, settings);
  return InferenceBytes(EntryOf(layer, tensor), q ? &*q : nullptr, rates, settings.tp, weight);
}

bool InferenceWeightOnly(const Layer& layer, const ParamTensor& tensor, const ModelSpec& spec,
                         const Settings& settings) {
  const std::optional<QuantizationSpec> q = WeightQuantization(spec, settings);
  return q && WeightOnly(*q) && Quantized(EntryOf(layer, tensor), &*q);
}

DType InferenceWeightDtype(const ModelSpec& spec, const Settings& settings) {
  if (settings.param_dtype_given) return settings.dtypes.param;
  if (spec.family == Family::kTransformer && spec.transformer.dtype) return *spec.transformer.dtype;
  return settings.dtypes.param;
}

TrainMemory ComposeTraining(const ModelStates& states, const ActivationMemory& act, const Settings& s, uint64_t stage) {
  TrainMemory m;
  m.weights = states.weights;
  m.gradients = states.gradients;
  m.master_weights = states.master;
  m.optimizer = states.optimizer;
  // ZeRO partitions over the data-parallel ranks (Rajbhandari et al. 2019, §5): stage 1 the optimizer
  // states (with the fp32 master copy), 2 also the gradients, 3 also the weights. DeepSpeed flattens
  // each category into one buffer and splits it evenly, so each is divided as a whole, rounded up.
  // With --cp, over the data- and context-parallel ranks together (estimate/context_parallel.h); under
  // --ep the routed experts' buffers split over the dp·cp / ep ranks holding them (ZeroShare).
  if (s.zero >= 1) {
    m.optimizer = ZeroShare(m.optimizer, states.expert_optimizer, s);
    m.master_weights = ZeroShare(m.master_weights, states.expert_master, s);
  }
  if (s.zero >= 2) m.gradients = ZeroShare(m.gradients, states.expert_gradients, s);
  if (s.zero >= 3) m.weights = ZeroShare(m.weights, states.expert_weights, s);
  OffloadToHost(states, s, m);
  // The dequantization buffer is each device's own, whatever ZeRO partitions.
  m.dequant = states.dequant;
  m.weights = Add(m.weights, m.dequant);
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

TrainMemory TrainingMemory(const Settings& settings, const MemoryModel& model, LedgerMemo* memo) {
  // One reference captured: std::function holds it without allocating.
  const struct {
    const MemoryModel& model;
    LedgerMemo* memo;
    StatesSettings states;
    ActivationSettings activations;
  } at{model, memo, StatesSettingsOf(settings), ActivationSettingsOf(settings)};
  return MostLoadedStage(
      settings,
      [&at](uint64_t stage) {
        return at.memo != nullptr ? at.memo->States(at.model, at.states, stage)
                                  : StageModelStates(at.model, at.states, stage);
      },
      [&at](uint64_t stage) {
        return at.memo != nullptr ? at.memo->Activations(at.model, at.activations, stage)
                                  : TrainingActivations(at.model, at.activations, stage);
      });
}

InferWeightSettings InferWeightSettingsOf(const ModelSpec& spec, const Settings& s) {
  return {.weight = InferenceWeightDtype(spec, s),
          .quant = s.quant,
          .checkpoint = UsesCheckpointWeights(spec, s),
          .tp = s.tp,
          .pp = s.pp,
          .ep = s.ep,
          .etp = s.expert_tp()};
}

uint64_t StageInferenceWeights(const ModelSpec& spec, const MemoryModel& model, const InferWeightSettings& s,
                               uint64_t stage) {
  const std::optional<QuantizationSpec> quant = QuantizationOf(s.quant, spec.quantization);
  const std::optional<CheckpointRates> rates =
      s.checkpoint ? std::optional(CheckpointRatesOf(*spec.checkpoint, model)) : std::nullopt;
  uint64_t weights = 0;
  // Checkpoint bytes go by role: the elements this stage holds of each, converted once, so that a
  // whole model on one device holds exactly the bytes stored.
  std::map<TensorRole, uint64_t> role_elements;
  std::optional<ParamEntry> share;
  for (const ParamEntry& whole : model.params) {
    const ParamEntry& t = ExpertShare(whole, s.ep, share);  // --ep: E / ep routed experts
    const uint64_t copies = StageCopies(model, t.block_type, t.after_blocks, stage, s.pp);
    if (copies == 0) continue;
    if (t.tied_copy && stage == 0) continue;  // a tied head on a later stage keeps its own copy
    const TensorRole role = GraphRole(t.component, t.block_type >= 0);
    const uint64_t tp = TensorParallelOf(t.expert, s.tp, s.etp);  // --etp splits the routed experts
    if (rates && rates->Bytes(role, 1)) {
      role_elements[role] = Add(role_elements[role], CheckedMul(DeviceElements(t, tp), copies, "weights"));
      continue;
    }
    const uint64_t bytes = QuantizedBytes(t, quant ? &*quant : nullptr, tp, s.weight);
    weights = Add(weights, CheckedMul(bytes, copies, "the memory ledger"));
  }
  for (const auto& [role, elements] : role_elements) weights = Add(weights, *rates->Bytes(role, elements));
  return weights;
}

ModelStates LedgerMemo::States(const MemoryModel& model, const StatesSettings& key, uint64_t stage) {
  return states_.Get(key, stage, [&] { return StageModelStates(model, key, stage); });
}

ActivationMemory LedgerMemo::Activations(const MemoryModel& model, const ActivationSettings& key, uint64_t stage) {
  if (!linear_) linear_.emplace(model);
  if (std::optional<ActivationMemory> linear = linear_->At(model, key, stage)) return *linear;
  return activations_.Get(key, stage, [&] { return TrainingActivations(model, key, stage); });
}

uint64_t LedgerMemo::InferWeights(const ModelSpec& spec, const MemoryModel& model, const InferWeightSettings& key,
                                  uint64_t stage) {
  return infer_weights_.Get(key, stage, [&] { return StageInferenceWeights(spec, model, key, stage); });
}

InferMemory InferenceMemory(const ModelSpec& spec, const Settings& settings, const MemoryModel& model, uint64_t batch,
                            LedgerMemo* memo) {
  const InferWeightSettings weights = InferWeightSettingsOf(spec, settings);
  InferMemory best;
  // Pipeline stages hold their blocks' weights and KV cache; the most-loaded stage is reported.
  for (uint64_t stage = 0; stage < settings.pp; ++stage) {
    InferMemory m;
    m.weights = memo != nullptr ? memo->InferWeights(spec, model, weights, stage)
                                : StageInferenceWeights(spec, model, weights, stage);
    // An encoder–decoder's self-attention caches hold the target; its cross-attention caches the source.
    const uint64_t all =
        KvCacheBytes(model, model.target_seq > 0 ? model.target_seq : model.seq, batch, settings, stage);
    m.cross_kv_cache = KvCacheBytes(model, model.seq, batch, settings, stage, true);
    m.kv_cache = all - m.cross_kv_cache;
    m.ssm_state = SsmStateBytes(model, batch, settings, stage);
    m.activations = InferenceActivations(model, settings, batch);
    const uint64_t subtotal = Add(Add(Add(m.weights, m.kv_cache), Add(m.cross_kv_cache, m.ssm_state)), m.activations);
    m.overhead = Overhead(subtotal, settings);
    m.total = Add(subtotal, m.overhead);
    if (stage == 0 || m.total > best.total) best = m;
  }
  return best;
}

}  // namespace tally
