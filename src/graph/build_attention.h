// A transformer block's attention as graph nodes: the q/k/v projections (multi-head, grouped-query,
// latent, or an encoder–decoder's cross-attention), RoPE and q/k norms, the core (scores, softmax,
// dropout, context) with its KV cache, and the output projection.
#pragma once

#include <string>

#include "graph/transformer_context.h"

namespace tally {

// Self-attention ("attn"), or an encoder–decoder's cross-attention ("cross") over the encoder's
// output, of the block ctx is building; reads ctx.cur and leaves the residual branch's output there.
void AddAttention(TransformerContext& ctx, const std::string& name = "attn");

}  // namespace tally
