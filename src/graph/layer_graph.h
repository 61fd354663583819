// The model as typed nodes, built once per (ModelSpec, GraphSettings). Identical transformer blocks
// are held once: each distinct block's nodes appear once, with `repeat` = how many blocks share them,
// and `runs` lists the blocks in order. Cost follows the distinct blocks, not the depth.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "config/model_spec.h"
#include "graph/layer.h"

namespace tally {

// Blocks [first, first + count) are all of distinct block `type`.
struct BlockRun {
  int type = 0;
  uint64_t first = 0;
  uint64_t count = 0;
};

// Blocks of distinct block `type` among `runs` with an index in [from, to).
uint64_t BlocksOfType(const std::vector<BlockRun>& runs, int type, uint64_t from = 0, uint64_t to = UINT64_MAX);

struct LayerGraph {
  std::string model_name;
  Family family = Family::kTransformer;
  uint64_t batch = 1;
  uint64_t seq = 1;         // 1 for sequential models: one sample is one "token"; an encoder–decoder's source
  uint64_t target_seq = 0;  // an encoder–decoder's target (decoder) length; 0 for every other model
  uint64_t n_layers = 0;
  bool causal = false;  // attention GEMMs are halved
  // Topological order: the nodes before the blocks, each distinct block's nodes (grouped by
  // block_type, ascending), then the nodes after the blocks.
  std::vector<Layer> layers;
  std::vector<BlockRun> runs;               // the blocks in order; empty for sequential models
  size_t blocks_begin = 0, blocks_end = 0;  // layers[blocks_begin, blocks_end) are the blocks' nodes
  // A model with a vision tower: the images per sequence it encodes (0: none, as in a decode step).
  std::optional<uint64_t> images;
  uint64_t mtp_params = 0;  // DeepSeek-V3's and GLM-4.5's multi-token-prediction modules: not built, not in the total
  // Why the training activations of this graph are not modelled (non-empty: training memory is
  // refused with this message; estimate/activations.cc).
  std::string training_refused;

  // Blocks of distinct block `type` among blocks [from, to).
  uint64_t BlocksOfType(int type, uint64_t from, uint64_t to) const;
  // Every node with every block spelled out, paths renumbered ("blocks.7.attn.qkv"): what --layers
  // prints. Its size grows with the depth; nothing else needs it.
  std::vector<Layer> Expanded() const;

  // Throws std::logic_error (exit code 4: a bug) when the builder broke an invariant.
  void Validate() const;
};

}  // namespace tally
