#include "graph/layer_graph.h"

#include <stdexcept>

#include "graph/layer_names.h"

namespace tally {

const char* LayerKindName(LayerKind k) { return Name(k); }

const char* ComponentName(Component c) { return Name(c); }

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
