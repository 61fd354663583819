#include "graph/layer_graph.h"

#include <stdexcept>

namespace tally {

const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kEmbedding: return "embedding";
    case LayerKind::kLinear: return "linear";
    case LayerKind::kAttentionScores: return "attention_scores";
    case LayerKind::kSoftmax: return "softmax";
    case LayerKind::kAttentionContext: return "attention_context";
    case LayerKind::kRope: return "rope";
    case LayerKind::kNorm: return "norm";
    case LayerKind::kActivation: return "activation";
    case LayerKind::kResidualAdd: return "residual_add";
    case LayerKind::kDropout: return "dropout";
    case LayerKind::kLoss: return "loss";
    case LayerKind::kConv2d: return "conv2d";
    case LayerKind::kPool: return "pool";
    case LayerKind::kFlatten: return "flatten";
    case LayerKind::kConcat: return "concat";
    case LayerKind::kMultiply: return "multiply";
  }
  return "?";
}

const char* ComponentName(Component c) {
  switch (c) {
    case Component::kEmbedding: return "embedding";
    case Component::kAttention: return "attention";
    case Component::kAttentionCore: return "attention_core";
    case Component::kMlp: return "mlp";
    case Component::kNorm: return "norm";
    case Component::kLmHead: return "lm_head";
    case Component::kEmbedProjection: return "embed_projection";
    case Component::kRouter: return "router";
    case Component::kLora: return "lora";
    case Component::kLoss: return "loss";
    case Component::kLinear: return "linear";
    case Component::kConv2d: return "conv2d";
    case Component::kPool: return "pool";
    case Component::kActivation: return "activation";
    case Component::kOther: return "other";
  }
  return "?";
}

void LayerGraph::Validate() const {
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    auto fail = [&](const std::string& why) { throw std::logic_error("layer graph: " + l.path + ": " + why); };
    if (l.path.empty()) fail("empty path");
    if (l.shape.empty() || l.shape[0] != batch) fail("output shape must start with the batch");
    if (l.weights_of) {
      if (*l.weights_of >= i) fail("tied weight must refer to an earlier node");
      if (layers[*l.weights_of].params == 0) fail("tied weight refers to a node without parameters");
    }
    uint64_t tensor_params = 0;
    for (const ParamTensor& t : l.param_tensors) {
      uint64_t n = 1;
      for (uint64_t d : t.shape) n *= d;
      tensor_params += n;
    }
    if (tensor_params != l.params) fail("parameter tensors do not add up to the parameter count");
    for (const Gemm& g : l.gemms) {
      if (g.m == 0 || g.n == 0 || g.k == 0 || g.count == 0) fail("GEMM with a zero dimension");
    }
  }
}

}  // namespace tally
