// Memory per device: the training ledger (weights, gradients, master weights, optimizer states,
// activations) and the inference ledger (weights, KV cache, activations), under the precision
// policy, recomputation and parallelism of the Settings. Bytes are exact integers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

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
};

struct InferMemory {
  uint64_t weights = 0;
  uint64_t kv_cache = 0;        // self-attention: grows with the tokens
  uint64_t cross_kv_cache = 0;  // an encoder–decoder's cross-attention: fixed at the source length
  uint64_t ssm_state = 0;       // state-space layers' recurrent state (kv_cache.h)
  uint64_t activations = 0;
  uint64_t overhead = 0;
  uint64_t total = 0;
};

// The model states one pipeline stage holds before ZeRO partitions them; they depend on the
// dtypes, optimizer, tensor and pipeline parallelism and quantization, not on the batch.
struct ModelStates {
  uint64_t weights = 0, gradients = 0, master = 0, optimizer = 0;
  uint64_t dequant = 0;  // QLoRA: the largest frozen quantized matrix dequantized at the activation dtype
  // --offload params: the weights gathered on the device at once (OffloadToHost in offload.h).
  uint64_t outside_blocks = 0, largest_block = 0;
  // --ep: the routed experts' part of each (in it), partitioned by ZeRO over dp / ep (expert_parallel.h).
  uint64_t expert_weights = 0, expert_gradients = 0, expert_master = 0, expert_optimizer = 0;
};
ModelStates StageModelStates(const MemoryModel& model, const Settings& settings, uint64_t stage);

// A stage's ledger: its model states partitioned by ZeRO, its activations, the overhead, the total.
TrainMemory ComposeTraining(const ModelStates& states, const ActivationMemory& activations, const Settings& settings,
                            uint64_t stage);

// The ledger of the most-loaded pipeline stage, from each stage's parts (which a caller may cache).
TrainMemory MostLoadedStage(const Settings& settings, const std::function<ModelStates(uint64_t)>& states,
                            const std::function<ActivationMemory(uint64_t)>& activations);

// Training, for settings.micro_batch sequences per device and pass: the most-loaded stage.
TrainMemory TrainingMemory(const Settings& settings, const MemoryModel& model);

// Inference over `batch` sequences of model.seq tokens (the KV cache holds them all).
InferMemory InferenceMemory(const ModelSpec& spec, const Settings& settings, const MemoryModel& model, uint64_t batch);

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

// The inference weight dtype: --param-dtype when given, else the config's dtype, else the policy's.
DType InferenceWeightDtype(const ModelSpec& spec, const Settings& settings);

}  // namespace tally
