// The checkpoint's own counts beside the graph's: params.checkpoint (every stored tensor's
// elements) and checkpoint.bytes with its split by dtype, when the model came with weights.
#pragma once

#include "config/model_spec.h"
#include "graph/layer_graph.h"
#include "report/report.h"

namespace tally {

// Adds model.quantization when the config has a quantization_config, and params.checkpoint and
// the checkpoint group when `spec.checkpoint` is set.
// Call after the params group, so that params.checkpoint follows params.total.
void AddCheckpoint(const ModelSpec& spec, Report& r);

// With --layers and weights: the table `unmatched` of stored tensors the graph does not predict and
// graph parameters the checkpoint lacks, and checkpoint.unmatched, its row count. The convention
// (no per-family name map): a tensor whose name holds a block index (`layers.N.`, `h.N.`, `blk.N.`,
// `blocks.N.`) belongs to block N, in one of three roles told by its module names: norm ("norm",
// "ln_"), attention ("attn", "attention"), else MLP (the router and experts included); the graph's
// nodes by their Component. Block by block and role by role the element sums must agree (so fused
// and split projections match); a role that differs is one row, and consecutive blocks that differ
// alike share a row ("blocks.0-31.attention"). Tensors outside the blocks pair one to one with the
// graph's by element count; each left over is a row. A quantized checkpoint's packed tensors are
// not compared (a note says so). `graph` is the model's graph (Expanded() is walked).
void AddCheckpointMatch(const ModelSpec& spec, const LayerGraph& graph, Report& r);

// The roles of that convention as one number, for estimate/checkpoint_weights.h: inside the blocks
// 0 norm, 1 attention, 2 MLP; outside them 11 embedding, 12 head, 13 norm; -1 anything else.
// StoredRole also sets `block` to the tensor's block index (-1 outside the blocks).
int StoredRole(const std::string& name, int64_t& block);
int GraphRole(Component c, bool in_block);

}  // namespace tally
