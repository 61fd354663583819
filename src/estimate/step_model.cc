#include "estimate/step_model.h"

#include <algorithm>
#include <cmath>

#include "estimate/expert_parallel.h"
#include "estimate/flops.h"
#include "estimate/roofline.h"
#include "util/dtype.h"
#include "util/error.h"

namespace tally {
namespace {

// cuBLAS tiles the output in 128 x 128 blocks (the largest common CUTLASS/cuBLAS tile for 16-bit
// tensor-core GEMMs); a partial tile costs a whole one. NVIDIA, "Matrix Multiplication Background
// User's Guide" (docs.nvidia.com/deeplearning/performance), "Tile Quantization".
constexpr double kTile = 128;

// PyTorch DDP's default gradient bucket (bucket_cap_mb = 25): the last one is reduced after the
// backward ends, so at least its all-reduce is exposed.
constexpr double kBucketBytes = 25.0 * 1024 * 1024;

// Optimizer state tensors per parameter (what the update reads and writes besides the weight).
double OptimizerStates(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kAdam:
    case Optimizer::kAdamw:
    case Optimizer::kAdam8bit:
      return 2;
    default:
      return 1;
  }
}

bool SelectiveDropped(const Layer& l) {
  return std::any_of(l.saved.begin(), l.saved.end(), [](const SavedTensor& t) { return t.selective; });
}

// Ring all-reduce: each device sends and receives 2 (n - 1) / n of the buffer (Patarasuk & Yuan
// 2009); a reduce-scatter or an all-gather is half of it.
double Ring(double n, double bytes, double bandwidth) { return n > 1 ? 2 * (n - 1) / n * bytes / bandwidth : 0; }

}  // namespace

double TileEfficiency(uint64_t m, uint64_t n) {
  const auto q = [](uint64_t d) {
    const double x = static_cast<double>(d);
    return x / (kTile * std::ceil(x / kTile));
  };
  return q(m) * q(n);
}

StepTime TrainingStep(const LayerGraph& g, const Settings& s, const HardwareSpec& hw, double peak, double efficiency,
                      uint64_t trainable_params, const StepOptions& o) {
  StepTime out;
  out.efficiency = efficiency;
  const double act = BytesPerElement(s.dtypes.activation);
  const double bandwidth = hw.memory_bandwidth * o.mbu;
  const double tp = static_cast<double>(s.tp), pp = static_cast<double>(s.pp);
  const double micro = static_cast<double>(s.grad_accum());
  // Context parallelism: each rank holds s/cp of every micro-batch's tokens (their GEMMs and
  // memory-bound ops) and, load-balanced, 1/cp of the attention core's score blocks.
  const double cp = static_cast<double>(s.cp);
  const bool flash = s.attention == Attention::kFlash;
  // A collective inside a node runs over NVLink/xGMI, one spanning nodes over the NIC. Without the
  // catalog's fields, the scale-up interconnect stands in for both.
  out.intra_bandwidth = hw.intra_node_bandwidth > 0 ? hw.intra_node_bandwidth : hw.interconnect_bandwidth;
  out.inter_bandwidth = hw.inter_node_bandwidth > 0 ? hw.inter_node_bandwidth : out.intra_bandwidth;
  const auto link = [&](uint64_t span) {
    const double b = span <= o.gpus_per_node ? out.intra_bandwidth : out.inter_bandwidth;
    if (b <= 0) throw InputError("--hardware: " + hw.name + " gives no interconnect bandwidth for the collectives");
    return b;
  };
  // One GEMM on one device: max(compute at the rolled-off efficiency, its operands at bandwidth).
  // `on_chip`: elements of an operand that never reach memory.
  const auto gemm_time = [&](double flops, double m, double n, double k, double count, double eff, double on_chip) {
    const double rate =
        peak * eff * TileEfficiency(static_cast<uint64_t>(std::ceil(m)), static_cast<uint64_t>(std::ceil(n)));
    return std::max(flops / rate, (m * k + k * n + m * n - on_chip) * count * act / bandwidth);
  };
  // Flash attention keeps the scores S = QK^T and the probabilities P on chip, forward and backward
  // (Dao et al. 2022, §3.1): its GEMMs move only their s x d operands, at the fraction of the peak
  // fused attention kernels reach (the catalog's attention_efficiency, 16-bit; without it the GEMMs').
  const GemmDType compute_dtype = ComputeDtype(s.precision);
  const bool half = compute_dtype == GemmDType::kBf16 || compute_dtype == GemmDType::kFp16;
  const double flash_efficiency = half && hw.attention_efficiency > 0 ? hw.attention_efficiency : efficiency;
  // Per micro-batch: the blocks' nodes, and those before (embedding) and after (head, loss) them.
  enum Part { kPre, kBlocks, kPost };
  double forward_all[3] = {}, backward_all[3] = {}, recompute[3] = {};
  double row_parallel_bytes = 0, hidden = 0;
  double attention_forward = 0, attention_backward = 0;  // the blocks' attention core, for the ring's overlap
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    const int part = i < g.blocks_begin ? kPre : i < g.blocks_end ? kBlocks : kPost;
    const double rep = static_cast<double>(l.repeat);
    // A tied head splits as the embedding it shares does (Megatron's vocabulary-parallel head).
    const double div = TpDivisor(l.weights_of ? g.layers[*l.weights_of] : l, s.tp);
    double fwd = 0, bwd = 0;
    for (const Gemm& gm : l.gemms) {
      double m = static_cast<double>(gm.m), n = static_cast<double>(gm.n), k = static_cast<double>(gm.k);
      const bool core = l.component == Component::kAttentionCore;
      // The s x s operand: the scores GEMM's output (m x n) or the PV GEMM's input (m x k).
      const double on_chip = flash && core ? m * (l.kind == LayerKind::kAttentionScores ? n : k) : 0;
      const double eff = flash && core ? flash_efficiency : efficiency;
      const double count = static_cast<double>(gm.count) / (core ? tp * cp : 1);
      if (!core) (RowParallel(l) ? k : n) /= div;
      if (!core) m /= cp;
      const double f = static_cast<double>(GemmForwardFlops(gm, l.path)) / div / cp;
      fwd += gemm_time(f, m, n, k, count, eff, on_chip);
      if (gm.grad_a) bwd += gemm_time(f, m, k, n, count, eff, on_chip);  // dA = dY·Bᵀ: m x k out
      if (gm.grad_b) bwd += gemm_time(f, k, n, m, count, eff, on_chip);  // dB = Aᵀ·dY: k x n out
      // Flash attention's backward forms the scores again (Dao et al. 2022, §3.1).
      if (flash && l.kind == LayerKind::kAttentionScores) bwd += gemm_time(f, m, n, k, count, eff, on_chip);
    }
    if (l.gemms.empty() && !(flash && l.component == Component::kAttentionCore)) {
      // A memory-bound op reads its input and writes its output; its backward reads the output's
      // gradient and the saved input and writes the input's gradient (twice the forward's bytes).
      // Sequence parallelism splits the ops tensor parallelism leaves replicated.
      const double shard = l.component == Component::kAttentionCore ? tp : div > 1 ? div : s.sp ? tp : 1;
      const double t = 2 * ShapeElements(l.shape) * act / shard / cp / bandwidth;
      fwd += t;
      bwd += 2 * t;
    }
    forward_all[part] += fwd * rep;
    if (part == kBlocks && l.component == Component::kAttentionCore) {
      attention_forward += fwd * rep;
      attention_backward += bwd * rep;
    }
    backward_all[part] += bwd * rep;
    if (s.recompute == Recompute::kFull || (s.recompute == Recompute::kSelective && SelectiveDropped(l))) {
      recompute[part] += fwd * rep;
    }
    if (RowParallel(l)) {
      row_parallel_bytes += ShapeElements(l.shape) * act / cp * rep;
      hidden = ShapeElements(l.shape) * act / cp;
    }
  }
  // The pipeline runs at its slowest stage: ceil(L / pp) blocks, plus the embedding on the first
  // stage or the head and loss on the last, whichever is heavier (without pipelining, all of it).
  const auto total = [&](int part) { return forward_all[part] + backward_all[part] + recompute[part]; };
  const double layers = static_cast<double>(std::max<uint64_t>(g.n_layers, 1));
  const double stage_share = s.pp > 1 ? std::ceil(layers / pp) / layers : 1;
  const double ends = s.pp > 1 ? std::max(total(kPre), total(kPost)) : total(kPre) + total(kPost);
  const double backward_stage = backward_all[kBlocks] * stage_share + backward_all[kPost];
  // The optimizer update reads and writes every local parameter's state once per step (memory-bound):
  // reads the gradient, the weight (its fp32 master under mixed precision) and the states, writes the
  // weight, the master and the states. ZeRO-1 and above update a 1/(dp·cp) share (--ep: the routed
  // experts' 1/(dp·cp/ep) of the 1/ep the device holds).
  const DeviceParams device = TrainableParamsPerDevice(g, trainable_params, s);
  const double local = device.dense / (s.zero >= 1 ? static_cast<double>(GradientRanks(s)) : 1) +
                       device.expert / (s.zero >= 1 ? static_cast<double>(ExpertDataParallel(s)) : 1);
  const double master = s.dtypes.master ? BytesPerElement(*s.dtypes.master) : 0;
  const double states = OptimizerStates(s.optimizer) * BytesPerElement(s.dtypes.state);
  out.optimizer = local *
                  (BytesPerElement(s.dtypes.grad) + 2 * BytesPerElement(s.dtypes.param) + 2 * master + 2 * states) /
                  bandwidth;
  // Offloaded, the update runs on the host's CPUs, which the catalog does not describe: left out.
  if (s.offload != Offload::kNone) out.optimizer = 0;
  out.compute = (total(kBlocks) * stage_share + ends) * micro + out.optimizer;
  // Tensor parallel: an all-reduce after each row-parallel linear in the forward and one of the
  // same size in the backward (Shoeybi et al. 2019, Fig. 4: g and f), again in a full recompute;
  // sequence parallelism replaces each by a reduce-scatter + all-gather of the same volume
  // (Korthikanti et al. 2022, §4.2.2). Not overlapped with compute.
  if (s.tp > 1) {
    const double passes = s.recompute == Recompute::kFull ? 3 : 2;
    out.tp_comm = passes * Ring(tp, row_parallel_bytes, link(s.tp)) * micro * stage_share;
  }
  // Expert parallel: each MoE block's dispatch and combine all-to-alls over the tp·ep ranks
  // (estimate/expert_parallel.h), not overlapped with compute.
  if (s.ep > 1) out.ep_comm = ExpertAllToAllSeconds(g, s, link(s.tp * s.ep)) * micro * stage_share;
  // Pipeline: each micro-batch sends its activation forward and its gradient back across every
  // stage boundary, 1/tp of it per rank with the scatter/gather optimization (Narayanan et al.
  // 2021, §4.1); interleaving crosses vp times as many boundaries.
  if (s.pp > 1) {
    out.pp_comm = 2 * hidden / tp / link(s.tp * s.pp) * micro * static_cast<double>(o.vp);
  }
  // The pipeline bubble of 1F1B: (p - 1) stage-times of idle at each step's ends, divided by the
  // virtual stages when interleaved (Narayanan et al. 2021, §2.2).
  // Context parallel: per block, the ring's hops run under the attention core of the same block
  // (Liu et al. 2023, §3: each hop overlaps the blockwise attention of the chunk in hand), forward,
  // backward and a full recompute's forward; what outlasts it is exposed. The ring stays inside a
  // node while tp · cp devices fit in one (Megatron-Core orders the groups tp, cp, dp, pp).
  if (s.cp > 1) {
    const double bw = link(s.tp * s.cp);
    const double blocks = layers * stage_share * micro;
    const double core_forward = attention_forward / layers, core_backward = attention_backward / layers;
    const double forward = o.ring.forward_hops * o.ring.hop_bytes / bw;
    const double backward = o.ring.backward_hops * o.ring.hop_bytes / bw;
    const double forwards = s.recompute == Recompute::kFull ? 2 : 1;
    out.cp_comm = (forwards * forward + backward) * blocks;
    out.cp_exposed =
        (forwards * std::max(0.0, forward - core_forward) + std::max(0.0, backward - core_backward)) * blocks;
  }
  const double busy = out.compute - out.optimizer + out.tp_comm + out.pp_comm + out.ep_comm + out.cp_exposed;
  out.pipeline_bubble = (pp - 1) / static_cast<double>(o.vp) * busy / micro;
  out.bubble_fraction = out.pipeline_bubble / (busy + out.pipeline_bubble);
  // Data parallel: the gradients of a device's parameters all-reduced across dp ranks (ZeRO-1/2:
  // reduce-scatter + all-gather, the same volume; ZeRO-3 gathers the parameters again in every
  // micro-batch's forward and backward: Rajbhandari et al. 2020, §7). The reduction overlaps with the
  // backward except the last bucket; ZeRO-3's gathers prefetch under compute.
  // Context-parallel ranks hold the same weights and reduce their gradients with the data-parallel
  // ones; --ep: the routed experts' gradients over the dp·cp / ep ranks holding the same experts.
  const uint64_t dp = GradientRanks(s);
  if (dp > 1) {
    const double n = static_cast<double>(dp);
    const double n_expert = n / static_cast<double>(s.ep);
    const double grads = (device.dense + device.expert) * BytesPerElement(s.dtypes.grad);
    const double bw = link(s.gpus);
    const auto reduce = [&](double bytes_per_param) {
      return Ring(n, device.dense * bytes_per_param, bw) + Ring(n_expert, device.expert * bytes_per_param, bw);
    };
    // ZeRO-3 only reduce-scatters the gradients: the next forward gathers the parameters again.
    const double all_reduce = reduce(BytesPerElement(s.dtypes.grad));
    const double scatter = all_reduce / 2;
    const double last = s.zero >= 3 ? scatter : all_reduce;
    // ZeRO-2 and 3 partition the gradients, so every micro-batch's backward reduce-scatters its own
    // to their owners (DeepSpeed's stage 2/3 gradient hooks; FSDP outside no_sync), each under that
    // micro-batch's backward; unpartitioned gradients accumulate locally and are reduced once, in the
    // last micro-batch (DDP's no_sync).
    const double earlier = s.zero >= 2 ? (micro - 1) * scatter : 0;
    out.dp_comm = last + earlier;
    double exposed = std::max(Ring(n, std::min(kBucketBytes, grads), bw), last - backward_stage);
    if (s.zero >= 2) exposed += (micro - 1) * std::max(0.0, scatter - backward_stage);
    if (s.zero >= 3) {
      const double gathers = 2 * reduce(BytesPerElement(s.dtypes.param)) / 2 * micro;  // an all-gather: half a ring
      out.dp_comm += gathers;
      exposed += std::max(0.0, gathers - out.compute);
    }
    out.dp_exposed = exposed;
  }
  out.communication = out.tp_comm + out.pp_comm + out.dp_exposed + out.ep_comm + out.cp_exposed;
  // CPU offload: PCIe is full duplex, so a micro-batch's transfers take the larger direction; they run
  // on their own stream under that micro-batch's compute (ZeRO-Offload, Ren et al. 2021, §4.2; ZeRO-3
  // prefetch), and only what outlasts it is exposed. The updated weights' upload is exposed whole: the
  // next forward waits for it (the one-step delayed update, §4.3, is not modelled).
  if (s.offload != Offload::kNone) {
    if (o.host_bandwidth <= 0) throw InputError("--offload: " + hw.name + " gives no host_bandwidth (host link)");
    const double per_micro = std::max(o.offload.down_per_micro, o.offload.up_per_micro) / o.host_bandwidth;
    const double upload = o.offload.up_per_step / o.host_bandwidth;
    out.offload_transfer = per_micro * micro + upload;
    out.offload = std::max(0.0, per_micro - busy / micro) * micro + upload;
  }
  out.step_seconds = out.compute + out.communication + out.pipeline_bubble + out.offload;
  return out;
}

}  // namespace tally
