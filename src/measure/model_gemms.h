// The GEMMs of one training step, read from the LayerGraph: each Gemm's forward product and the
// backward's dX and dW products, honouring grad_a, grad_b and halved exactly as estimate/flops.cc
// counts them, so the FLOPs of the list equal CountFlops(graph).forward + backward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/layer_graph.h"
#include "measure/gemm_shape.h"

namespace tally {

enum class GemmPass { kForward, kGradInput, kGradWeight };
const char* GemmPassName(GemmPass p);  // "forward", "dX", "dW"

struct StepGemm {
  GemmShape shape;
  uint64_t count = 1;   // products of this shape per step
  bool halved = false;  // causal attention: half of each product counts (Megatron-LM's convention)
  GemmPass pass = GemmPass::kForward;
  std::string path;    // the layer it comes from (the first one, once merged)
  std::string passes;  // once merged: "forward,dX"
};

// One entry per (layer, Gemm, pass) in graph order. For Y (m x n) = A (m x k) · B (k x n), layout
// NN: dA = dY·Bᵀ is an (m, k, n) product of layout NT and dB = Aᵀ·dY a (k, n, m) one of layout TN,
// each of the forward's size. (PyTorch's Linear stores W as (n, k): its forward is the NT call, dX
// the NN one, and dW comes out as the (n, k) transpose; the FLOPs are the same.)
std::vector<StepGemm> StepGemms(const LayerGraph& graph);

// Merged by (m, n, k, layout, halved) in order of first appearance, counts summed: what measure times.
std::vector<StepGemm> DistinctGemms(const std::vector<StepGemm>& gemms);

// Σ 2·m·n·k·count, halved where marked (exact; overflow is an InputError).
uint64_t StepFlops(const std::vector<StepGemm>& gemms);
uint64_t GemmFlops(const StepGemm& g);

}  // namespace tally
