// Parameter counts from the layer graph: exact integers, tied weights counted once.
#pragma once

#include <cstdint>
#include <map>

#include "graph/layer_graph.h"

namespace tally {

struct ParamCounts {
  uint64_t total = 0;
  // Token and learned-position embeddings plus an untied LM head: the matrices Kaplan et al. 2020
  // (§2.1) leave out of N.
  uint64_t embedding = 0;
  uint64_t non_embedding = 0;  // total - embedding: Kaplan's N
  uint64_t per_layer = 0;      // the first transformer block; 0 for sequential models
  // What one token uses: total less the experts it is not routed to, the input embedding included
  // (the convention of Qwen, Meta and Microsoft model cards; Mixtral's "active parameters")...
  uint64_t active = 0;
  // ... and the same without the input embedding table (DeepSeek's "activated", OpenAI's "active"
  // parameters). An untied head stays in both.
  uint64_t active_non_embedding = 0;
  // `active` less a multimodal model's vision tower and projector, which run once per image, not per
  // token: what Meta's "17B active" counts for Llama 4 Scout.
  uint64_t active_text = 0;
  // Gemma 3n: the per-layer embedding table (embed_tokens_per_layer), which Google keeps off the
  // accelerator (PLE caching), and the "effective" parameters of the E2B/E4B names: the total less
  // that table, the token embedding, the audio and vision towers and their embedders, as Google's
  // Gemma 3n overview counts them (E2B: 1.91B of over 5B loaded). 0 for every other model.
  uint64_t per_layer_embedding = 0;
  uint64_t effective = 0;
  uint64_t mtp = 0;        // DeepSeek-V3's and GLM-4.5's multi-token-prediction modules, outside `total`
  uint64_t trainable = 0;  // parameters that get gradients (all, unless frozen or LoRA)
  std::map<Component, uint64_t> by_component;
};

ParamCounts CountParams(const LayerGraph& graph);

}  // namespace tally
