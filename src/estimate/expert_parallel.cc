#include "estimate/expert_parallel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "estimate/context_parallel.h"
#include "estimate/flops.h"
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
  if (s.ep == 1 && s.etp == 0) return;
  const std::string flag = s.etp == 0 ? "--ep" : s.ep == 1 ? "--etp" : "--ep/--etp";
  if (!HasMoeBlocks(spec)) {
    throw InputError(flag + ": '" + spec.name + "' has no mixture-of-experts blocks to split over " +
                     (s.etp == 0 ? std::to_string(s.ep) + " expert-parallel ranks"
                                 : "an expert grid of ep x etp = " + std::to_string(s.ep) + " x " +
                                       std::to_string(s.etp) + " ranks"));
  }
  const uint64_t etp = s.expert_tp();
  // The expert grid etp x ep x edp covers the tp x cp x dp devices of a pipeline stage (Megatron-Core's
  // expert RankGenerator; Liu et al. 2025, §3): ep · etp must divide them.
  const uint64_t ranks = s.gpus / s.pp, group = CheckedMul(s.ep, etp, "--ep x --etp");
  if (ranks % group != 0) {
    throw InputError(flag + ": ep x etp = " + std::to_string(s.ep) + " x " + std::to_string(etp) + " = " +
                     std::to_string(group) + " must divide the " + std::to_string(ranks) +
                     " devices of a pipeline stage (tp x cp x dp = " + std::to_string(s.tp) + " x " +
                     std::to_string(s.cp) + " x " + std::to_string(s.dp()) + ")" +
                     (s.etp == 0 ? "; --etp defaults to --tp" : ""));
  }
  const uint64_t experts = spec.transformer.n_experts;
  if (experts % s.ep != 0) {
    throw InputError("--ep: " + std::to_string(s.ep) + " does not divide the " + std::to_string(experts) +
                     " routed experts of '" + spec.name + "'");
  }
  const TransformerSpec& t = spec.transformer;
  const uint64_t width = t.moe_d_ff == 0 ? t.d_ff : t.moe_d_ff;
  if (s.etp != 0 && width % etp != 0) {
    throw InputError("--etp: " + std::to_string(etp) + " does not divide the routed experts' width " +
                     std::to_string(width) + " of '" + spec.name + "'");
  }
  // With etp other than tp an expert group takes each tensor-parallel rank's own tokens, which
  // sequence parallelism gives (Megatron-Core requires --sequence-parallel for MoE with tp > 1).
  if (etp != s.tp && s.tp > 1 && !s.sp) {
    throw InputError("--etp: " + std::to_string(etp) + " differs from --tp " + std::to_string(s.tp) +
                     ", which needs --sp: without sequence parallelism every tensor-parallel rank holds the same "
                     "tokens");
  }
}

uint64_t ExpertDataParallel(const Settings& s) {
  // Megatron-Core reduces expert gradients over the ranks of the expert grid that hold the same
  // expert shard: tp · cp · dp / (ep · etp); with etp = tp, dp · cp / ep (its data-modulo-expert-
  // parallel group with context parallelism).
  const uint64_t ranks = CheckedMul(GradientRanks(s), s.tp, "the expert-data-parallel group");
  const uint64_t group = CheckedMul(s.ep, s.expert_tp(), "--ep x --etp");
  // Every path to a ledger passes CheckExpertParallel first; this guards the ones that change --gpus.
  if (ranks % group != 0) {
    throw InputError("--ep: ep x etp = " + std::to_string(group) + " does not divide the " + std::to_string(ranks) +
                     " devices of a pipeline stage of " + std::to_string(s.gpus) + " devices");
  }
  return ranks / group;
}

const ParamEntry& ExpertShare(const ParamEntry& t, uint64_t ep, std::optional<ParamEntry>& local) {
  if (ep == 1 || !t.expert) return t;
  local = t;
  local->shape.front() /= ep;  // [E, ...]: E / ep experts (CheckExpertParallel: ep divides E)
  local->elements /= ep;
  return *local;
}

uint64_t ZeroShare(uint64_t total, uint64_t expert, const Settings& s) {
  if (!ExpertGrid(s)) return CeilDiv(total, GradientRanks(s));
  return CheckedAdd(CeilDiv(total - expert, GradientRanks(s)), CeilDiv(expert, ExpertDataParallel(s)),
                    "the memory ledger");
}

DeviceParams TrainableParamsPerDevice(const LayerGraph& g, uint64_t trainable, const Settings& s) {
  const double tp_pp = static_cast<double>(s.tp) * static_cast<double>(s.pp);
  if (!ExpertGrid(s)) return {static_cast<double>(trainable) / tp_pp, 0};
  double expert = 0;
  for (const Layer& l : g.layers) {
    if (l.n_experts > 0 && l.trainable) expert += static_cast<double>(l.params) * static_cast<double>(l.repeat);
  }
  const double etp_pp = static_cast<double>(s.expert_tp()) * static_cast<double>(s.pp);
  return {(static_cast<double>(trainable) - expert) / tp_pp, expert / (etp_pp * static_cast<double>(s.ep))};
}

double ExpertRowShare(const Settings& s) { return static_cast<double>(s.expert_tp()) / static_cast<double>(s.tp); }

double MostMoeImbalance(const ModelSpec& spec, const Settings& s) {
  const TransformerSpec& t = spec.transformer;
  if (s.ep <= 1 || t.n_experts == 0 || t.top_k == 0) return 1;
  const double ep = static_cast<double>(s.ep), top_k = static_cast<double>(t.top_k);
  return ep * std::min(top_k, static_cast<double>(t.n_experts) / ep) / top_k;
}

double ExpertAllToAllsPerBlock(const LayerGraph& g, const Settings& s) {
  const RecomputeRule rerun(g, s.recompute, s.pp, s.recompute_layers);
  double blocks = 0, reruns = 0;
  for (const Layer& l : g.layers) {
    if (!RoutedDownProjection(l)) continue;
    blocks += static_cast<double>(l.repeat);
    reruns += rerun.BusiestStageReruns(l);
  }
  return 4 + (blocks > 0 ? 2 * reruns / blocks : 0);
}

double ExpertAllToAllSeconds(const LayerGraph& g, const Settings& s, const ExpertLinks& links) {
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
  const double in_node = std::clamp(std::floor(links.gpus_per_node / static_cast<double>(s.expert_tp())), 1.0, ep);
  // DeepEP: the bytes that cross the NIC, one copy of a token per other node it reaches.
  double deduplicated = 0;
  for (const Layer& l : g.layers) {
    if (!RoutedDownProjection(l) || l.shape.size() < 2) continue;
    const double top_k = static_cast<double>(l.shape[l.shape.size() - 2]);
    const double nodes = std::ceil(ep / in_node);
    deduplicated += ShapeElements(l.shape) / top_k *
                    RemoteNodesPerToken(static_cast<double>(l.n_experts), top_k, nodes) * static_cast<double>(l.repeat);
  }
  const double scale = BytesPerElement(s.dtypes.activation) / tokens_share;
  bytes *= scale;
  deduplicated *= scale;
  const double nvlink = bytes * (in_node - 1) / ep / links.intra_bandwidth;
  const double crossing = links.dispatch == EpDispatch::kDeepEp ? deduplicated : bytes * (ep - in_node) / ep;
  const double network = in_node < ep ? crossing / links.inter_bandwidth : 0;
  return ExpertAllToAllsPerBlock(g, s) * std::max(nvlink, network);
}

double RemoteNodesPerToken(double experts, double top_k, double nodes) {
  if (nodes <= 1) return 0;
  // The chance a node holds none of the token's top_k experts: C(E - E/N, k) / C(E, k).
  const double elsewhere = experts - experts / nodes;
  double none = 1;
  for (double i = 0; i < top_k; ++i) none *= std::max(0.0, elsewhere - i) / (experts - i);
  return (nodes - 1) * (1 - none);
}

}  // namespace tally
