// A batch-independent summary of a LayerGraph built at batch 1: every parameter tensor and every
// unique tensor saved for backward, with what the memory formulas need. Saved tensors scale
// exactly with the batch, so one summary serves every batch size, and a sweep or a fit evaluates
// it with arithmetic alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "config/model_spec.h"
#include "config/quantization.h"
#include "config/settings.h"
#include "graph/layer_graph.h"
#include "util/checked_math.h"

namespace tally {

// Entries inside the blocks stand for one block of their block_type; StageCopies says how many
// blocks of that type a pipeline stage holds.
struct ParamEntry {
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  bool tp_sharded = false;
  bool trainable = true;
  int block_type = -1;                      // the distinct block it belongs to, -1 outside the blocks
  bool after_blocks = false;                // outside the blocks, after them (final norm, head)
  bool block_matrix = false;                // a matrix inside a block: what weight quantization applies to
  bool tied_copy = false;                   // the embedding copy a tied head keeps on a later pipeline stage
  uint64_t tp_max_shards = 0;               // ParamTensor::tp_max_shards
  Component component = Component::kOther;  // its node's: which modules a quantization method stores
  bool expert = false;                      // MoE expert weights, [experts, ...]
};

// One tensor-parallel rank's share of a parameter tensor: Megatron splits sharded tensors across the
// tensor-parallel group (K and V across at most their heads).
inline uint64_t DeviceElements(const ParamEntry& t, uint64_t tp) {
  return CeilDiv(t.elements, TpShards(t.tp_sharded, t.tp_max_shards, tp));
}

struct SavedEntry {
  uint64_t elements = 0;  // per sample
  SavedClass cls = SavedClass::kActivation;
  bool tp_sharded = false;
  bool selective = false;
  int block_type = -1;
  bool after_blocks = false;
  bool checkpoint = false;  // the block's input: what full recomputation keeps
  uint64_t tp_max_shards = 0;
  // An output --recompute op keeps beside the checkpoint (Layer::op_kept), counted under it alone;
  // a reduce-scatter's only under sequence parallelism.
  bool op_kept = false;
  bool reduce_scatter = false;
};
// Whether --recompute op keeps `e` (an op_kept entry) at this tensor parallelism.
inline bool OpKeeps(const SavedEntry& e, bool sp, uint64_t tp) { return !e.reduce_scatter || (sp && tp > 1); }

// One node of a training step, per sample, in graph order: what estimate/step_timeline.cc walks.
// Inside the blocks a node stands for one block of its type.
struct StepNode {
  std::string path;  // the first block's ("blocks.0.mlp.up")
  LayerKind kind = LayerKind::kLinear;
  Component component = Component::kOther;
  int block_type = -1;
  bool after_blocks = false;
  uint64_t output = 0;  // elements of its output
  bool scores = false;  // an s x s attention tensor: flash attention never writes it
  // The MemoryModel::saved entries it saves first, and the MemoryModel::params entries it owns.
  uint32_t saved_begin = 0, saved_end = 0;
  uint32_t params_begin = 0, params_end = 0;
  // The node whose weight it uses (a tied head: nodes[shares_weight_of]'s gradient is written here).
  std::optional<uint32_t> shares_weight_of;
  uint64_t weight_elements = 0;   // its GEMMs' weight matrices (what autocast casts), frozen ones too
  uint64_t backward_scratch = 0;  // Layer::backward_scratch
  // How tensor parallelism splits its output on a device (DeviceOutput): not at all (the residual
  // stream, a row-parallel linear's all-reduced sum: split only under sequence parallelism), as its
  // weights split (a column-parallel linear's columns), or by up to `output_tp_max_shards` ranks (a
  // node on split dimensions, Layer::tp_split; 0: all).
  enum class TpOutput : uint8_t { kWhole, kByWeights, kSplit };
  TpOutput tp_output = TpOutput::kWhole;
  uint64_t output_tp_max_shards = 0;
};

// One attention layer of a distinct block: what its KV cache holds (estimate/kv_cache.h).
struct KvEntry {
  uint64_t elements_per_token = 0;  // K and V of one token (the latent, under MLA)
  uint64_t tp_max_shards = 0;       // split over at most this many tensor-parallel ranks (0: all)
  AttentionKind kind = AttentionKind::kFull;
  uint64_t span = 0;
  int block_type = -1;
};

// One state-space layer of a distinct block: the recurrent state it keeps per sequence.
struct StateEntry {
  uint64_t elements_per_sequence = 0;
  int block_type = -1;
};

struct MemoryModel {
  std::vector<ParamEntry> params;
  std::vector<SavedEntry> saved;  // unique tensors of each distinct block, the model's input batch left out
  std::vector<StepNode> nodes;    // every node of the graph, each distinct block's once
  std::vector<KvEntry> kv;
  // State-space layers (Mamba): no KV cache, a constant state per sequence instead.
  std::vector<StateEntry> states;
  std::vector<BlockRun> runs;  // the blocks in order (LayerGraph::runs)
  uint64_t n_layers = 0;
  uint64_t seq = 1;
  uint64_t target_seq = 0;       // an encoder–decoder's decoder length (LayerGraph::target_seq); 0 otherwise
  uint64_t vocab = 0;            // the head's width (0 without one)
  std::string training_refused;  // LayerGraph::training_refused
  // The config's quantization_config (Evaluation sets it): how a frozen base is stored when no
  // --quant says otherwise.
  std::optional<QuantizationSpec> quantization;
};

// `graph` must be built with batch 1.
MemoryModel SummarizeMemory(const LayerGraph& graph);

// Elements per sample of node `n`'s output (or of the gradient of it) on one of `tp` tensor-parallel
// ranks, the residual stream split too under sequence parallelism (`sp`; Korthikanti et al. 2022,
// §4.2.2). A column-parallel linear's output splits as its weights do: K and V past their heads are
// whole on every rank.
uint64_t DeviceOutput(const MemoryModel& m, const StepNode& n, uint64_t tp, bool sp);

// The largest output per sample on one tensor-parallel rank, the head, the loss and (with
// `with_scores` false: flash attention) the s x s attention scores left out.
uint64_t LargestDeviceOutput(const MemoryModel& m, uint64_t tp, bool sp, bool with_scores);

// Pipeline stages take contiguous runs of blocks, the embedding on the first stage, everything after
// the blocks on the last (Narayanan et al. 2021, §2.2). --pp is at most the number of blocks
// (CheckParallelism), so every stage has blocks. Blocks are spread evenly, stage sizes differing by
// at most one: block b sits on stage b · pp / L, so stage s holds [⌈s·L/pp⌉, ⌈(s+1)·L/pp⌉).
inline uint64_t StageFirstBlock(uint64_t stage, uint64_t n_layers, uint64_t pp) {
  const u128 scaled = static_cast<u128>(stage) * n_layers + pp - 1;
  // In 64 bits when it fits, as it always does in practice: dividing 128 bits is a library call.
  if (scaled <= UINT64_MAX) return static_cast<uint64_t>(scaled) / pp;
  return static_cast<uint64_t>(scaled / pp);
}

// How many copies of an entry pipeline stage `stage` holds: 1 or 0 outside the blocks, else the
// blocks of its type on the stage.
uint64_t StageCopies(const MemoryModel& m, int block_type, bool after_blocks, uint64_t stage, uint64_t pp);

// Full recomputation reruns a stage's blocks [StageFirstBlock, StageRecomputeEnd): its first
// `layers` with --recompute-layers (Megatron-LM's --recompute-method block, which checkpoints the
// first --recompute-num-layers of each stage and keeps the others' activations), all without.
inline uint64_t StageRecomputeEnd(uint64_t stage, uint64_t n_layers, uint64_t pp, std::optional<uint64_t> layers) {
  const uint64_t lo = StageFirstBlock(stage, n_layers, pp), hi = StageFirstBlock(stage + 1, n_layers, pp);
  return layers ? lo + std::min(*layers, hi - lo) : hi;
}

// Blocks of `block_type` among `runs` that full recomputation reruns on `stage`; over every stage
// with `stage` absent.
uint64_t RecomputedBlocks(const std::vector<BlockRun>& runs, uint64_t n_layers, int block_type, uint64_t pp,
                          std::optional<uint64_t> layers, std::optional<uint64_t> stage = std::nullopt);

// The share of a pipeline stage's blocks that rerun, on the first (largest) stage: 1 under
// --recompute full or op (whose reruns gather the weights too), less with --recompute-layers, 0 otherwise. What scales
// with it: the weights an offloaded stage gathers again (estimate/offload.h); the step model counts its reruns node by
// node (RecomputeRule).
double RecomputedShare(Recompute recompute, std::optional<uint64_t> layers, uint64_t n_layers, uint64_t pp);

// The distinct block of the first block on `stage`.
int FirstTypeOnStage(const MemoryModel& m, uint64_t stage, uint64_t pp);

}  // namespace tally
