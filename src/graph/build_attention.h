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

// Mllama's cross-attention (modeling_mllama.py, MllamaTextCrossAttention) over the image features:
// q from the text, k and v from the projected image tokens (once per prompt, then cached), RMSNorms
// over head_dim on q and k, no biases; reads ctx.cur and leaves o_proj's output there.
void AddImageCrossAttention(TransformerContext& ctx);

}  // namespace tally
