// A transformer's output as graph nodes: the language-model head and its loss, or an encoder's
// masked-LM, pooler and classifier heads.
#pragma once

#include "graph/transformer_context.h"

namespace tally {

// The projection back to the embedding width (when they differ), the logits over the vocabulary
// (tied to embed.tokens or not) and the cross-entropy loss.
void AddLmHead(TransformerContext& ctx);

// An encoder's head, whichever TransformerSpec::head and pooler ask for (none: the hidden states).
void AddEncoderHeads(TransformerContext& ctx);

}  // namespace tally
