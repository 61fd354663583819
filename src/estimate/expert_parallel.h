// Expert parallelism (--ep) and expert tensor parallelism (--etp): Megatron-Core's "MoE parallel
// folding" (Liu et al. 2025, "MoE Parallel Folding", arXiv 2504.14960; Megatron-Core MoE docs,
// --expert-model-parallel-size and --expert-tensor-parallel-size). The mixture-of-experts layers get
// their own grid over the devices of a pipeline stage, etp x ep x edp = tp x cp x dp: a device holds
// E / ep routed experts of every MoE block, each split over etp ranks (default --tp, Megatron-Core's
// default, which is the older convention of ep ranks carved from dp), and the experts' data-parallel
// group is the edp = tp · cp · dp / (ep · etp) ranks that hold the same expert shard. The ep · etp
// ranks of one expert group are consecutive (Megatron-Core orders the expert grid etp, ep, edp, pp),
// so with etp < tp an expert group spans tensor-parallel ranks. Attention, the router, shared
// experts, norms and embeddings keep the dense grid (tp, cp, dp).
#pragma once

#include <cstdint>
#include <optional>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/memory_model.h"
#include "graph/layer_graph.h"

namespace tally {

// Refuses an --ep or --etp the model or the parallelism cannot take (an InputError naming them):
// ep · etp must divide tp · cp · dp, ep the routed experts and etp their width; etp other than tp
// with tp > 1 needs --sp (each tensor-parallel rank then holds its own 1 / tp of the tokens).
void CheckExpertParallel(const ModelSpec& spec, const Settings& s);

// Whether the routed experts have a grid of their own: --ep above 1, or --etp other than --tp.
inline bool ExpertGrid(const Settings& s) { return s.ep > 1 || s.expert_tp() != s.tp; }

// The expert-data-parallel group: the tp · cp · dp / (ep · etp) ranks holding the same expert shard.
uint64_t ExpertDataParallel(const Settings& s);

// The part of a parameter tensor one expert-parallel rank holds: a routed-expert tensor [E, ...]
// keeps E / ep experts; anything else is whole. Returns `t` itself, or `local` set to the share.
const ParamEntry& ExpertShare(const ParamEntry& t, uint64_t ep, std::optional<ParamEntry>& local);

// The tensor-parallel degree a parameter tensor is split by: etp for a routed expert's, else tp.
inline uint64_t TensorParallelOf(bool expert, uint64_t tp, uint64_t etp) { return expert ? etp : tp; }

// ZeRO's partition of one category of model states holding `expert` bytes of routed experts in
// `total`: the experts' part over the expert-data-parallel ranks that hold them and the rest over
// dp · cp (each rounded up); without --ep or --etp the whole over dp · cp.
uint64_t ZeroShare(uint64_t total, uint64_t expert, const Settings& s);

// A device's trainable parameters for the step's data-parallel and optimizer terms: the routed
// experts' / (etp · pp · ep), the rest / (tp · pp) (without --ep or --etp all of them in `dense`).
struct DeviceParams {
  double dense = 0, expert = 0;
};
DeviceParams TrainableParamsPerDevice(const LayerGraph& g, uint64_t trainable, const Settings& s);

// The share of a micro-batch's routed token copies (the graph's tokens · top_k, / cp) that one
// device's experts compute: etp / tp. Balanced routing: the ep · etp ranks of an expert group hold
// ep · etp · tokens / (tp · cp) distinct tokens (each rank its 1 / tp under sequence parallelism, or
// with etp = tp the tensor-parallel group's tokens whole), whose tokens · top_k copies go to E
// experts; a device computes its E / ep experts' copies, gathered over its etp ranks.
double ExpertRowShare(const Settings& s);

// One micro-batch's dispatch-and-combine all-to-alls on one device, whole step's layers (repeats
// counted): per MoE block, a dispatch and a combine in the forward and again in the backward, and
// the forward's two again under a full recompute; each moves the block's routed token copies,
// tokens · top_k · hidden · activation bytes (tokens / tp under --sp), an equal share to each of the
// ep ranks of the expert group (the dispatch and combine AllToAll of Lepikhin et al. 2020, GShard,
// and of Rajbhandari et al. 2022, DeepSpeed-MoE). The group is etp · ep consecutive devices, its ep
// ranks etp apart: min(ep, gpus_per_node / etp) of them share a node. The shares for the peers in
// the node cross NVLink and those for the other nodes the NIC, both at once (NCCL's all-to-all
// posts every peer's send together), so an all-to-all takes the longer of the two. DeepEP's
// dispatcher (Megatron-Core's flex dispatcher, `--moe-flex-dispatcher-backend deepep`: "removes
// redundant tokens during cross-node communication"; DeepSeek-V3 report §3.2.2) sends a token across
// the NIC once to each other node holding any of its top_k experts and forwards it over NVLink there:
// with balanced routing (top_k of E experts, E / N on each of the group's N nodes) each token reaches
// (N - 1)(1 - C(E - E/N, top_k) / C(E, top_k)) other nodes. 0 when ep = 1.
struct ExpertLinks {
  double intra_bandwidth = 0;  // bytes/s per direction per device, inside a node
  double inter_bandwidth = 0;  // across nodes
  double gpus_per_node = 8;
  EpDispatch dispatch = EpDispatch::kAllToAll;
};

// DeepEP's other nodes per token: balanced routing of `top_k` of `experts` spread evenly over
// `nodes` nodes.
double RemoteNodesPerToken(double experts, double top_k, double nodes);
double ExpertAllToAllSeconds(const LayerGraph& g, const Settings& s, const ExpertLinks& links);

// A routed expert's second linear (down): its output [b, s, top_k, hidden] is what the combine
// all-to-all returns, and as many elements as the dispatch sent (its input's copies at hidden).
bool RoutedDownProjection(const Layer& l);

// The most routed token copies an expert-parallel rank can receive over the mean: its E / ep
// experts take at most min(top_k, E / ep) copies of each token where the mean is top_k / ep, so
// ep · min(top_k, E / ep) / top_k (every token routed to that rank). 1 without --ep.
double MostMoeImbalance(const ModelSpec& spec, const Settings& s);

// The all-to-alls per MoE block and micro-batch: 4, and 2 more in each recomputed one (6 under
// --recompute full; with --recompute-layers the MoE blocks' mean).
double ExpertAllToAllsPerBlock(const LayerGraph& g, const Settings& s);

}  // namespace tally
