#include "config/model_spec.h"

#include "config/names.h"

namespace tally {

std::vector<std::pair<LayerSpec, uint64_t>> LayerRuns(const TransformerSpec& t) {
  if (t.layer_specs.empty()) {
    LayerSpec uniform;
    if (t.sliding_window > 0) uniform = {AttentionKind::kSliding, t.sliding_window};
    if (t.mla.kv_lora_rank > 0) uniform.attention = AttentionKind::kLatent;
    uniform.moe = t.n_experts > 0;
    // Mamba and Mamba-2: a norm and the mixer, no MLP (unless the mixer runs beside attention).
    if (t.ssm.kind != MixerKind::kAttention && !t.parallel_ssm) {
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
  if (t.parallel_ssm) return true;
  auto recurrent = [](MixerKind m) { return m != MixerKind::kAttention && m != MixerKind::kNone; };
  if (t.layer_specs.empty()) return recurrent(t.ssm.kind);
  for (const LayerSpec& l : t.layer_specs) {
    if (recurrent(l.mixer)) return true;
  }
  return false;
}

const char* FamilyName(Family f) { return Name(f); }

}  // namespace tally
