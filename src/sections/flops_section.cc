#include <set>

#include "config/names.h"
#include "sections/explain_text.h"
#include "sections/sections.h"

namespace tally {
namespace {

using E = const ModelEstimate&;

const FlopCounts& F(E e) { return e.flops.counts; }

// Components with GEMMs: those the forward FLOPs are split by.
std::vector<KeyEntry> Components(E e) {
  std::set<Component> with_gemms;
  for (const Layer& l : e.graph().layers) {
    if (!l.gemms.empty()) with_gemms.insert(l.component);
  }
  std::vector<KeyEntry> out;
  for (const auto& [component, flops] : ScaleByComponent(e.summary->flops, e.settings->batch)) {
    if (with_gemms.count(component)) out.push_back({ComponentName(component), "", flops});
  }
  return out;
}

std::string Units(E e) { return Grouped(e.flops.units) + (e.transformer() ? " tokens" : " samples"); }

Cell PerToken(E e, uint64_t total) { return When(e.transformer(), PerUnit(total, e.flops.units)); }
Cell PerSample(E e, uint64_t total) { return When(!e.transformer(), PerUnit(total, e.flops.units)); }

// Kaplan's approximations, or nothing where they do not apply.
Cell Approx(E e, uint64_t KaplanApprox::*field) {
  const std::optional<KaplanApprox> a = Approximations(e);
  return When(a.has_value(), a ? (*a).*field : 0);
}
Cell ApproxRatio(E e, double KaplanApprox::*field) {
  const std::optional<KaplanApprox> a = Approximations(e);
  return When(a.has_value(), a ? (*a).*field : 0.0);
}

}  // namespace

Value PerUnit(uint64_t total, uint64_t units) {
  if (total % units == 0) return total / units;
  return static_cast<double>(total) / static_cast<double>(units);
}

const KeyTable<ModelEstimate>& FlopsKeys() {
  static const KeyTable<ModelEstimate> kKeys = {
      {.key = "flops", .label = "FLOPs (matmul: 2·m·n·k per GEMM)"},
      {.key = "flops.forward",
       .label = "forward",
       .unit = Unit::kFlop,
       .value = [](E e) -> Cell { return F(e).forward; },
       .explain =
           [](E e) {
             return "Σ 2·m·n·k over the GEMMs: " +
                    SumText(ScaleByComponent(e.summary->flops, e.settings->batch), F(e).forward) +
                    " (--layers --explain shows each)";
           }},
      {.key = "flops.backward",
       .label = "backward (dX and dW per GEMM)",
       .unit = Unit::kFlop,
       .value = [](E e) -> Cell { return F(e).backward; },
       .explain = [](E) -> std::string {
         return "per GEMM, 2·m·n·k for each operand that needs a gradient (dX unless it is raw input, dW unless "
                "frozen)";
       }},
      {.key = "flops.recompute",
       .unit = Unit::kFlop,
       .value = [](E e) -> Cell { return e.flops.recompute; },
       .explain = [](E) -> std::string {
         return "forward FLOPs run again in backward: the attention core (selective) or every block (full; with "
                "--recompute-layers N the first N of each pipeline stage); never the embedding, head or loss";
       },
       .label_of = [](E e) { return std::string("recomputation (") + RecomputeName(e.settings->recompute) + ")"; }},
      {.key = "flops.step",
       .label = "step (forward + backward + recomputation)",
       .unit = Unit::kFlop,
       .value = [](E e) -> Cell { return e.flops.step; },
       .explain =
           [](E e) {
             return Grouped(F(e).forward) + " + " + Grouped(F(e).backward) + " + " + Grouped(e.flops.recompute) +
                    " = " + Grouped(e.flops.step);
           }},
      {.key = "flops.per_token", .label = "per token"},
      {.key = "flops.per_token.forward",
       .label = "forward",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerToken(e, F(e).forward); },
       .explain = [](E e) { return Grouped(F(e).forward) + " / " + Units(e); }},
      {.key = "flops.per_token.backward",
       .label = "backward",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerToken(e, F(e).backward); }},
      {.key = "flops.per_token.step",
       .label = "step",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerToken(e, e.flops.step); }},
      {.key = "flops.per_sample", .label = "per sample"},
      {.key = "flops.per_sample.forward",
       .label = "forward",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerSample(e, F(e).forward); },
       .explain = [](E e) { return Grouped(F(e).forward) + " / " + Units(e); }},
      {.key = "flops.per_sample.backward",
       .label = "backward",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerSample(e, F(e).backward); }},
      {.key = "flops.per_sample.step",
       .label = "step",
       .unit = Unit::kFlop,
       .value = [](E e) { return PerSample(e, e.flops.step); }},
      {.key = "flops.per_layer.forward",
       .label = "per block, forward",
       .unit = Unit::kFlop,
       .value = [](E e) { return When(e.transformer(), F(e).per_layer_forward); }},
      {.key = "flops.macs.forward",
       .label = "forward in MACs (= FLOPs / 2)",
       .unit = Unit::kMac,
       .value = [](E e) -> Cell { return F(e).forward / 2; },
       .explain = [](E e) { return "one multiply-accumulate is two FLOPs: " + Grouped(F(e).forward) + " / 2"; }},
      {.key = "flops.non_matmul.forward",
       .label = "non-matmul forward (apart)",
       .unit = Unit::kFlop,
       .value = [](E e) -> Cell { return F(e).non_matmul_forward; },
       .explain = [](E) -> std::string {
         return "per element: 1 for activations, adds, softmax, dropout; 5 LayerNorm, 4 RMSNorm, 3 RoPE (DeepSpeed's "
                "profiler)";
       }},
      {.key = "flops.components", .label = "forward by component"},
      {.key = "flops.components", .unit = Unit::kFlop, .entries = Components},
      {.key = "flops.approx", .label = "approximations (N = non-embedding params, D = tokens)"},
      {.key = "flops.approx.six_nd",
       .label = "6·N·D (Kaplan, training step)",
       .unit = Unit::kFlop,
       .value = [](E e) { return Approx(e, &KaplanApprox::six_nd); },
       .explain =
           [](E e) {
             const KaplanApprox a = *Approximations(e);
             return "6 · " + Grouped(a.n) + " · " + Grouped(a.tokens) + " = " + Grouped(a.six_nd) +
                    " (Kaplan et al. 2020, §2.1)";
           }},
      {.key = "flops.approx.six_nd_ratio",
       .label = "exact forward + backward / 6·N·D",
       .unit = Unit::kRatio,
       .value = [](E e) { return ApproxRatio(e, &KaplanApprox::six_nd_ratio); }},
      {.key = "flops.approx.kaplan_forward",
       .label = "(2N + 2·L·s·h)·D (Kaplan, forward)",
       .unit = Unit::kFlop,
       .value = [](E e) { return Approx(e, &KaplanApprox::kaplan_forward); },
       .explain =
           [](E e) {
             const KaplanApprox a = *Approximations(e);
             const TransformerSpec& t = e.spec->transformer;
             return "(2 · " + Grouped(a.n) + " + 2 · " + Grouped(t.n_layers) + " · " + Grouped(e.graph().seq) + " · " +
                    Grouped(t.n_heads * t.head_dim) + ") · " + Grouped(a.tokens) + " = " + Grouped(a.kaplan_forward) +
                    " (Kaplan et al. 2020, Eq. 2.2)";
           }},
      {.key = "flops.approx.kaplan_forward_ratio",
       .label = "exact forward / Kaplan",
       .unit = Unit::kRatio,
       .value = [](E e) { return ApproxRatio(e, &KaplanApprox::kaplan_ratio); }},
  };
  return kKeys;
}

}  // namespace tally
