// The checkpoint's tensors against the graph's parameters: which stored tensor belongs to which
// block and role, for --layers' `unmatched` table and for inference weights from the checkpoint's
// own bytes (estimate/checkpoint_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/model_spec.h"
#include "graph/layer_graph.h"

namespace tally {

// The convention (no per-family name map): a tensor whose name holds a block index (`layers.N.`,
// `h.N.`, `blk.N.`, `blocks.N.`) belongs to block N, in one of three roles told by its module names:
// norm ("norm", "ln_"), attention ("attn", "attention"), else MLP (the router and experts included);
// the graph's nodes by their Component. Outside the blocks: embedding, head and norm by name.
enum class TensorRole { kNone, kBlockNorm, kBlockAttention, kBlockMlp, kEmbedding, kHead, kNorm };
// StoredRole also sets `block` to the tensor's block index (-1 outside the blocks).
TensorRole StoredRole(const std::string& name, int64_t& block);
TensorRole GraphRole(Component c, bool in_block);

// One row of the mismatch: a block role whose elements differ (consecutive blocks that differ alike
// share a row: "blocks.0-31.attention"), or a tensor outside the blocks with no partner.
struct UnmatchedRow {
  enum class Kind { kBlockRole, kStored, kGraph };
  Kind kind = Kind::kBlockRole;
  std::string name;
  const char* role = "";  // kBlockRole: norm, attention or mlp
  uint64_t stored_elements = 0, graph_elements = 0;
  uint64_t stored_tensors = 0, graph_tensors = 0;  // per block for a block role
  std::vector<uint64_t> shape;                     // outside the blocks
};

struct CheckpointMatch {
  bool compared = false;  // weights were read and are not packed by a quantization method
  std::vector<UnmatchedRow> rows;
};

// Block by block and role by role the element sums must agree (so fused and split projections
// match); tensors outside the blocks pair one to one with the graph's by element count, a tensor of
// the same kind first; each left over is a row. A quantized checkpoint's packed tensors are not
// compared. `graph` is the model's graph (Expanded() is walked); LoRA adapters are left out.
CheckpointMatch MatchCheckpoint(const ModelSpec& spec, const LayerGraph& graph);

// One row as a line of text: "blocks.0.mlp: 3,072 stored, 2,048 in the graph (3/3 tensors)",
// "lm_head.weight [8, 32]: only in the checkpoint (256 elements)".
std::string DescribeRow(const UnmatchedRow& row);

// A layout the reader guessed (spec.guessed_layout) against the checkpoint beside the config, when
// there is one it can compare: the same tensors, and its warning in spec.notes says it "matches the
// checkpoint exactly"; any row of MatchCheckpoint, and an InputError (exit 2) lists them. Without
// such a checkpoint the warning stands as it is.
void ConfirmGuessedLayout(ModelSpec& spec, const LayerGraph& graph);

}  // namespace tally
