// ModelSpec + GraphSettings -> LayerGraph. Settings errors (a sequence longer than learned positions,
// --seq on a sequential model) are InputErrors here; shapes that do not chain point at the config line.
// estimate/evaluation.h is the one caller: it caches graphs by their GraphSettings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/model_spec.h"
#include "graph/layer_graph.h"

namespace tally {

// Everything a graph depends on, and nothing else: two runs with equal GraphSettings share a graph,
// so the builders read only these (a setting missing here cannot reach a graph).
struct GraphSettings {
  uint64_t batch = 1;
  // A transformer's tokens per sequence, resolved (ResolveSettings); unset for a sequential model.
  std::optional<uint64_t> seq;
  // An encoder–decoder's decoder tokens; unset: BuildGraph applies DefaultTargetSeq (config/resolve.h).
  std::optional<uint64_t> target_seq;
  std::optional<uint64_t> context;  // keys each query follows when not seq (a decode step)
  std::optional<uint64_t> images;   // a vision tower's images per sequence; default VisionSpec::images
  bool causal = false;
  Attention attention = Attention::kFlash;
  MlpKernel mlp_kernel = MlpKernel::kEager;
  LossKernel loss_kernel = LossKernel::kEager;  // what the loss saves for backward
  std::optional<double> dropout;                // overrides the config's
  std::vector<std::string> frozen;
  uint64_t lora_rank = 0;
  std::vector<std::string> lora_targets;
  // The adapters compute in fp32 beside 16-bit weights (--lora-dtype fp32, PEFT's default): each
  // casts its input to fp32 and keeps that copy for its weight gradient.
  bool lora_fp32 = false;
  DropoutMask dropout_mask = DropoutMask::kCuda;  // what a saved dropout mask costs
  std::vector<uint64_t> input;                    // a sequential model's input shape, when not its own
  // NOLINTNEXTLINE(modernize-use-nullptr): a false positive on the defaulted <=>'s comparison with literal 0.
  auto operator<=>(const GraphSettings&) const = default;
};

GraphSettings GraphSettingsOf(const Settings& settings);

// For a hashed cache of graphs: equal settings hash equal (a field left out would only collide more).
struct GraphSettingsHash {
  size_t operator()(const GraphSettings& settings) const;
};

// The graph of `spec` under `settings`, whose seq a transformer needs resolved (std::logic_error
// without it: a caller skipped ResolveSettings).
LayerGraph BuildGraph(const ModelSpec& spec, const GraphSettings& settings);

// Parallelism the model cannot have (heads that do not split, more stages than blocks): an
// InputError naming the flag.
void CheckParallelism(const ModelSpec& spec, const Settings& settings);

// One per family; BuildGraph dispatches.
LayerGraph BuildTransformerGraph(const ModelSpec& spec, const GraphSettings& settings);
LayerGraph BuildSequentialGraph(const ModelSpec& spec, const GraphSettings& settings);

}  // namespace tally
