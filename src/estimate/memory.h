// Memory per device: the training ledger (weights, gradients, master weights, optimizer states,
// activations) and the inference ledger (weights, KV cache, activations), under the precision
// policy, recomputation and parallelism of the Settings. Bytes are exact integers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/activations.h"
#include "estimate/kv_cache.h"
#include "estimate/memory_model.h"

namespace tally {

struct TrainMemory {
  uint64_t weights = 0;  // dequant included
  uint64_t dequant = 0;  // QLoRA's dequantization buffer (ModelStates::dequant)
  uint64_t gradients = 0;
  uint64_t master_weights = 0;
  uint64_t optimizer = 0;
  uint64_t activations = 0;
  uint64_t overhead = 0;
  uint64_t total = 0;
  uint64_t per_layer_activations = 0;  // one transformer block, one micro-batch, this device
  uint64_t stage = 0;                  // the pipeline stage of the most-loaded device
  // --offload (estimate/offload.h): the bytes of this device's partition kept in host memory instead
  // (not in `total`), by kind.
  uint64_t host_weights = 0, host_gradients = 0, host_master = 0, host_optimizer = 0, host = 0;
  bool operator==(const TrainMemory&) const = default;
};

struct InferMemory {
  uint64_t weights = 0;
  uint64_t kv_cache = 0;        // self-attention: grows with the tokens
  uint64_t cross_kv_cache = 0;  // an encoder–decoder's cross-attention: fixed at the source length
  uint64_t ssm_state = 0;       // state-space layers' recurrent state (kv_cache.h)
  uint64_t activations = 0;
  uint64_t overhead = 0;
  uint64_t total = 0;
  bool operator==(const InferMemory&) const = default;
};

// The model states one pipeline stage holds before ZeRO partitions them; they depend on the
// dtypes, optimizer, tensor and pipeline parallelism and quantization, not on the batch.
struct ModelStates {
  uint64_t weights = 0, gradients = 0, master = 0, optimizer = 0;
  uint64_t dequant = 0;  // QLoRA: the largest frozen quantized matrix dequantized at the activation dtype
  // --offload params: the weights gathered on the device at once (OffloadToHost in offload.h).
  uint64_t outside_blocks = 0, largest_block = 0;
  // The gradients of the block with the most, in their own dtypes (LoRA's adapters' alone): what
  // ZeRO-2 and 3 hold unsharded until a block's reduce-scatter (step_timeline.cc, ShardBuffersOf).
  uint64_t largest_block_gradients = 0;
  // --ep: the routed experts' part of each (in it), partitioned by ZeRO over dp / ep (expert_parallel.h).
  uint64_t expert_weights = 0, expert_gradients = 0, expert_master = 0, expert_optimizer = 0;
};
// What the model states read of the settings, and nothing else: StageModelStates takes only these,
// so a memo keyed by them (LedgerMemo) cannot miss a setting that changes them.
struct StatesSettings {
  Precisions dtypes;
  Optimizer optimizer = Optimizer::kAdamw;
  Quant quant = Quant::kNone;
  uint64_t tp = 1, pp = 1, ep = 1;
  uint64_t etp = 1;                   // the routed experts' tensor-parallel degree (Settings::expert_tp)
  std::optional<Precisions> adapter;  // LoRA's fp32 adapters' dtypes (AdapterDtypes)
  auto operator<=>(const StatesSettings&) const = default;
};
StatesSettings StatesSettingsOf(const Settings& settings);
ModelStates StageModelStates(const MemoryModel& model, const StatesSettings& settings, uint64_t stage);

// What a stage's inference weights read of the settings (with the model's spec), and nothing else.
struct InferWeightSettings {
  DType weight = DType::kBf16;  // InferenceWeightDtype
  Quant quant = Quant::kNone;
  bool checkpoint = false;  // UsesCheckpointWeights
  uint64_t tp = 1, pp = 1, ep = 1;
  uint64_t etp = 1;  // the routed experts' tensor-parallel degree (Settings::expert_tp)
  auto operator<=>(const InferWeightSettings&) const = default;
};
InferWeightSettings InferWeightSettingsOf(const ModelSpec& spec, const Settings& settings);
// The inference weight bytes one device of pipeline stage `stage` holds.
uint64_t StageInferenceWeights(const ModelSpec& spec, const MemoryModel& model, const InferWeightSettings& settings,
                               uint64_t stage);

// The parts of the ledgers that depend on few settings, memoized for one MemoryModel (and the spec it
// was built from) by the settings each reads: a sweep or a fit asks for many points of one graph, and
// the model states, say, change with the precision and the parallelism but not with the batch. Each
// part is computed by the function above that takes only its key, so a hit is that function's
// answer. Bounded (a sweep keeps thousands of graphs): full, a memo starts again. Not thread-safe.
class LedgerMemo {
 public:
  ModelStates States(const MemoryModel& model, const StatesSettings& settings, uint64_t stage);
  ActivationMemory Activations(const MemoryModel& model, const ActivationSettings& settings, uint64_t stage);
  uint64_t InferWeights(const ModelSpec& spec, const MemoryModel& model, const InferWeightSettings& settings,
                        uint64_t stage);

 private:
  // The answers kept for one part: the last kRecent in place, beside the graph's summary (no
  // allocation, little memory to touch), and up to kMore behind them in a map.
  template <class Key, class Value, size_t kRecent, size_t kMore>
  class Memo {
   public:
    template <class Compute>
    Value Get(const Key& key, uint64_t stage, Compute compute) {
      for (size_t i = 0; i < filled_; ++i) {
        if (recent_[i].stage == stage && recent_[i].key == key) return recent_[i].value;
      }
      Value value = More(key, stage, compute);  // may throw: nothing is kept
      recent_[next_] = {key, stage, value};
      next_ = (next_ + 1) % kRecent;
      filled_ = std::max(filled_, next_ == 0 ? kRecent : next_);
      return value;
    }

   private:
    template <class Compute>
    Value More(const Key& key, uint64_t stage, Compute compute) {
      if constexpr (kMore == 0) {
        return compute();
      } else {
        const std::pair<Key, uint64_t> k{key, stage};
        if (auto it = more_.find(k); it != more_.end()) return it->second;
        Value value = compute();
        if (more_.size() >= kMore) more_.clear();
        more_.emplace(k, value);
        return value;
      }
    }
    struct Entry {
      Key key;
      uint64_t stage = 0;
      Value value;
    };
    std::array<Entry, kRecent> recent_{};
    size_t filled_ = 0, next_ = 0;
    std::map<std::pair<Key, uint64_t>, Value> more_;
  };
  // What a point reads first (a sweep moving between graphs reads a little of each: together).
  Memo<StatesSettings, ModelStates, 2, 64> states_;
  Memo<InferWeightSettings, uint64_t, 2, 64> infer_weights_;
  std::optional<LinearActivations> linear_;  // made at the first activations asked for
  // Activations change with the micro-batch, which most grids vary in an outer axis: the points of
  // one micro-batch ask again, the next micro-batch's rarely. Where the linear form holds, a few
  // products: cheaper than looking them up.
  Memo<ActivationSettings, ActivationMemory, 4, 0> activations_;
};

// A stage's ledger: its model states partitioned by ZeRO, its activations, the overhead, the total.
TrainMemory ComposeTraining(const ModelStates& states, const ActivationMemory& activations, const Settings& settings,
                            uint64_t stage);

// The ledger of the most-loaded pipeline stage, from each stage's parts (which a caller may cache).
TrainMemory MostLoadedStage(const Settings& settings, const std::function<ModelStates(uint64_t)>& states,
                            const std::function<ActivationMemory(uint64_t)>& activations);

// Training, for settings.micro_batch sequences per device and pass: the most-loaded stage. `memo`,
// when given, is `model`'s own.
TrainMemory TrainingMemory(const Settings& settings, const MemoryModel& model, LedgerMemo* memo = nullptr);

// Inference over `batch` sequences of model.seq tokens (the KV cache holds them all). `memo`, when
// given, is `model`'s own, and `spec` the one it was built from.
InferMemory InferenceMemory(const ModelSpec& spec, const Settings& settings, const MemoryModel& model, uint64_t batch,
                            LedgerMemo* memo = nullptr);

// Each data-parallel replica serves `batch` sequences at once.
inline uint64_t InferenceBatch(const Settings& s) { return s.batch; }

// The quantization of frozen weights in training (QLoRA under --lora or --trainable): --quant's
// method, else the config's quantization_config (MemoryModel::quantization). Trainable weights are
// never quantized.
std::optional<QuantizationSpec> FrozenQuantization(const MemoryModel& model, const Settings& settings);

// The weight quantization inference uses: --quant's method, else the config's quantization_config.
std::optional<QuantizationSpec> WeightQuantization(const ModelSpec& spec, const Settings& settings);

// Bytes one device holds of a parameter tensor of `layer` for inference: its tensor-parallel share
// at `weight`, or quantized per WeightQuantization (the modules config/quantization.h's Quantizes names),
// or, given `rates` (UsesCheckpointWeights), the checkpoint's bytes for the tensor's role.
struct CheckpointRates;
uint64_t InferenceTensorBytes(const Layer& layer, const ParamTensor& tensor, const ModelSpec& spec,
                              const Settings& settings, DType weight, const CheckpointRates* rates = nullptr);

// Whether inference stores `tensor` of `layer` weight-only quantized (config/quantization.h's
// WeightOnly method, a matrix the method quantizes): dequantized inside its GEMM.
bool InferenceWeightOnly(const Layer& layer, const ParamTensor& tensor, const ModelSpec& spec,
                         const Settings& settings);

// The inference weight dtype: --param-dtype when given, else the config's dtype, else the policy's.
DType InferenceWeightDtype(const ModelSpec& spec, const Settings& settings);

}  // namespace tally
