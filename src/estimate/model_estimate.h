// What every report starts from: the model's graph summary at the settings and the FLOPs of one
// step at the batch, with the rules of thumb (Kaplan's 6·N·D) they are compared against.
#pragma once

#include <memory>
#include <optional>

#include "config/model_spec.h"
#include "estimate/evaluation.h"

namespace tally {

struct ModelEstimate {
  const ModelSpec* spec = nullptr;
  const Settings* settings = nullptr;
  std::shared_ptr<const GraphSummary> summary;  // the graph at batch 1, its counts
  FlopTotals flops;                             // at settings->batch

  const LayerGraph& graph() const { return *summary->graph; }
  bool transformer() const { return summary->family == Family::kTransformer; }
};

// Reads `spec` and `settings` by reference: both must outlive the result.
ModelEstimate EstimateModel(Evaluation& evaluation, const Settings& settings);

// Kaplan et al. 2020, Eq. 2.2 and §2.1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn per token, C ≈ 6N
// per token for training, with N the non-embedding parameters a token uses (a mixture of experts'
// active ones). For one decoder or encoder stack: nullopt for an encoder–decoder or a sequential model.
struct KaplanApprox {
  uint64_t n = 0;               // non-embedding parameters a token uses
  uint64_t tokens = 0;          // batch x seq
  uint64_t six_nd = 0;          // 6·N·D
  uint64_t kaplan_forward = 0;  // (2N + 2·n_layer·n_ctx·d_attn)·D
  double six_nd_ratio = 0;      // exact forward + backward / 6·N·D
  double kaplan_ratio = 0;      // exact forward / Kaplan's forward
};
std::optional<KaplanApprox> Approximations(const ModelEstimate& e);

}  // namespace tally
