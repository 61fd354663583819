// A transformer block's feed-forward as graph nodes: the dense MLP (plain or gated), or the
// mixture of experts (router, routed experts, shared experts).
#pragma once

#include "graph/transformer_context.h"

namespace tally {

// The MLP of the block ctx is building (ctx.layer.moe picks the experts), then its dropout; reads
// ctx.cur and leaves the residual branch's output there.
void AddMlp(TransformerContext& ctx);

}  // namespace tally
