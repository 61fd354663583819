// A batch-independent summary of a LayerGraph built at batch 1: every parameter tensor and every
// unique tensor saved for backward, with what the memory formulas need. Saved tensors scale
// exactly with the batch, so one summary serves every batch size, and a sweep or a fit evaluates
// it with arithmetic alone.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/layer_graph.h"
#include "util/checked_math.h"

namespace tally {

struct ParamEntry {
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  bool tp_sharded = false;
  bool trainable = true;
  int block = -1;             // transformer block, -1 outside
  bool after_blocks = false;  // outside the blocks, after them (final norm, head)
  bool block_matrix = false;  // a matrix inside a block: what weight quantization applies to
  bool tied_copy = false;     // the embedding copy a tied head keeps on a later pipeline stage
  uint64_t tp_max_shards = 0; // ParamTensor::tp_max_shards
};

struct SavedEntry {
  uint64_t elements = 0;  // per sample
  SavedClass cls = SavedClass::kActivation;
  bool tp_sharded = false;
  bool selective = false;
  int block = -1;
  bool after_blocks = false;
  bool checkpoint = false;  // the block's input: what full recomputation keeps
  uint64_t tp_max_shards = 0;
};

struct MemoryModel {
  std::vector<ParamEntry> params;
  std::vector<SavedEntry> saved;  // unique tensors, the model's input batch left out
  uint64_t n_layers = 0;
  uint64_t seq = 1;
  uint64_t largest_output = 0;        // per sample, without the head, loss and s x s scores
  uint64_t largest_output_eager = 0;  // the same with the s x s scores (eager attention)
  uint64_t vocab = 0;                 // the head's width (0 without one)
};

// `graph` must be built with batch 1.
MemoryModel SummarizeMemory(const LayerGraph& graph);

// The pipeline stage an entry sits on: contiguous runs of blocks per stage, the embedding on the
// first stage, everything after the blocks on the last (Narayanan et al. 2021, §2.2). --pp is at
// most the number of blocks (BuildGraph checks), so every stage has blocks.
// Blocks are spread evenly, stage sizes differing by at most one: block b sits on b · pp / L.
inline uint64_t StageOf(int block, bool after_blocks, uint64_t n_layers, uint64_t pp) {
  if (pp == 1) return 0;
  if (block < 0) return after_blocks ? pp - 1 : 0;
  return static_cast<uint64_t>(static_cast<u128>(static_cast<uint64_t>(block)) * pp / n_layers);
}

}  // namespace tally
