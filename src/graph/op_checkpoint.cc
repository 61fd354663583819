#include "graph/op_checkpoint.h"

#include <algorithm>
#include <vector>

#include "util/checked_math.h"

namespace tally {
namespace {

// One aten.mm of a linear node: its output width and its FLOPs' weight (k x n per row).
struct MmCall {
  uint64_t width = 0;
  double work = 0;
  uint64_t tp_max_shards = 0;  // its output split over at most this many ranks (K and V heads)
};

std::vector<MmCall> MmCalls(const Layer& l) {
  std::vector<MmCall> calls;
  if (l.component == Component::kLora) {
    // PEFT's adapter: x·A (r wide), then (x·A)·B.
    const Gemm& a = l.gemms.front();
    const Gemm& b = l.gemms.back();
    calls.push_back({a.n, static_cast<double>(a.k) * static_cast<double>(a.n), 0});
    calls.push_back({b.n, static_cast<double>(b.k) * static_cast<double>(b.n), 0});
    return calls;
  }
  for (const Gemm& g : l.gemms) {
    if (l.module_widths.empty()) {
      calls.push_back({g.n, static_cast<double>(g.k) * static_cast<double>(g.n), l.tp_max_shards});
      continue;
    }
    // Modules in the order of the node's weight matrices (q, k, v).
    size_t matrix = 0;
    for (uint64_t width : l.module_widths) {
      while (matrix < l.param_tensors.size() && l.param_tensors[matrix].shape.size() < 2) ++matrix;
      const uint64_t shards = matrix < l.param_tensors.size() ? l.param_tensors[matrix].tp_max_shards : 0;
      ++matrix;
      calls.push_back({width, static_cast<double>(g.k) * static_cast<double>(width), shards});
    }
  }
  return calls;
}

}  // namespace

void MarkOpCheckpoint(LayerGraph& graph, bool flash) {
  uint64_t mm = 0;  // aten.mm calls so far in the block
  int block = -2;
  for (size_t i = graph.blocks_begin; i < graph.blocks_end; ++i) {
    Layer& l = graph.layers[i];
    if (l.block != block) {
      block = l.block;
      mm = 0;
    }
    l.op_rerun = 1;
    if (l.component == Component::kAttentionCore) {
      if (!flash) continue;
      // SDPA's outputs: O (the context's output) and the fp32 log-sum-exp the softmax node keeps.
      l.op_rerun = 0;
      for (const SavedTensor& t : l.saved) {
        const bool output = l.kind == LayerKind::kAttentionContext && t.id == l.path;
        const bool lse = l.kind == LayerKind::kSoftmax && t.cls == SavedClass::kFp32;
        if (output || lse) l.op_kept.push_back(t);
      }
      continue;
    }
    if (l.kind != LayerKind::kLinear || l.gemms.empty() || l.n_experts > 0) continue;
    // A row-parallel linear reads a split input and writes the whole output; a column-parallel
    // one writes its share of the output columns.
    const bool row = !l.saved.empty() && l.saved[0].tp_sharded;
    const bool column = !row && std::any_of(l.param_tensors.begin(), l.param_tensors.end(),
                                            [](const ParamTensor& t) { return t.tp_sharded && t.shape.size() >= 2; });
    const Gemm& g = l.gemms.front();
    double all = 0, rerun = 0;
    for (const MmCall& call : MmCalls(l)) {
      all += call.work;
      if (++mm % 2 == 0) {
        rerun += call.work;
        continue;
      }
      const uint64_t elements = CheckedProduct({g.m, call.width, g.count}, "the outputs --recompute op keeps");
      l.op_kept.push_back({.id = l.path + ":mm" + std::to_string(mm),
                           .elements = elements,
                           .tp_sharded = column,
                           .tp_max_shards = column ? call.tp_max_shards : 0});
    }
    l.op_rerun = all > 0 ? rerun / all : 1;
  }
}

}  // namespace tally
