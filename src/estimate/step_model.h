// A training step's time from its parts: compute (the graph's GEMMs at a shape-aware efficiency,
// the other ops at memory bandwidth), exposed communication (tensor-, pipeline- and data-parallel
// collectives over intra- and inter-node links) and the pipeline bubble.
#pragma once

#include <cstdint>

#include "config/hardware.h"
#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/context_parallel.h"
#include "estimate/defaults.h"
#include "estimate/offload.h"
#include "graph/layer_graph.h"

namespace tally {

// The share of the NICs' line rate NCCL's collectives reach across nodes: nccl-tests on 4 nodes of
// 8 H100 SXM with 8 x 400 Gb/s InfiniBand each (NCCL 2.24.3) measured 330.93 GB/s of all-reduce
// bus bandwidth and 323.53 GB/s of all-gather, of the 8 x 50 GB/s = 400 a node's NICs carry
// (github.com/aigatech/vpbenchmarking, README, "NCCL Communication - Multi-Node"): 0.827.
inline constexpr double kNetworkCollectiveShare = 330.93 / 400;

struct StepOptions {
  uint64_t gpus_per_node = 8;
  uint64_t vp = 1;                    // virtual pipeline stages per device (interleaved 1F1B)
  Kernels kernels = Kernels::kEager;  // --kernels: eager PyTorch or fused (estimate/kernel_costs.h)
  PipelineSchedule schedule = PipelineSchedule::k1f1b;
  // --tp-overlap: tensor-parallel collectives split into chunks run under the linears' GEMMs
  // (Megatron-LM's --tp-comm-overlap, Transformer Engine's userbuffers).
  bool tp_overlap = false;
  // Data-parallel reductions and ZeRO-3's gathers run under the backward and forward, as PyTorch
  // DDP and FSDP run them by default (Megatron-LM with --overlap-grad-reduce and
  // --overlap-param-gather); false (--no-dp-overlap): after them, exposed whole.
  bool dp_overlap = true;
  // --ep-overlap: the expert all-to-alls of one micro-batch run under the compute of another in
  // flight (Megatron-Core's --overlap-moe-expert-parallel-comm; DeepSeek-V3's DualPipe, §3.2.1).
  bool ep_overlap = false;
  EpDispatch ep_dispatch = EpDispatch::kAllToAll;  // --ep-dispatch (estimate/expert_parallel.h)
  // --dp-bucket: the data-parallel buckets, each one collective with its latency (config/settings.h,
  // DpBucket); larger ones keep rings over many nodes bandwidth-bound.
  DpBucket dp_bucket = DpBucket::kDdp;
  uint64_t dp_bucket_params = 0;  // --dp-bucket N (DpBucket::kParams)
  // --overlap-param-gather: ZeRO-1/2's all-gather of the updated weights runs under the next step's
  // first forward (Megatron-LM's flag of that name; Megatron-Bridge sets it wherever dp > 1); else
  // after the update, exposed, as DeepSpeed gathers "at the end of each step".
  bool param_gather_overlap = false;
  // --moe-imbalance: the routed token copies the busiest expert-parallel rank receives over the mean
  // (max / mean load; 1, balanced routing). Each MoE layer's combine waits for that rank, so its
  // grouped GEMMs, permutation and all-to-all set the layer's pace. No effect without --ep.
  double moe_imbalance = 1;
  Fp8Recipe fp8_recipe = Fp8Recipe::kTensorwise;  // --fp8-recipe: what --precision fp8's casts cost
  // The GEMMs slow at the board's power limit where it was measured (estimate/power_limit.h); false
  // (--no-power-limit): at their burst rates.
  bool power_limit = true;
  double mbu = kDefaultMbu;   // memory-bandwidth utilization of the memory-bound ops
  OffloadTraffic offload;     // --offload: the bytes over the host link (estimate/offload.h)
  double host_bandwidth = 0;  // bytes/s per direction of that link (the catalog's host_bandwidth)
  RingExchange ring;          // --cp: the ring's hops per block and micro-batch (estimate/context_parallel.h)
};

struct StepTime {
  double efficiency = 0;    // the catalog's large-GEMM efficiency for the compute dtype
  double optimizer = 0;     // the optimizer update, memory-bound
  double compute = 0;       // the slowest stage's ops over the step, plus the optimizer update
  double memory_bound = 0;  // of which the non-GEMM ops (norms, activations, the loss, casts), GPU time
  double host = 0;          // the host's time to launch the step's kernels (bounds compute from below)
  double kernels = 0;       // kernel launches in the step
  double tp_comm = 0, pp_comm = 0, dp_comm = 0, dp_exposed = 0;
  double tp_exposed = 0;               // tp_comm less what --tp-overlap hides under the tensor-parallel GEMMs
  double ep_comm = 0;                  // --ep: the MoE dispatch and combine all-to-alls
  double ep_exposed = 0;               // ep_comm less what --ep-overlap hides under compute
  double cp_comm = 0, cp_exposed = 0;  // --cp: the ring exchange of keys and values, and its exposed part
  double communication = 0;            // exposed: tp_exposed + pp + dp_exposed + ep_exposed + cp_exposed
  double pipeline_bubble = 0;
  double bubble_fraction = 0;   // 1F1B: (p - 1) / (v·m + p - 1); less under zero-bubble and DualPipe
  double offload_transfer = 0;  // --offload: the host-link transfers of a step, whole
  double offload = 0;           // their exposed part
  double step_seconds = 0;      // compute + communication + pipeline_bubble + offload
  // The board's power limit (estimate/power_limit.h): the GEMMs' and attention kernels' share of the
  // step, how far they have fallen toward their power-limited rates (0 where not priced), and the
  // seconds that adds to the step (its compute, and the pipeline bubble that grows with it).
  double tensor_duty = 0, power_weight = 0, power_limit = 0;
  // The links per device: inside a node what NCCL moves over it (HardwareSpec::
  // IntraNodeCollectiveBandwidth), its share of the link, and whether its all-reduces may take NVLS.
  double intra_bandwidth = 0, inter_bandwidth = 0, intra_share = 1;
  NvlsArch nvls = NvlsArch::kNone;
  // The data-parallel group's link per device (its members' NICs in a node across nodes, else
  // NVLink), whether it crosses nodes, the members of the group in one node, and the gradient
  // bucket's bytes (--dp-bucket); all 0 without a data-parallel group.
  bool dp_network = false;
  double dp_bandwidth = 0, dp_ranks_per_node = 0, dp_bucket_bytes = 0;
};

// One optimizer step of one replica: `g` is the graph at settings.micro_batch (its kernels'
// causality already applied), run grad_accum times. `peak` is the dense FLOP/s of the compute dtype
// and `efficiency` the catalog's gemm_efficiency for it.
StepTime TrainingStep(const LayerGraph& g, const Settings& s, const HardwareSpec& hw, double peak, double efficiency,
                      uint64_t trainable_params, const StepOptions& o);

// The pipeline bubble in stage-times of one micro-batch's forward + backward on a stage, for
// `p` stages (`vp` virtual ones each when interleaved), from a micro-batch's forward `f`, whole
// backward `b` and its weight-gradient part `w` on a stage (estimate/step_model.cc names the sources).
double BubbleStages(PipelineSchedule schedule, double p, double vp, double f, double b, double w);

// The fraction of a GEMM's large-shape rate an (m x k)·(k x n) product keeps from tile quantization.
double TileEfficiency(uint64_t m, uint64_t n);

}  // namespace tally
