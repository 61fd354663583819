#include "estimate/model_estimate.h"

#include "util/checked_math.h"

namespace tally {

ModelEstimate EstimateModel(Evaluation& evaluation, const Settings& settings) {
  ModelEstimate e;
  e.spec = &evaluation.spec();
  e.settings = &settings;
  e.summary = evaluation.Summary(settings);
  e.flops = FlopTotalsOf(*e.summary, settings);
  return e;
}

std::optional<KaplanApprox> Approximations(const ModelEstimate& e) {
  // Kaplan's per-token rules assume one stack over one sequence: not for an encoder–decoder.
  if (!e.transformer() || e.graph().target_seq > 0) return std::nullopt;
  const TransformerSpec& t = e.spec->transformer;
  const ParamCounts& p = e.summary->params;
  const uint64_t seq = e.graph().seq;
  KaplanApprox a;
  // With experts, N is what a token uses: the experts it is not routed to cost it nothing.
  a.n = p.non_embedding - (p.total - p.active);
  a.tokens = CheckedMul(e.settings->batch, seq, "the tokens");
  const std::string what = "the 6·N·D approximation";
  a.six_nd = CheckedProduct({6, a.n, a.tokens}, what);
  const uint64_t attn = CheckedProduct({2, t.n_layers, seq, t.n_heads, t.head_dim}, what);
  a.kaplan_forward = CheckedMul(CheckedAdd(CheckedMul(2, a.n, what), attn, what), a.tokens, what);
  auto ratio = [](uint64_t exact, uint64_t approx) {
    return approx == 0 ? 0.0 : static_cast<double>(exact) / static_cast<double>(approx);
  };
  const FlopCounts& f = e.flops.counts;
  a.six_nd_ratio = ratio(f.forward + f.backward, a.six_nd);
  a.kaplan_ratio = ratio(f.forward, a.kaplan_forward);
  return a;
}

}  // namespace tally
