#include "estimate/memory_model.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "util/checked_math.h"

namespace tally {
namespace {

uint64_t Product(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n = CheckedMul(n, d, "a tensor's size");
  return n;
}

}  // namespace

MemoryModel SummarizeMemory(const LayerGraph& graph) {
  if (graph.batch != 1) throw std::logic_error("SummarizeMemory needs a graph built with batch 1");
  MemoryModel m;
  m.n_layers = graph.n_layers;
  m.seq = graph.seq;
  std::set<std::string> seen;
  std::set<int> blocks_with_checkpoint;
  bool after_blocks = false;
  for (const Layer& l : graph.layers) {
    after_blocks = after_blocks || l.block >= 0;
    const bool after = l.block < 0 && after_blocks;
    for (const ParamTensor& t : l.param_tensors) {
      m.params.push_back({t.shape, Product(t.shape), t.tp_sharded, l.trainable, l.block, after,
                          l.block >= 0 && t.shape.size() >= 2, false, t.tp_max_shards});
    }
    if (l.weights_of) {
      const Layer& owner = graph.layers[*l.weights_of];
      const ParamTensor& w = owner.param_tensors.front();
      m.params.push_back({w.shape, Product(w.shape), w.tp_sharded, owner.trainable, -1, true, false, true});
    }
    const bool weight_trains = l.weights_of ? graph.layers[*l.weights_of].trainable : l.trainable;
    for (const SavedTensor& t : l.saved) {
      if (t.dw_only && !weight_trains) continue;
      if (t.id == kInputTensor || !seen.insert(t.id).second) continue;
      const bool checkpoint = l.block >= 0 && blocks_with_checkpoint.insert(l.block).second;
      m.saved.push_back({t.elements, t.cls, t.tp_sharded, t.selective, l.block, after, checkpoint, t.tp_max_shards});
    }
    if (l.component == Component::kLmHead) m.vocab = l.shape.back();
    if (l.component == Component::kLmHead || l.component == Component::kLoss) continue;
    const uint64_t out = Product(l.shape);
    m.largest_output_eager = std::max(m.largest_output_eager, out);
    const bool scores = l.shape.size() == 4 && l.component == Component::kAttentionCore;
    if (!scores) m.largest_output = std::max(m.largest_output, out);
  }
  return m;
}

}  // namespace tally
