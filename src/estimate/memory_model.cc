#include "estimate/memory_model.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "estimate/roofline.h"
#include "util/checked_math.h"

namespace tally {
namespace {

uint64_t Product(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n = CheckedMul(n, d, "a tensor's size");
  return n;
}

}  // namespace

uint64_t StageCopies(const MemoryModel& m, int block_type, bool after_blocks, uint64_t stage, uint64_t pp) {
  if (block_type < 0) {
    const uint64_t home = pp == 1 || !after_blocks ? 0 : pp - 1;
    return home == stage ? 1 : 0;
  }
  return BlocksOfType(m.runs, block_type, StageFirstBlock(stage, m.n_layers, pp),
                      StageFirstBlock(stage + 1, m.n_layers, pp));
}

uint64_t RecomputedBlocks(const std::vector<BlockRun>& runs, uint64_t n_layers, int block_type, uint64_t pp,
                          std::optional<uint64_t> layers, std::optional<uint64_t> stage) {
  uint64_t n = 0;
  for (uint64_t st = stage.value_or(0); st < (stage ? *stage + 1 : pp); ++st) {
    n += BlocksOfType(runs, block_type, StageFirstBlock(st, n_layers, pp), StageRecomputeEnd(st, n_layers, pp, layers));
  }
  return n;
}

double RecomputedShare(Recompute recompute, std::optional<uint64_t> layers, uint64_t n_layers, uint64_t pp) {
  if (!RerunsBlocks(recompute) || n_layers == 0) return 0;
  // The first stage is the largest (StageFirstBlock): its share is the busiest stage's.
  return static_cast<double>(StageRecomputeEnd(0, n_layers, pp, layers)) /
         static_cast<double>(StageFirstBlock(1, n_layers, pp));
}

int FirstTypeOnStage(const MemoryModel& m, uint64_t stage, uint64_t pp) {
  const uint64_t first = StageFirstBlock(stage, m.n_layers, pp);
  for (const BlockRun& r : m.runs) {
    if (first >= r.first && first < r.first + r.count) return r.type;
  }
  return -2;  // no blocks: matches no entry
}

MemoryModel SummarizeMemory(const LayerGraph& graph) {
  if (graph.batch != 1) throw std::logic_error("SummarizeMemory needs a graph built with batch 1");
  MemoryModel m;
  m.n_layers = graph.n_layers;
  m.seq = graph.seq;
  m.target_seq = graph.target_seq;
  m.runs = graph.runs;
  m.training_refused = graph.training_refused;
  std::unordered_set<std::string> seen;
  std::set<int> types_with_checkpoint;
  for (size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& l = graph.layers[i];
    const bool after = i >= graph.blocks_end;
    StepNode node{.path = l.path,
                  .kind = l.kind,
                  .component = l.component,
                  .block_type = l.block_type,
                  .after_blocks = after,
                  .output = Product(l.shape),
                  .scores = l.shape.size() == 4 &&
                            (l.component == Component::kAttentionCore || l.component == Component::kVision) &&
                            l.kind != LayerKind::kConv2d && l.kind != LayerKind::kPool,
                  .saved_begin = static_cast<uint32_t>(m.saved.size()),
                  .params_begin = static_cast<uint32_t>(m.params.size()),
                  .backward_scratch = l.backward_scratch};
    if (l.weights_of) node.shares_weight_of = static_cast<uint32_t>(*l.weights_of);
    const Layer& weights = l.weights_of ? graph.layers[*l.weights_of] : l;
    const bool split_weights = std::any_of(weights.param_tensors.begin(), weights.param_tensors.end(),
                                           [](const ParamTensor& t) { return t.tp_sharded && t.shape.size() >= 2; });
    if (l.tp_split) {
      node.tp_output = StepNode::TpOutput::kSplit;
      node.output_tp_max_shards = l.tp_max_shards;
    } else if (!l.gemms.empty() && split_weights && !RowParallel(l)) {
      node.tp_output = StepNode::TpOutput::kByWeights;  // a column-parallel linear, the vocabulary-parallel head
    }
    for (const ParamTensor& t : l.param_tensors) {
      // Autocast casts the weights of GEMMs (an embedding lookup is no autocast op).
      if (t.shape.size() >= 2 && !l.gemms.empty()) {
        node.weight_elements = CheckedAdd(node.weight_elements, Product(t.shape), "weights");
      }
      m.params.push_back({t.shape, Product(t.shape), t.tp_sharded, l.trainable, l.block_type, after,
                          l.block_type >= 0 && t.shape.size() >= 2, false, t.tp_max_shards, l.component,
                          l.n_experts > 0});
    }
    if (l.weights_of) {
      const Layer& owner = graph.layers[*l.weights_of];
      const ParamTensor& w = owner.param_tensors.front();
      m.params.push_back({w.shape, Product(w.shape), w.tp_sharded, owner.trainable, -1, true, false, true,
                          w.tp_max_shards, owner.component, false});
    }
    const bool weight_trains = l.weights_of ? graph.layers[*l.weights_of].trainable : l.trainable;
    for (const SavedTensor& t : l.saved) {
      if (t.dw_only && !weight_trains) continue;
      if (t.id == kInputTensor || !seen.insert(t.id).second) continue;
      // A block's first saved tensor is its input: what full recomputation keeps.
      const bool checkpoint = l.block_type >= 0 && types_with_checkpoint.insert(l.block_type).second;
      m.saved.push_back(
          {t.elements, t.cls, t.tp_sharded, t.selective, l.block_type, after, checkpoint, t.tp_max_shards});
    }
    for (const SavedTensor& t : l.op_kept) {
      m.saved.push_back({.elements = t.elements,
                         .cls = t.cls,
                         .tp_sharded = t.tp_sharded,
                         .block_type = l.block_type,
                         .tp_max_shards = t.tp_max_shards,
                         .op_kept = true,
                         .reduce_scatter = t.reduce_scatter});
    }
    node.saved_end = static_cast<uint32_t>(m.saved.size());
    node.params_end = static_cast<uint32_t>(m.params.size());
    if (l.weights_of) {
      const ParamTensor& w = graph.layers[*l.weights_of].param_tensors.front();
      node.weight_elements = CheckedAdd(node.weight_elements, Product(w.shape), "weights");
    }
    m.nodes.push_back(std::move(node));
    if (l.kind == LayerKind::kAttentionScores && l.kv_elements_per_token > 0) {
      m.kv.push_back({l.kv_elements_per_token, l.kv_tp_max_shards, l.attention, l.attention_span, l.block_type});
    }
    if (l.state_elements_per_sequence > 0) {
      m.states.push_back({l.state_elements_per_sequence, l.block_type});
    }
    if (l.component == Component::kLmHead) m.vocab = l.shape.back();
  }
  return m;
}

uint64_t DeviceOutput(const MemoryModel& m, const StepNode& n, uint64_t tp, bool sp) {
  switch (n.tp_output) {
    case StepNode::TpOutput::kSplit:
      return CeilDiv(n.output, TpShards(true, n.output_tp_max_shards, tp));
    case StepNode::TpOutput::kByWeights: {
      // Each weight matrix's output columns split as the matrix does; the matrices share the input.
      u128 total = 0, device = 0;
      for (uint32_t k = n.params_begin; k < n.params_end; ++k) {
        const ParamEntry& p = m.params[k];
        if (p.shape.size() < 2) continue;
        total += p.elements;
        device += DeviceElements(p, tp);
      }
      if (total == 0) return n.output;
      return static_cast<uint64_t>((static_cast<u128>(n.output) * device + total - 1) / total);
    }
    case StepNode::TpOutput::kWhole:
      break;
  }
  return sp ? CeilDiv(n.output, tp) : n.output;
}

uint64_t LargestDeviceOutput(const MemoryModel& m, uint64_t tp, bool sp, bool with_scores) {
  uint64_t largest = 0;
  for (const StepNode& n : m.nodes) {
    if (n.component == Component::kLmHead || n.component == Component::kLoss) continue;
    if (n.scores && !with_scores) continue;
    largest = std::max(largest, DeviceOutput(m, n, tp, sp));
  }
  return largest;
}

}  // namespace tally
