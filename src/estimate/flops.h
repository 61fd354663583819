// Matmul FLOPs from the graph's GEMMs (forward and exact backward) and non-matmul FLOPs apart.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "config/settings.h"
#include "graph/layer_graph.h"

namespace tally {

// 2·m·n·k per product (one multiply and one add per multiply-accumulate), halved for causal attention.
uint64_t GemmForwardFlops(const Gemm& g, const std::string& path);
// One GEMM of the forward's size per operand that needs a gradient: dA = dY·Bᵀ, dB = Aᵀ·dY.
uint64_t GemmBackwardFlops(const Gemm& g, const std::string& path);

struct LayerFlops {
  uint64_t forward = 0;
  uint64_t backward = 0;
  uint64_t non_matmul_forward = 0;
};

LayerFlops CountLayerFlops(const Layer& layer);

struct FlopCounts {
  uint64_t forward = 0;
  uint64_t backward = 0;
  uint64_t non_matmul_forward = 0;
  uint64_t per_layer_forward = 0;  // the first transformer block
  std::map<Component, uint64_t> forward_by_component;
};

FlopCounts CountFlops(const LayerGraph& graph);

// Which nodes a backward pass runs forward again, the one rule for FLOPs and time (Korthikanti et
// al. 2022). Full recomputation reruns the blocks' nodes and nothing outside them: Hugging Face's
// gradient checkpointing wraps the decoder layers (GradientCheckpointingLayer) and Megatron-LM's
// the transformer layers (TransformerBlock), so the embedding, head and loss run once; with
// --recompute-layers N only the first N blocks of each of `pp` stages (estimate/memory_model.h).
// Selective recomputation reruns the core attention (QKᵀ, softmax, dropout, AV) where the graph
// stores its scores; under flash attention it stores none, and nothing is rerun. Under `op` each
// block node reruns Layer::op_rerun of its forward (graph/op_checkpoint.h): all of an elementwise
// op, none of flash attention, the modules of a linear the policy did not keep.
class RecomputeRule {
 public:
  RecomputeRule(const LayerGraph& graph, Recompute recompute, uint64_t pp = 1,
                std::optional<uint64_t> layers = std::nullopt);
  // How many of the blocks node `l` stands for (l.repeat) run again: all, some or none.
  uint64_t Reruns(const Layer& l) const;
  // The reruns of the busiest pipeline stage (the first, with ⌈L/pp⌉ blocks), counted over the whole
  // model at that stage's pace: a sum over the graph scaled by ⌈L/pp⌉ / L, as a step prices a
  // stage, gives that stage's reruns. Reruns(l) itself unless --recompute-layers leaves stages of
  // unequal size rerunning unequal shares (10 blocks over 4 stages, 2 each: 2, where 8 x 3/10 = 2.4).
  double BusiestStageReruns(const Layer& l) const;
  // The share of node `l`'s forward each of its rerun blocks runs again: 1, but under `op`
  // Layer::op_rerun (a third of Llama's q/k/v linear: k_proj).
  double RerunShare(const Layer& l) const { return recompute_ == Recompute::kOp ? l.op_rerun : 1; }
  // How many times a row-parallel linear's collective runs again, as BusiestStageReruns x
  // RerunShare: under `op` every block reruns its collective whether the GEMM's output was kept or
  // not, except the reduce-scatter under --sp, which the policy keeps (the all-gather, half of the
  // pair's volume, reruns).
  double CollectiveReruns(const Layer& l, bool sp) const;

 private:
  Recompute recompute_;
  bool stores_scores_ = false;
  std::vector<uint64_t> rerun_of_type_;              // --recompute-layers: the rerun blocks of each distinct block
  std::vector<uint64_t> first_stage_rerun_of_type_;  // and those of the first stage alone
  double stage_scale_ = 1;                           // L / ⌈L/pp⌉
};

// Forward FLOPs run again in backward (hardware FLOPs, not model FLOPs; PaLM App. B): RecomputeRule's nodes.
uint64_t RecomputeFlops(const LayerGraph& graph, const RecomputeRule& rule);

}  // namespace tally
