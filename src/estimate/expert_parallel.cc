#include "estimate/expert_parallel.h"

#include <algorithm>

#include "estimate/context_parallel.h"
#include "estimate/roofline.h"
#include "util/checked_math.h"
#include "util/dtype.h"
#include "util/error.h"

namespace tally {
namespace {

bool HasMoeBlocks(const ModelSpec& spec) {
  if (spec.family != Family::kTransformer) return false;
  const TransformerSpec& t = spec.transformer;
  if (t.n_experts == 0) return false;
  return t.layer_specs.empty() ||
         std::any_of(t.layer_specs.begin(), t.layer_specs.end(), [](const LayerSpec& l) { return l.moe; });
}

}  // namespace

bool RoutedDownProjection(const Layer& l) { return l.n_experts > 0 && RowParallel(l); }

void CheckExpertParallel(const ModelSpec& spec, const Settings& s) {
  if (s.ep == 1) return;
  if (!HasMoeBlocks(spec)) {
    throw InputError("--ep: '" + spec.name + "' has no mixture-of-experts blocks to split over " +
                     std::to_string(s.ep) + " expert-parallel ranks");
  }
  const uint64_t dp = s.dp();
  if (dp % s.ep != 0) {
    throw InputError("--ep: " + std::to_string(s.ep) +
                     " must divide the data-parallel ranks it is carved from; --gpus " + std::to_string(s.gpus) +
                     " gives dp = gpus / (tp x pp x cp) = " + std::to_string(dp));
  }
  const uint64_t experts = spec.transformer.n_experts;
  if (experts % s.ep != 0) {
    throw InputError("--ep: " + std::to_string(s.ep) + " does not divide the " + std::to_string(experts) +
                     " routed experts of '" + spec.name + "'");
  }
}

uint64_t ExpertDataParallel(const Settings& s) {
  // Megatron-Core reduces expert gradients over the data- and context-parallel ranks that hold the same
  // experts: dp·cp / ep (its data-modulo-expert-parallel group with context parallelism).
  const uint64_t dp = s.dp();
  // Every path to a ledger passes CheckExpertParallel first; this guards the ones that change --gpus.
  if (dp % s.ep != 0) {
    throw InputError("--ep: " + std::to_string(s.ep) + " does not divide the " + std::to_string(dp) +
                     " data-parallel ranks of " + std::to_string(s.gpus) + " devices");
  }
  return GradientRanks(s) / s.ep;
}

const ParamEntry& ExpertShare(const ParamEntry& t, uint64_t ep, std::optional<ParamEntry>& local) {
  if (ep == 1 || !t.expert) return t;
  local = t;
  local->shape.front() /= ep;  // [E, ...]: E / ep experts (CheckExpertParallel: ep divides E)
  local->elements /= ep;
  return *local;
}

uint64_t ZeroShare(uint64_t total, uint64_t expert, const Settings& s) {
  if (s.ep == 1) return CeilDiv(total, GradientRanks(s));
  return CheckedAdd(CeilDiv(total - expert, GradientRanks(s)), CeilDiv(expert, ExpertDataParallel(s)),
                    "the memory ledger");
}

DeviceParams TrainableParamsPerDevice(const LayerGraph& g, uint64_t trainable, const Settings& s) {
  const double tp_pp = static_cast<double>(s.tp) * static_cast<double>(s.pp);
  if (s.ep == 1) return {static_cast<double>(trainable) / tp_pp, 0};
  double expert = 0;
  for (const Layer& l : g.layers) {
    if (l.n_experts > 0 && l.trainable) expert += static_cast<double>(l.params) * static_cast<double>(l.repeat);
  }
  return {(static_cast<double>(trainable) - expert) / tp_pp, expert / (tp_pp * static_cast<double>(s.ep))};
}

double ExpertAllToAllsPerBlock(const Settings& s) { return s.recompute == Recompute::kFull ? 6 : 4; }

double ExpertAllToAllSeconds(const LayerGraph& g, const Settings& s, double bandwidth) {
  if (s.ep == 1) return 0;
  const double ep = static_cast<double>(s.ep);
  // Under sequence parallelism each tensor-parallel rank holds 1 / tp of the tokens and exchanges
  // those; without it every rank of the group holds (and exchanges) them all. Under --cp a rank holds
  // s / cp of the graph's tokens.
  const double tokens_share = (s.sp ? static_cast<double>(s.tp) : 1) * static_cast<double>(s.cp);
  double bytes = 0;
  for (const Layer& l : g.layers) {
    if (RoutedDownProjection(l)) bytes += ShapeElements(l.shape) * static_cast<double>(l.repeat);
  }
  bytes *= BytesPerElement(s.dtypes.activation) / tokens_share;
  return ExpertAllToAllsPerBlock(s) * bytes * (ep - 1) / ep / bandwidth;
}

}  // namespace tally
