// What the memory sections show, computed once per settings: the training and inference ledgers
// per device, the KV cache per token, one block's activations beside Korthikanti et al.'s formula,
// whether each ledger fits a named device, and the figures their --explain formulas are written with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/memory.h"
#include "estimate/step_timeline.h"

namespace tally {

// One kind of attention layer in the KV cache's formula: its layers in the whole model, the
// elements one token keeps per device and the tokens kept, in whole pages.
struct KvTerm {
  uint64_t layers = 0;
  AttentionKind kind = AttentionKind::kFull;
  uint64_t span = 0;
  uint64_t elements = 0;
  uint64_t tokens = 0;
};

// The KV cache's formula: one full-attention kind of 2·g·d elements per token (uniform: 2·L·g·d·b·s),
// else a term per kind of layer, the cross-attention layers' apart.
struct KvFormula {
  bool uniform = false;
  uint64_t heads = 0;   // uniform: the K/V heads of one device
  uint64_t tokens = 0;  // uniform: the sequence in whole pages
  std::vector<KvTerm> self, cross;
};

// One kind of state-space layer: its layers in the whole model and the state one sequence keeps.
struct SsmTerm {
  uint64_t layers = 0;
  uint64_t elements = 0;
};

// Korthikanti et al. 2022's per-layer activation bytes, for comparison: Eq. 1 (s·b·h·(34 + 5·a·s/h)),
// Eq. 2 with tensor parallelism t, Eq. 4 with sequence parallelism, §5's selective (the 5·a·s/h term
// dropped: Eq. 6; flash attention keeps no s² tensors either) and full (2·s·b·h) recomputation. They
// assume a GPT block with 2-byte activations, 1-byte dropout masks and eager attention, and leave out
// LayerNorm's fp32 mean and rstd, which autograd keeps: 16·s·b bytes a block under those conditions
// (tests/unit/memory_test.cc).
enum class KorthikantiEquation { kFull, kEq1, kEq2, kEq4 };
struct Korthikanti {
  KorthikantiEquation equation = KorthikantiEquation::kEq1;
  bool no_attention_scores = false;  // selective recomputation or flash attention: no 5·a·s/h term
  uint64_t s = 0, b = 0, h = 0, a = 0, t = 1;
  uint64_t bytes = 0;
  double ratio = 0;  // the exact per-block bytes / `bytes`
};

struct MemoryEstimate {
  const ModelSpec* spec = nullptr;
  const Settings* settings = nullptr;
  std::shared_ptr<const GraphSummary> summary;
  bool transformer = false;
  DType kv_dtype = DType::kBf16;
  uint64_t gradient_ranks = 1;        // data- x context-parallel ranks: what ZeRO partitions over
  uint64_t expert_data_parallel = 1;  // the routed experts' ZeRO ranks under --ep

  // Training (--mode train or both).
  std::optional<TrainMemory> train;
  std::optional<StepMemory> step;          // the step's peak (events only when asked) and the device's figure
  std::optional<QuantizationSpec> frozen;  // the frozen weights' storage under --lora or --trainable
  bool ssm = false;                        // state-space blocks: no Korthikanti comparison
  std::optional<Korthikanti> korthikanti;

  // Inference (--mode infer or both).
  std::optional<InferMemory> infer;
  DeviceOverheads infer_overheads;
  uint64_t infer_device = 0;  // the inference total (its peak) + the device's overheads
  uint64_t infer_batch = 0;
  DType infer_weight_dtype = DType::kBf16;
  std::optional<QuantizationSpec> infer_quantization;
  bool checkpoint_weights = false;  // UsesCheckpointWeights
  std::string weights_source;       // with a checkpoint: where the inference weight bytes come from
  KvFormula kv;
  std::vector<SsmTerm> ssm_terms;
  std::optional<uint64_t> kv_per_token;            // a transformer's, every layer
  std::optional<uint64_t> ssm_state_per_sequence;  // state-space layers', every layer

  // A named device (--hardware): its usable memory and whether each ledger fits in it.
  std::optional<uint64_t> limit;
  std::optional<bool> train_fits, infer_fits;

  const MemoryModel& model() const { return summary->memory; }
};

// What to compute beside the ledgers: the training step's timeline (its peak, the device figure and
// whether it fits), and with it every event (--timeline). A sweep of ledger keys skips the step.
struct MemoryRequest {
  bool step = true;
  bool events = false;
};

// Reads `settings` and the evaluation's spec by reference: both must outlive the result.
MemoryEstimate EstimateMemory(Evaluation& evaluation, const Settings& settings, MemoryRequest request = {});

}  // namespace tally
