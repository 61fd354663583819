// Zamba2's shared transformer block at one hybrid block, as nodes (transformers modeling_zamba2.py,
// Zamba2HybridLayer): graph/build_transformer.cc puts them before the block's Mamba-2 mixer and
// ties the shared weights of every use after the first to that first use's nodes.
#pragma once

#include <string>
#include <vector>

#include "config/model_spec.h"
#include "graph/layer.h"

namespace tally {

// Where a use sits: its path prefix ("blocks.6.shared"), the path of the block's own linear
// ("blocks.6.linear"), the batch, sequence and keys each query sees, whether the attention kernel
// skips the masked half, and the id of the hidden states it reads (the concatenation's other half
// is the embedding output).
struct SharedBlockPlace {
  std::string prefix;
  std::string linear;
  uint64_t batch = 1;
  uint64_t seq = 1;
  uint64_t keys = 1;
  bool causal = false;
  std::string input;
};

// The nodes in order, each with its output shape; `shared` lists those whose weights are the
// shared block's (the norms, q, k, v, o, gate_up and down), in the same order at every use. The
// last node's output is the block's linear's, which joins the Mamba-2 block's input.
struct SharedBlockNodes {
  std::vector<Layer> layers;
  std::vector<size_t> shared;
};

SharedBlockNodes Zamba2SharedBlock(const TransformerSpec& t, const SharedBlockPlace& place);

}  // namespace tally
