#include "estimate/params.h"

#include "util/checked_math.h"

namespace tally {

ParamCounts CountParams(const LayerGraph& graph) {
  ParamCounts p;
  const std::string_view what = "the parameter count";
  const int first_type = graph.runs.empty() ? -2 : graph.runs.front().type;
  for (const Layer& l : graph.layers) {
    const uint64_t n = CheckedMul(l.params, l.repeat, what);  // every block this node stands for
    p.total = CheckedAdd(p.total, n, what);
    p.by_component[l.component] = CheckedAdd(p.by_component[l.component], n, what);
    if (l.component == Component::kEmbedding || l.component == Component::kLmHead) p.embedding += n;
    if (l.block_type == first_type) p.per_layer += l.params;
    if (l.trainable) p.trainable += n;
  }
  p.non_embedding = p.total - p.embedding;
  // Mixtral's "active parameters" (Jiang et al. 2024, §1): each token runs top_k of n_experts MLPs.
  p.active = p.total;
  for (const Layer& l : graph.layers) {
    if (l.n_experts > 0) p.active -= l.params / l.n_experts * (l.n_experts - l.active_experts) * l.repeat;
  }
  p.active_non_embedding = p.active;
  for (const Layer& l : graph.layers) {
    if (l.kind == LayerKind::kEmbedding && l.path == "embed.tokens") p.active_non_embedding -= l.params;
  }
  p.active_text = p.active;
  for (Component c : {Component::kVision, Component::kProjector, Component::kAudio}) {
    if (auto it = p.by_component.find(c); it != p.by_component.end()) p.active_text -= it->second;
  }
  for (const Layer& l : graph.layers) {
    if (l.path == "embed.per_layer") p.per_layer_embedding = l.params;
  }
  if (p.per_layer_embedding > 0) {
    p.effective = p.active_non_embedding - p.per_layer_embedding;
    for (Component c : {Component::kVision, Component::kProjector, Component::kAudio}) {
      if (auto it = p.by_component.find(c); it != p.by_component.end()) p.effective -= it->second;
    }
  }
  p.mtp = graph.mtp_params;
  return p;
}

}  // namespace tally
