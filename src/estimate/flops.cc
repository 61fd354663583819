#include "estimate/flops.h"

#include <algorithm>
#include <cmath>

#include "config/settings.h"
#include "estimate/memory_model.h"
#include "util/checked_math.h"

namespace tally {
namespace {

std::string What(const std::string& path) { return "the FLOPs of '" + path + "'"; }

}  // namespace

uint64_t GemmForwardFlops(const Gemm& g, const std::string& path) {
  uint64_t flops = CheckedProduct({2, g.m, g.n, g.k, g.count}, What(path));
  // Causal masking skips half of the s x s products (Megatron-LM's convention; formulas.md).
  return g.halved ? flops / 2 : flops;
}

uint64_t GemmBackwardFlops(const Gemm& g, const std::string& path) {
  uint64_t operands = (g.grad_a ? 1U : 0U) + (g.grad_b ? 1U : 0U);
  return CheckedMul(GemmForwardFlops(g, path), operands, What(path));
}

LayerFlops CountLayerFlops(const Layer& layer) {
  LayerFlops f;
  for (const Gemm& g : layer.gemms) {
    f.forward = CheckedAdd(f.forward, GemmForwardFlops(g, layer.path), What(layer.path));
    f.backward = CheckedAdd(f.backward, GemmBackwardFlops(g, layer.path), What(layer.path));
  }
  f.non_matmul_forward = layer.non_matmul_flops;
  return f;
}

FlopCounts CountFlops(const LayerGraph& graph) {
  FlopCounts c;
  const std::string total = "the model's FLOPs";
  const int first_type = graph.runs.empty() ? -2 : graph.runs.front().type;
  for (const Layer& l : graph.layers) {
    const LayerFlops one = CountLayerFlops(l);
    if (l.block_type == first_type) c.per_layer_forward += one.forward;
    // Every block this node stands for.
    const uint64_t forward = CheckedMul(one.forward, l.repeat, total);
    c.forward = CheckedAdd(c.forward, forward, total);
    c.backward = CheckedAdd(c.backward, CheckedMul(one.backward, l.repeat, total), total);
    c.non_matmul_forward = CheckedAdd(c.non_matmul_forward, CheckedMul(one.non_matmul_forward, l.repeat, total), total);
    c.forward_by_component[l.component] = CheckedAdd(c.forward_by_component[l.component], forward, total);
  }
  // forward + backward must fit too: flops.step is reported.
  CheckedAdd(c.forward, c.backward, total);
  return c;
}

RecomputeRule::RecomputeRule(const LayerGraph& graph, Recompute recompute, uint64_t pp, std::optional<uint64_t> layers)
    : recompute_(recompute) {
  for (const Layer& l : graph.layers) {
    for (const SavedTensor& t : l.saved) stores_scores_ = stores_scores_ || t.selective;
  }
  if (recompute == Recompute::kFull && layers) {
    size_t types = 0;
    for (const BlockRun& r : graph.runs) types = std::max(types, static_cast<size_t>(r.type) + 1);
    rerun_of_type_.resize(types);
    first_stage_rerun_of_type_.resize(types);
    for (size_t t = 0; t < types; ++t) {
      rerun_of_type_[t] = RecomputedBlocks(graph.runs, graph.n_layers, static_cast<int>(t), pp, layers);
      first_stage_rerun_of_type_[t] = RecomputedBlocks(graph.runs, graph.n_layers, static_cast<int>(t), pp, layers, 0);
    }
    if (const uint64_t first = StageFirstBlock(1, graph.n_layers, pp); first > 0) {
      stage_scale_ = static_cast<double>(graph.n_layers) / static_cast<double>(first);
    }
  }
}

double RecomputeRule::BusiestStageReruns(const Layer& l) const {
  if (recompute_ != Recompute::kFull || first_stage_rerun_of_type_.empty() || l.block < 0) {
    return static_cast<double>(Reruns(l));
  }
  const auto type = static_cast<size_t>(l.block_type);
  return type < first_stage_rerun_of_type_.size() ? static_cast<double>(first_stage_rerun_of_type_[type]) * stage_scale_
                                                  : 0;
}

double RecomputeRule::CollectiveReruns(const Layer& l, bool sp) const {
  if (recompute_ != Recompute::kOp) return BusiestStageReruns(l) * RerunShare(l);
  return l.block >= 0 ? static_cast<double>(l.repeat) * (sp ? 0.5 : 1) : 0;
}

uint64_t RecomputeRule::Reruns(const Layer& l) const {
  switch (recompute_) {
    case Recompute::kFull: {
      if (l.block < 0) return 0;
      if (rerun_of_type_.empty()) return l.repeat;
      const auto type = static_cast<size_t>(l.block_type);
      return type < rerun_of_type_.size() ? rerun_of_type_[type] : 0;
    }
    case Recompute::kSelective:
      return stores_scores_ && l.component == Component::kAttentionCore ? l.repeat : 0;
    case Recompute::kOp:
      return l.block >= 0 && l.op_rerun > 0 ? l.repeat : 0;
    case Recompute::kNone:
      return 0;
  }
  return 0;
}

uint64_t RecomputeFlops(const LayerGraph& graph, const RecomputeRule& rule) {
  uint64_t flops = 0;
  for (const Layer& l : graph.layers) {
    if (const uint64_t reruns = rule.Reruns(l); reruns > 0) {
      uint64_t forward = CountLayerFlops(l).forward;
      // Under `op` the rerun modules' share of a linear: 2·m·k·(their widths), whole in a double
      // below 2^53, which the share's rounding cannot move past the nearest integer.
      if (const double share = rule.RerunShare(l); share < 1) {
        forward = static_cast<uint64_t>(std::llround(static_cast<double>(forward) * share));
      }
      flops = CheckedAdd(flops, CheckedMul(forward, reruns, "the recomputation FLOPs"), "the recomputation FLOPs");
    }
  }
  return flops;
}

}  // namespace tally
