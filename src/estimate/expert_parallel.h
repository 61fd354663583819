// Expert parallelism (--ep): each mixture-of-experts block's routed experts split over ep ranks
// carved from the data-parallel ranks, Megatron-Core's convention (Megatron-Core MoE docs,
// "Expert Parallelism"): ep divides dp = gpus / (tp · pp · cp), a device holds E / ep experts of
// every MoE block (each still split by --tp), and the experts' data-parallel group is the
// dp / ep ranks that hold the same experts. Attention, the router, shared experts, norms and
// embeddings stay replicated over the ep ranks and data-parallel over all dp.
#pragma once

#include <cstdint>
#include <optional>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/memory_model.h"
#include "graph/layer_graph.h"

namespace tally {

// Refuses an --ep the model or the parallelism cannot take (an InputError naming --ep): ep must
// divide dp and the routed experts of a model that has MoE blocks.
void CheckExpertParallel(const ModelSpec& spec, const Settings& s);

// The expert-data-parallel group: the dp / ep ranks holding the same experts.
uint64_t ExpertDataParallel(const Settings& s);

// The part of a parameter tensor one expert-parallel rank holds: a routed-expert tensor [E, ...]
// keeps E / ep experts; anything else is whole. Returns `t` itself, or `local` set to the share.
const ParamEntry& ExpertShare(const ParamEntry& t, uint64_t ep, std::optional<ParamEntry>& local);

// ZeRO's partition of one category of model states holding `expert` bytes of routed experts in
// `total`: with --ep the experts' part over the dp / ep ranks that hold them and the rest over dp
// (each rounded up); with ep = 1 the whole over dp.
uint64_t ZeroShare(uint64_t total, uint64_t expert, const Settings& s);

// A device's trainable parameters for the step's data-parallel and optimizer terms: the routed
// experts' / (tp · pp · ep), the rest / (tp · pp) (with ep = 1 all of them in `dense`).
struct DeviceParams {
  double dense = 0, expert = 0;
};
DeviceParams TrainableParamsPerDevice(const LayerGraph& g, uint64_t trainable, const Settings& s);

// One micro-batch's dispatch-and-combine all-to-alls on one device, whole step's layers (repeats
// counted): per MoE block, a dispatch and a combine in the forward and again in the backward, and
// the forward's two again under a full recompute; each moves the block's routed token copies,
// tokens · top_k · hidden · activation bytes (tokens / tp under --sp), of which (ep - 1) / ep
// leave the device (the dispatch and combine AllToAll of Lepikhin et al. 2020, GShard, and of
// Rajbhandari et al. 2022, DeepSpeed-MoE). Seconds at `bandwidth`; 0 when ep = 1.
double ExpertAllToAllSeconds(const LayerGraph& g, const Settings& s, double bandwidth);

// A routed expert's second linear (down): its output [b, s, top_k, hidden] is what the combine
// all-to-all returns, and as many elements as the dispatch sent (its input's copies at hidden).
bool RoutedDownProjection(const Layer& l);

// The all-to-alls per MoE block and micro-batch: 4, or 6 under --recompute full.
double ExpertAllToAllsPerBlock(const Settings& s);

}  // namespace tally
