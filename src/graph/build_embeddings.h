// A transformer's input as graph nodes: token, position and token-type embeddings (and an
// encoder–decoder's decoder embeddings), or Whisper's convolutions over mel frames.
#pragma once

#include "graph/transformer_context.h"

namespace tally {

// The embedding nodes, first in the graph (embed.tokens is node 0: a tied head points at it). An
// encoder–decoder also records ctx.target_embedding, the decoder's input; ctx.cur is the encoder's.
void AddEmbeddings(TransformerContext& ctx);

}  // namespace tally
