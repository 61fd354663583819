#include "graph/layer_graph.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/layer_names.h"

namespace tally {

const char* LayerKindName(LayerKind k) { return Name(k); }

const char* ComponentName(Component c) { return Name(c); }

uint64_t BlocksOfType(const std::vector<BlockRun>& runs, int type, uint64_t from, uint64_t to) {
  uint64_t n = 0;
  for (const BlockRun& r : runs) {
    if (r.type != type) continue;
    const uint64_t lo = std::max(r.first, from), hi = std::min(r.first + r.count, to);
    if (lo < hi) n += hi - lo;
  }
  return n;
}

uint64_t LayerGraph::BlocksOfType(int type, uint64_t from, uint64_t to) const {
  return tally::BlocksOfType(runs, type, from, to);
}

std::vector<Layer> LayerGraph::Expanded() const {
  std::vector<Layer> out(layers.begin(), layers.begin() + static_cast<std::ptrdiff_t>(blocks_begin));
  for (const BlockRun& r : runs) {
    for (uint64_t b = r.first; b < r.first + r.count; ++b) {
      for (size_t i = blocks_begin; i < blocks_end; ++i) {
        if (layers[i].block_type != r.type) continue;
        Layer l = layers[i];
        // "blocks.<first>." becomes "blocks.<b>.".
        const std::string from = "blocks." + std::to_string(l.block) + ".", to = "blocks." + std::to_string(b) + ".";
        if (l.path.compare(0, from.size(), from) == 0) l.path = to + l.path.substr(from.size());
        l.block = static_cast<int>(b);
        l.repeat = 1;
        out.push_back(std::move(l));
      }
    }
  }
  out.insert(out.end(), layers.begin() + static_cast<std::ptrdiff_t>(blocks_end), layers.end());
  return out;
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
    const bool in_blocks = i >= blocks_begin && i < blocks_end;
    if (in_blocks != (l.block_type >= 0)) fail("a block's node outside the block range, or the reverse");
    if (in_blocks && l.repeat != BlocksOfType(l.block_type, 0, n_layers)) fail("repeat differs from its blocks");
    if (!in_blocks && l.repeat != 1) fail("a node outside the blocks repeats");
  }
  uint64_t next = 0;
  for (const BlockRun& r : runs) {
    if (r.first != next || r.count == 0) throw std::logic_error("layer graph: block runs do not tile the blocks");
    next += r.count;
  }
  if (!runs.empty() && next != n_layers) throw std::logic_error("layer graph: block runs do not cover the blocks");
}

}  // namespace tally
