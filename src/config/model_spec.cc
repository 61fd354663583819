#include "config/model_spec.h"

#include "config/names.h"

namespace tally {

std::vector<std::pair<LayerSpec, uint64_t>> LayerRuns(const TransformerSpec& t) {
  if (t.layer_specs.empty()) {
    LayerSpec uniform;
    if (t.sliding_window > 0) uniform = {AttentionKind::kSliding, t.sliding_window};
    if (t.mla.kv_lora_rank > 0) uniform.attention = AttentionKind::kLatent;
    uniform.moe = t.n_experts > 0;
    if (t.ssm.kind != MixerKind::kAttention) {  // Mamba and Mamba-2: a norm and the mixer, no MLP
      uniform.mixer = t.ssm.kind;
      uniform.mlp = false;
    }
    return {{uniform, t.n_layers}};
  }
  std::vector<std::pair<LayerSpec, uint64_t>> runs;
  for (const LayerSpec& l : t.layer_specs) {
    if (!runs.empty() && runs.back().first == l) {
      ++runs.back().second;
    } else {
      runs.push_back({l, 1});
    }
  }
  return runs;
}

// LayerRuns' blocks, read without building them: estimators ask at every point of a sweep.
bool HasSsmBlocks(const TransformerSpec& t) {
  if (t.layer_specs.empty()) return t.ssm.kind != MixerKind::kAttention;
  for (const LayerSpec& l : t.layer_specs) {
    if (l.mixer != MixerKind::kAttention) return true;
  }
  return false;
}

const char* FamilyName(Family f) { return Name(f); }

}  // namespace tally
