#include "config/model_spec.h"

namespace tally {

std::vector<std::pair<LayerSpec, uint64_t>> LayerRuns(const TransformerSpec& t) {
  if (t.layer_specs.empty()) {
    LayerSpec uniform;
    if (t.sliding_window > 0) uniform = {AttentionKind::kSliding, t.sliding_window};
    uniform.moe = t.n_experts > 0;
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

const char* FamilyName(Family f) { return f == Family::kTransformer ? "transformer" : "sequential"; }

const char* MlpName(MlpKind k) {
  switch (k) {
    case MlpKind::kGelu: return "gelu";
    case MlpKind::kRelu: return "relu";
    case MlpKind::kSwiglu: return "swiglu";
    case MlpKind::kGeglu: return "geglu";
  }
  return "?";
}

const char* NormName(NormKind k) { return k == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }

const char* PositionName(PositionKind k) {
  switch (k) {
    case PositionKind::kLearned: return "learned";
    case PositionKind::kRope: return "rope";
    case PositionKind::kNone: return "none";
    case PositionKind::kAlibi: return "alibi";
  }
  return "?";
}

const char* ActivationName(ActivationKind k) {
  switch (k) {
    case ActivationKind::kRelu: return "relu";
    case ActivationKind::kGelu: return "gelu";
    case ActivationKind::kSilu: return "silu";
    case ActivationKind::kTanh: return "tanh";
    case ActivationKind::kSigmoid: return "sigmoid";
  }
  return "?";
}

}  // namespace tally
