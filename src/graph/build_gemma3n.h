// Gemma 3n's parts as graph nodes (transformers modeling_gemma3n.py; Gemma3nSpec in
// config/model_spec.h): the per-layer embedding and AltUp's extra streams before the blocks, the
// block itself, and AltUp's unembedding after them; the wrapper's towers and embedders.
#pragma once

#include "graph/transformer_context.h"

namespace tally {

// After the token embedding: the per-layer inputs (Gemma3nTextModel.get_per_layer_inputs and
// project_per_layer_inputs), the altup_projections of the other streams, and, for the multimodal
// wrapper, the vision tower (when Gemma3nSpec::vision_tower_counted), the audio tower and the two
// Gemma3nMultimodalEmbedders.
void AddGemma3nInputs(TransformerContext& ctx);

// Gemma3nTextDecoderLayer for the block ctx is building.
void AddGemma3nBlock(TransformerContext& ctx);

// Before the final norm: altup_unembed_projections and the mean over the streams.
void AddGemma3nOutputs(TransformerContext& ctx);

// The audio tower's parameters (Gemma3nAudioEncoder), counted from Gemma3nSpec's audio fields.
uint64_t Gemma3nAudioParams(const Gemma3nSpec& s);

}  // namespace tally
