// Activation memory from the tensors graph nodes save for backward (training), and the largest
// transient working set of a forward pass (inference), for any batch from one MemoryModel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "config/settings.h"
#include "estimate/memory_model.h"

namespace tally {

struct ActivationMemory {
  uint64_t total = 0;      // what pipeline stage `stage` holds at its peak
  uint64_t per_layer = 0;  // one transformer block, one micro-batch
  bool operator==(const ActivationMemory&) const = default;
};

// What training activations read of the settings, and nothing else: the functions below take only
// these, so a memo keyed by them (LedgerMemo, memory.h) cannot miss a setting that changes them.
struct ActivationSettings {
  uint64_t micro_batch = 1;
  // min(grad_accum, pp): all the micro-batches in flight (1F1B keeps at most pp - stage) read of it.
  uint64_t in_flight = 1;
  DType activation = DType::kBf16;
  bool autocast = false;
  Recompute recompute = Recompute::kNone;
  std::optional<uint64_t> recompute_layers;  // --recompute-layers: the blocks of a stage rerun
  uint64_t tp = 1, cp = 1, pp = 1;
  bool sp = false;
  auto operator<=>(const ActivationSettings&) const = default;
};
ActivationSettings ActivationSettingsOf(const Settings& settings);

// One device's bytes of a saved tensor for `batch` samples: tensor-parallel ranks hold 1/t of the
// sharded tensors (K and V: of at most their heads), and with sequence parallelism 1/t of the rest
// too (Korthikanti et al. 2022, §4.2.2). Context-parallel ranks each keep s/cp of the tokens, and of
// the attention's saved tensors (Q, K, V, output, softmax statistics) (estimate/context_parallel.h).
uint64_t SavedBytes(const SavedEntry& t, const ActivationSettings& settings, uint64_t batch);
inline uint64_t SavedBytes(const SavedEntry& t, const Settings& settings, uint64_t batch) {
  return SavedBytes(t, ActivationSettingsOf(settings), batch);
}

// What full recomputation keeps of a block's input (t.checkpoint): the residual stream in the
// activation dtype (fp32 under autocast), even where the block's first node saves an fp32 copy of
// it (RMSNorm).
uint64_t CheckpointBytes(const SavedEntry& t, const ActivationSettings& settings, uint64_t batch);
inline uint64_t CheckpointBytes(const SavedEntry& t, const Settings& settings, uint64_t batch) {
  return CheckpointBytes(t, ActivationSettingsOf(settings), batch);
}

// For settings.micro_batch. Korthikanti et al. 2022 (Eq. 1-6) is the special case of eager
// attention with dropout at 2-byte activations.
ActivationMemory TrainingActivations(const MemoryModel& model, const ActivationSettings& settings, uint64_t stage);
inline ActivationMemory TrainingActivations(const MemoryModel& model, const Settings& settings, uint64_t stage) {
  return TrainingActivations(model, ActivationSettingsOf(settings), stage);
}

// TrainingActivations in a form linear in the micro-batch, where it is exactly that: with no tensor
// split across devices (--tp 1, --cp 1) and whole bytes per element, each saved tensor's bytes are
// elements x micro-batch x bytes per element, so a stage's are sums of a few products. A sweep that
// moves between thousands of graphs reads these sums instead of every saved tensor.
class LinearActivations {
 public:
  explicit LinearActivations(const MemoryModel& model);
  // TrainingActivations(model, settings, stage), or nullopt where the form does not hold (it throws
  // nothing TrainingActivations would not: an overflow is the same error).
  std::optional<ActivationMemory> At(const MemoryModel& model, const ActivationSettings& settings,
                                     uint64_t stage) const;

 private:
  static constexpr size_t kClasses = 5;         // SavedClass
  using Sums = std::array<uint64_t, kClasses>;  // elements per sample, by class
  struct Type {
    Sums full{}, not_selective{}, op{};               // op: the outputs --recompute op keeps
    uint64_t checkpoint = 0, largest_checkpoint = 0;  // the block input's elements (the last saved, the largest)
  };
  std::vector<Type> types_;
  Sums before_{}, after_{};  // outside the blocks: before them (the first stage), after (the last)
  bool exact_ = true;        // no sum overflowed
};

// The largest live input + output of any node in one forward pass over `batch` sequences, plus
// fp32 logits of the last position (what generation samples from). With --max-batched-tokens T, one
// pass takes min(batch x seq, T) tokens and samples min(batch, T) positions (fused attention).
uint64_t InferenceActivations(const MemoryModel& model, const Settings& settings, uint64_t batch);

}  // namespace tally
