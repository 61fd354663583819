#include "measure/model_gemms.h"

#include "util/checked_math.h"

namespace tally {

const char* GemmPassName(GemmPass p) {
  switch (p) {
    case GemmPass::kForward:
      return "forward";
    case GemmPass::kGradInput:
      return "dX";
    case GemmPass::kGradWeight:
      return "dW";
  }
  return "?";
}

std::vector<StepGemm> StepGemms(const LayerGraph& graph) {
  std::vector<StepGemm> out;
  for (const Layer& l : graph.layers) {
    for (const Gemm& g : l.gemms) {
      // A node of a repeated block stands for `repeat` identical products.
      const uint64_t count = CheckedMul(g.count, l.repeat, "the GEMM count of " + l.path);
      auto add = [&](GemmShape shape, GemmPass pass) {
        out.push_back({shape, count, g.halved, pass, l.path, GemmPassName(pass)});
      };
      // The backward reads the forward's stored operands, so dA takes B transposed and dB takes A
      // transposed: the NT and TN calls a framework makes, not copies of the operands.
      add({g.m, g.n, g.k}, GemmPass::kForward);
      if (g.grad_a) add({g.m, g.k, g.n, false, true}, GemmPass::kGradInput);
      if (g.grad_b) add({g.k, g.n, g.m, true, false}, GemmPass::kGradWeight);
    }
  }
  return out;
}

std::vector<StepGemm> DistinctGemms(const std::vector<StepGemm>& gemms) {
  std::vector<StepGemm> out;
  for (const StepGemm& g : gemms) {
    StepGemm* same = nullptr;
    for (StepGemm& d : out) {
      if (d.shape == g.shape && d.halved == g.halved) same = &d;
    }
    if (same == nullptr) {
      out.push_back(g);
      continue;
    }
    same->count = CheckedAdd(same->count, g.count, "the GEMM count of " + g.shape.Text());
    const std::string pass = GemmPassName(g.pass);
    if (("," + same->passes + ",").find("," + pass + ",") == std::string::npos) same->passes += "," + pass;
  }
  return out;
}

uint64_t GemmFlops(const StepGemm& g) {
  const uint64_t flops = CheckedMul(g.shape.Flops(), g.count, "the FLOPs of GEMM " + g.shape.Text());
  // 2·m·n·k·count is even, so halving is exact (estimate/flops.cc halves the same product).
  return g.halved ? flops / 2 : flops;
}

uint64_t StepFlops(const std::vector<StepGemm>& gemms) {
  uint64_t total = 0;
  for (const StepGemm& g : gemms) total = CheckedAdd(total, GemmFlops(g), "the step's matmul FLOPs");
  return total;
}

}  // namespace tally
