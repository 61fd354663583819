#include "graph/op_checkpoint.h"

#include <algorithm>
#include <vector>

#include "util/checked_math.h"

namespace tally {
namespace {

// One module of a linear node: its output width, its FLOPs' weight (k x n per row), whether it
// makes an aten.mm (a module with a bias makes aten.addmm: F.linear's _flatten_nd_linear, GPT-2's
// Conv1D), and the ranks its output splits over at most (K and V heads).
struct Module {
  uint64_t width = 0;
  double work = 0;
  bool mm = true;
  uint64_t tp_max_shards = 0;
};

std::vector<Module> Modules(const Layer& l) {
  std::vector<Module> modules;
  const auto vectors = static_cast<size_t>(std::count_if(l.param_tensors.begin(), l.param_tensors.end(),
                                                         [](const ParamTensor& t) { return t.shape.size() < 2; }));
  const Gemm& g = l.gemms.front();
  if (l.module_widths.empty()) {
    modules.push_back({g.n, static_cast<double>(g.k) * static_cast<double>(g.n), vectors == 0, l.tp_max_shards});
    return modules;
  }
  // Modules in the order of the node's weight matrices (q, k, v), their biases after them: every
  // module's, none, or all but k's (Whisper's k_proj has none: graph/build_attention.cc).
  const size_t n = l.module_widths.size();
  size_t matrix = 0;
  for (size_t i = 0; i < n; ++i) {
    while (matrix < l.param_tensors.size() && l.param_tensors[matrix].shape.size() < 2) ++matrix;
    const uint64_t shards = matrix < l.param_tensors.size() ? l.param_tensors[matrix].tp_max_shards : 0;
    ++matrix;
    const bool biased = vectors == 0 ? false : vectors == n - 1 && n == 3 ? i != 1 : true;
    const uint64_t width = l.module_widths[i];
    modules.push_back({width, static_cast<double>(g.k) * static_cast<double>(width), !biased, shards});
  }
  return modules;
}

}  // namespace

void MarkOpCheckpoint(LayerGraph& graph, bool flash) {
  uint64_t mm = 0;         // aten.mm calls so far in the block
  bool last_kept = false;  // whether the last one's output was kept
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
    // A routed expert runs in a grouped GEMM (torch._grouped_mm), not on the list: it reruns.
    if (l.kind != LayerKind::kLinear || l.gemms.empty() || l.n_experts > 0 || l.component == Component::kLora) {
      continue;
    }
    // A column-parallel linear writes its share of the output columns. A row-parallel one writes
    // the whole output on every rank (a partial sum), then under sequence parallelism a
    // reduce-scatter, on the list too, splits it over the sequence (torchtitan's rowwise_parallel
    // with output_layouts Shard(1)).
    const bool row = !l.saved.empty() && l.saved[0].tp_sharded;
    const bool column = !row && std::any_of(l.param_tensors.begin(), l.param_tensors.end(),
                                            [](const ParamTensor& t) { return t.tp_sharded && t.shape.size() >= 2; });
    const Gemm& g = l.gemms.front();
    if (l.fused_with_previous) {
      // Part of the call before (gate_up_proj's up half): kept or rerun with it.
      l.op_rerun = last_kept ? 0 : 1;
      if (last_kept) {
        l.op_kept.push_back({.id = l.path + ":mm" + std::to_string(mm),
                             .elements = CheckedProduct({g.m, g.n, g.count}, "the outputs --recompute op keeps"),
                             .tp_sharded = column,
                             .tp_max_shards = l.tp_max_shards});
      }
      continue;
    }
    double all = 0, rerun = 0;
    for (const Module& m : Modules(l)) {
      all += m.work;
      last_kept = m.mm && ++mm % 2 == 1;
      if (!last_kept) {
        rerun += m.work;
        continue;
      }
      l.op_kept.push_back({.id = l.path + ":mm" + std::to_string(mm),
                           .elements = CheckedProduct({g.m, m.width, g.count}, "the outputs --recompute op keeps"),
                           .tp_sharded = column || row,
                           .tp_max_shards = row ? 1 : m.tp_max_shards});
    }
    if (row) {
      l.op_kept.push_back({.id = l.path + ":reduce_scatter",
                           .elements = CheckedProduct({g.m, g.n, g.count}, "the outputs --recompute op keeps"),
                           .reduce_scatter = true});
    }
    l.op_rerun = all > 0 ? rerun / all : 1;
  }
}

}  // namespace tally
