#include "config/model_spec.h"

namespace tally {

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
    case ActivationKind::kRelu6: return "relu6";
    case ActivationKind::kHardswish: return "hardswish";
    case ActivationKind::kHardsigmoid: return "hardsigmoid";
  }
  return "?";
}

}  // namespace tally
