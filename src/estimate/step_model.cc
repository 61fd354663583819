#include "estimate/step_model.h"

#include <algorithm>
#include <cmath>

#include "estimate/attention_rate.h"
#include "estimate/collectives.h"
#include "estimate/expert_parallel.h"
#include "estimate/flops.h"
#include "estimate/gemm_shape.h"
#include "estimate/kernel_costs.h"
#include "estimate/power_limit.h"
#include "estimate/roofline.h"
#include "util/dtype.h"
#include "util/error.h"

namespace tally {
namespace {

// --ep-overlap, Megatron-Core's overlap_moe_expert_parallel_comm: a combined 1F1B runs one
// micro-batch's forward beside another's backward, layer by layer, so the forward's dispatch and
// combine all-to-alls hide under the other's backward compute, and the backward's (a full
// recompute's forward among them, which runs inside the backward) under the other's forward. What
// outlasts its partner shows. A micro-batch with no partner hides nothing: the first stage's
// warm-up and cool-down, pp - 1 of the m micro-batches each way (Narayanan et al. 2021, 1F1B), or
// with no pipeline the first forward and the last backward. Arguments: the step's all-to-alls, its
// forward and its backward compute (all micro-batches), m.
double PairedAllToAllExposed(const LayerGraph& g, const Settings& s, double all_to_all, double forward, double backward,
                             double micro) {
  const double per_block = ExpertAllToAllsPerBlock(g, s);
  const double in_forward = all_to_all * 2 / per_block, in_backward = all_to_all - in_forward;
  const double unpaired = std::min(micro, s.pp > 1 ? static_cast<double>(s.pp) - 1 : 1) / micro;
  const double paired = 1 - unpaired;
  return unpaired * all_to_all + paired * (std::max(0.0, in_forward - backward) + std::max(0.0, in_backward - forward));
}

// cuBLAS tiles the output in 128 x 128 blocks (the largest common CUTLASS/cuBLAS tile for 16-bit
// tensor-core GEMMs); a partial tile costs a whole one. NVIDIA, "Matrix Multiplication Background
// User's Guide" (docs.nvidia.com/deeplearning/performance), "Tile Quantization".
constexpr double kTile = 128;

// PyTorch DDP's default gradient bucket (bucket_cap_mb = 25), --dp-bucket ddp: the last one is reduced
// after the backward ends, so at least its all-reduce is exposed.
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

// Adam and AdamW, whose update PyTorch's implementations were measured for (estimate/kernel_costs.h).
bool IsAdam(Optimizer o) { return o == Optimizer::kAdam || o == Optimizer::kAdamw; }

}  // namespace

// The pipeline bubble's stage-times per step, as a multiple of one micro-batch's forward + backward
// (F + B) on a stage: B is the whole backward, W its weight-gradient part.
// 1F1B: p - 1 of them (Narayanan et al. 2021, §2.2), divided by the virtual stages when interleaved.
// Zero-bubble (ZB-H1, Qi et al. 2024, "Zero Bubble Pipeline Parallelism", §3): the weight gradients
// fill the bubble, (p - 1)(F + B - 2W). DualPipe (DeepSeek-AI 2024, DeepSeek-V3 technical report,
// §3.2.1, Table 2): (p/2 - 1)(F&B + B - 3W), with F&B, a forward and a backward overlapped, taken as
// F + B (the overlap hides communication, not compute).
double BubbleStages(PipelineSchedule schedule, double p, double vp, double f, double b, double w) {
  const double fb = f + b;
  if (fb <= 0 || p <= 1) return 0;
  switch (schedule) {
    case PipelineSchedule::k1f1b:
    case PipelineSchedule::kInterleaved:
      return (p - 1) / vp;
    case PipelineSchedule::kZeroBubble:
      return (p - 1) * std::max(0.0, fb - 2 * w) / fb;
    case PipelineSchedule::kDualPipe:
      return std::max(0.0, p / 2 - 1) * std::max(0.0, fb + b - 3 * w) / fb;
  }
  return 0;
}

double TileEfficiency(uint64_t m, uint64_t n) {
  const auto q = [](uint64_t d) {
    const double x = static_cast<double>(d);
    return x / (kTile * std::ceil(x / kTile));
  };
  return q(m) * q(n);
}

namespace {

// The step with its tensor-core GEMMs `power_weight` of the way from their burst rates to their
// power-limited ones (estimate/power_limit.h).
StepTime StepAt(const LayerGraph& g, const Settings& s, const HardwareSpec& hw, double peak, double efficiency,
                uint64_t trainable_params, const StepOptions& o, double power_weight) {
  StepTime out;
  out.efficiency = efficiency;
  // DualPipe feeds micro-batches from both ends of the pipeline, pairing stage i with stage p - 1 - i
  // (DeepSeek-V3 technical report, §3.2.1): its bubble formula needs an even number of stages.
  if (o.schedule == PipelineSchedule::kDualPipe && (s.pp < 2 || s.pp % 2 != 0)) {
    throw InputError("--pp-schedule: dualpipe runs the pipeline from both ends and needs an even --pp, got " +
                     std::to_string(s.pp));
  }
  const double act = BytesPerElement(s.dtypes.activation);
  const double bandwidth = hw.memory_bandwidth * o.mbu;
  // What eager ops were measured at: a device-to-device copy's share of the datasheet bandwidth.
  const double copy_bandwidth = hw.memory_bandwidth * kCopyEfficiency;
  // ... and the SMs' share of their time, beyond their bytes, on this device (kernel_costs.h).
  const double sm_scale = SmSecondsScale(hw.Peak(GemmDType::kFp32), copy_bandwidth);
  const double tp = static_cast<double>(s.tp), pp = static_cast<double>(s.pp);
  const double micro = static_cast<double>(s.grad_accum());
  // Context parallelism: each rank holds s/cp of every micro-batch's tokens (their GEMMs and
  // memory-bound ops) and, load-balanced, 1/cp of the attention core's score blocks.
  const double cp = static_cast<double>(s.cp);
  const bool flash = s.attention == Attention::kFlash;
  // A collective inside a node runs over NVLink/xGMI at what NCCL moves over it (the catalog's
  // intra_node_collective_share of the link), one spanning nodes over the NIC. Without the
  // catalog's fields, the scale-up interconnect stands in for both.
  out.intra_bandwidth = hw.IntraNodeCollectiveBandwidth();
  out.intra_share = hw.intra_node_collective_share > 0 ? hw.intra_node_collective_share : 1;
  out.nvls = hw.nvls;
  out.inter_bandwidth = hw.inter_node_bandwidth > 0 ? hw.inter_node_bandwidth : out.intra_bandwidth;
  const auto link = [&](uint64_t span) {
    const bool network = span > o.gpus_per_node;
    const double b = network ? out.inter_bandwidth : out.intra_bandwidth;
    if (b <= 0) throw InputError("--hardware: " + hw.name + " gives no interconnect bandwidth for the collectives");
    return Link{
        .bandwidth = b, .network = network, .ranks_per_node = static_cast<double>(o.gpus_per_node), .nvls = out.nvls};
  };
  // A group of `ranks` devices `stride` apart in Megatron-Core's rank order (tp, cp, ep, dp, pp from
  // the innermost; FSDP's and DDP's groups are consecutive, stride 1). Across nodes each member
  // drives its own NIC and NCCL runs a channel over each, so the group moves the NICs of its members
  // in a node, at kNetworkCollectiveShare of their line rate, at most the NVLink's bandwidth; its
  // rings cross one node per member there.
  const auto group_link = [&](uint64_t ranks, uint64_t stride) {
    Link l = link(ranks * stride);
    if (l.network) {
      const uint64_t per_node = std::clamp<uint64_t>(o.gpus_per_node / std::max<uint64_t>(stride, 1), 1, ranks);
      l.bandwidth =
          std::min(out.intra_bandwidth, out.inter_bandwidth * kNetworkCollectiveShare * static_cast<double>(per_node));
      l.ranks_per_node = static_cast<double>(per_node);
    }
    return l;
  };
  // One GEMM on one device: max(compute at the rolled-off efficiency, its operands at bandwidth).
  // `on_chip`: elements of an operand that never reach memory. A grouped expert GEMM runs `experts`
  // products of m / experts rows each: its tiles quantize per expert.
  // cuBLAS's GEMMs roll off the best rate by shape (estimate/gemm_shape.h); a fused attention
  // kernel's figure is its own.
  const GemmDType compute_dtype = ComputeDtype(s.precision);
  struct Rate {
    double peak, efficiency;
    GemmDType dtype;
    double operand_bytes = 0;      // per element; 0: the activations'
    bool measured_kernel = false;  // a fused kernel's measured rate by shape: no tile or shape roll-off on top
  };
  const Rate main_rate = {peak, efficiency, compute_dtype};
  // FP8 training (Transformer Engine under Megatron-LM, NeMo, torchao) runs the blocks' linears in
  // fp8 and keeps attention's core, the router and the output layer in 16-bit (TE's fp8_autocast
  // covers te.Linear/LayerNormLinear/LayerNormMLP; Megatron's output layer and embedding stay bf16).
  const bool fp8 = compute_dtype == GemmDType::kFp8;
  const auto bf16_efficiency = hw.gemm_efficiency.find(GemmDType::kBf16);
  const Rate half_rate = fp8 && hw.Peak(GemmDType::kBf16) && bf16_efficiency != hw.gemm_efficiency.end()
                             ? Rate{*hw.Peak(GemmDType::kBf16), bf16_efficiency->second, GemmDType::kBf16}
                             : main_rate;
  const auto gemm_time = [&](const Rate& r, double flops, double m, double n, double k, double count, double eff,
                             double on_chip, double experts, double aligned) {
    const double rows = std::max(1.0, std::ceil(m / experts));
    const double shape = on_chip > 0 ? 1 : GemmShapeFactor(r.dtype, m / experts, n, k) * aligned;
    const double tiles = r.measured_kernel
                             ? 1
                             : TileEfficiency(static_cast<uint64_t>(rows), static_cast<uint64_t>(std::ceil(n))) *
                                   std::min(1.0, m / experts / rows);
    // A fused attention kernel keeps its measured rate: it counts toward the share of the step that
    // sets the clock, but its own loss at the limit was not measured.
    const double power = r.measured_kernel ? 1 : 1 - power_weight * (1 - GemmPowerFactor(r.dtype, m / experts, n, k));
    const double rate = r.peak * eff * shape * tiles * power;
    const double bytes = r.operand_bytes > 0 ? r.operand_bytes : act;
    return std::max(flops / rate, (m * k + k * n + m * n - on_chip) * count * bytes / bandwidth);
  };
  // Flash attention keeps the scores S = QK^T and the probabilities P on chip, forward and backward
  // (Dao et al. 2022, §3.1): its GEMMs move only their s x d operands, at the fraction of the peak
  // fused attention kernels reach: 16-bit on the SMs the sweep measured, cuDNN's rate by shape
  // (estimate/attention_rate.h); elsewhere the catalog's attention_efficiency (without it the GEMMs').
  const bool half = compute_dtype == GemmDType::kBf16 || compute_dtype == GemmDType::kFp16;
  const double flash_efficiency =
      (half || fp8) && hw.attention_efficiency > 0 ? hw.attention_efficiency : half_rate.efficiency;
  const std::optional<double> fp32_peak = hw.Peak(GemmDType::kFp32);
  const bool cudnn_attention = flash && (half || fp8) && OnMeasuredSms(fp32_peak);
  // PEFT's fp32 LoRA adapters beside 16-bit weights run fp32 GEMMs (graph/layer.h, fp32_adapter);
  // without the device's fp32 rate, at the 16-bit one (a note says so: training_estimate.cc).
  const auto fp32_efficiency = hw.gemm_efficiency.find(GemmDType::kFp32);
  const std::optional<Rate> fp32_rate =
      fp32_peak && fp32_efficiency != hw.gemm_efficiency.end()
          ? std::optional<Rate>(Rate{*fp32_peak, fp32_efficiency->second, GemmDType::kFp32, 4})
          : std::nullopt;
  // In fp32 and tf32 no flash kernel runs: SDPA's memory-efficient kernel does, on the CUDA cores, at
  // its measured rate by shape (estimate/attention_rate.h).
  const bool cuda_core_attention =
      flash && (compute_dtype == GemmDType::kFp32 || compute_dtype == GemmDType::kTf32) && fp32_peak;
  // Per micro-batch: the blocks' nodes, and those before (embedding) and after (head, loss) them.
  enum Part { kPre, kBlocks, kPost };
  const bool autocast = s.precision == Precision::kAmpBf16 || s.precision == Precision::kAmpFp16;
  const RecomputeRule rerun(g, s.recompute, s.pp, s.recompute_layers);
  double forward_all[3] = {}, backward_all[3] = {}, recompute[3] = {}, weight_grads[3] = {}, launches[3] = {};
  double tp_gemms[3] = {};  // the tensor-parallel linears' GEMMs, which --tp-overlap hides collectives under
  double row_parallel_bytes = 0, row_parallel_calls = 0, hidden = 0;
  // The memory-bound ops' share of forward_all + backward_all + recompute: the non-GEMM GPU time.
  double memory_all[3] = {};
  // --etp other than --tp: the routed experts' row-parallel reductions run over the etp ranks instead.
  double expert_row_bytes = 0, expert_row_calls = 0;
  // What the recomputed blocks run again of these (each block's own: --recompute-layers may rerun
  // some kinds of block and not others), and the attention blocks, all and rerun, for the ring.
  double rerun_row_bytes = 0, rerun_row_calls = 0, rerun_expert_row_bytes = 0, rerun_expert_row_calls = 0;
  double attention_blocks = 0, attention_reruns = 0;
  const bool expert_tp_apart = s.expert_tp() != s.tp;
  // The share of a micro-batch's routed token copies a device's experts compute (expert_parallel.h).
  // On the busiest expert-parallel rank (--moe-imbalance), whose pace every MoE layer takes.
  const double imbalance = s.ep > 1 ? o.moe_imbalance : 1;
  const double expert_rows = ExpertRowShare(s) * imbalance;
  double attention_forward = 0, attention_backward = 0;  // the blocks' attention core, for the ring's overlap
  double gemm_weights = 0, trainable_weights = 0, param_tensors = 0;  // this device's, for casts and launches
  double fp8_weights = 0;  // the fp8 linears' weights, cast once a step (TE caches them over micro-batches)
  for (size_t i = 0; i < g.layers.size(); ++i) {
    const Layer& l = g.layers[i];
    const int part = i < g.blocks_begin ? kPre : i < g.blocks_end ? kBlocks : kPost;
    const double rep = static_cast<double>(l.repeat);
    // A tied head splits as the embedding it shares does (Megatron's vocabulary-parallel head).
    const double div = TpDivisor(l.weights_of ? g.layers[*l.weights_of] : l, s.tp);
    double fwd = 0, bwd = 0, weight_grad = 0, fwd_launches = 0, bwd_launches = 0, gemms = 0;
    double memory_fwd = 0, memory_bwd = 0;  // of fwd and bwd, the memory-bound ops
    // A routed expert linear (MoE parallel folding, expert_parallel.h): the device runs its E / ep
    // experts as one grouped GEMM over the copies dispatched to them from the whole expert group,
    // etp / tp of the micro-batch's (/ cp) routed rows, each expert's width split over etp ranks; its
    // FLOPs are still the graph's / (tp · cp).
    const bool routed = l.n_experts > 0 && !l.gemms.empty();
    const double experts = routed ? static_cast<double>(l.n_experts) / static_cast<double>(s.ep) : 1;
    const double width_div = routed ? TpDivisor(l, s.expert_tp()) : div;
    // The weights this device holds of the node: a routed expert's E / ep experts, / etp.
    const double weight_div = routed ? width_div * static_cast<double>(s.ep) : div;
    // LoRA adapters are plain linears beside Transformer Engine's: in 16-bit (or fp32) under fp8 too.
    const bool in_fp8 = fp8 && part == kBlocks && l.component != Component::kAttentionCore &&
                        l.component != Component::kRouter && l.component != Component::kLmHead &&
                        l.component != Component::kLora;
    const Rate& r = in_fp8 || !fp8 ? main_rate : half_rate;
    // Overlapped with their collectives (--tp-overlap), a tensor-parallel linear's GEMMs run in
    // chunks, each computed as its share of the collective arrives or before it leaves
    // (Transformer Engine's userbuffers defaults, transformer_engine/pytorch/module/base.py,
    // initialize_ub): "ring_exchange" in tp chunks for the column-parallel forward (qkv_fprop,
    // fc1_fprop) and the row-parallel input gradient (proj_dgrad, fc2_dgrad), "pipeline" in 4 for the
    // row-parallel forward (proj_fprop, fc2_fprop), "bulk" (whole) for the rest. A chunk of m / splits
    // rows runs at its own shape's rate.
    const bool chunked =
        o.tp_overlap && s.tp > 1 && width_div > 1 && !routed && l.component != Component::kAttentionCore;
    const double forward_splits = !chunked ? 1 : RowParallel(l) ? 4 : tp;
    const double input_grad_splits = chunked && RowParallel(l) ? tp : 1;
    for (const Gemm& gm : l.gemms) {
      double m = static_cast<double>(gm.m), n = static_cast<double>(gm.n), k = static_cast<double>(gm.k);
      const bool core = l.component == Component::kAttentionCore;
      // The s x s operand: the scores GEMM's output (m x n) or the PV GEMM's input (m x k).
      const double on_chip = flash && core ? m * (l.kind == LayerKind::kAttentionScores ? n : k) : 0;
      const double count = static_cast<double>(gm.count) / (core ? tp * cp : 1);
      double eff = flash && core ? flash_efficiency : r.efficiency;
      Rate rate = r;
      if (l.fp32_adapter && fp32_rate) {
        rate = *fp32_rate;
        eff = rate.efficiency;
      }
      // The kernel's shape: batch x heads the products on this tensor-parallel rank, head dim the
      // scores' k (the PV product's n), and the sequence, whose s / cp queries a context-parallel
      // rank runs against each s / cp block of keys in turn (ring attention).
      const double kernel_heads = static_cast<double>(gm.count) / tp, kernel_seq = m / cp;
      const double head_dim = l.kind == LayerKind::kAttentionScores ? k : n;
      if (core && cuda_core_attention) {
        eff = Fp32AttentionEfficiency(kernel_heads, kernel_seq, head_dim);
        rate = {*fp32_peak, eff, GemmDType::kFp32, 4, true};
      } else if (core && cudnn_attention) {
        eff = CudnnAttentionEfficiency(kernel_heads, kernel_seq, head_dim);
        rate.peak = hw.Peak(GemmDType::kBf16).value_or(rate.peak);  // the sweep's rates are over the bf16 peak
        rate.measured_kernel = true;
      }
      if (!core) (RowParallel(l) ? k : n) /= width_div;
      if (!core) m /= cp;
      if (routed) m *= expert_rows;
      // A routed expert GEMM on the busiest rank does `imbalance` times the mean rank's FLOPs.
      const double f = static_cast<double>(GemmForwardFlops(gm, l.path)) / div / cp * (routed ? imbalance : 1);
      // The forward's n and k are the operands' leading dimensions in all three products.
      const double aligned = GemmAlignmentFactor(rate.dtype, static_cast<uint64_t>(n), static_cast<uint64_t>(k));
      fwd += gemm_time(rate, f, m, n, k, count, eff, on_chip, experts * forward_splits, aligned);
      fwd_launches += forward_splits;
      if (gm.grad_a) {
        bwd += gemm_time(rate, f, m, k, n, count, eff, on_chip, experts * input_grad_splits,
                         aligned);  // dA = dY·Bᵀ: m x k
        bwd_launches += input_grad_splits - 1;
      }
      if (gm.grad_b) {
        const double dw = gemm_time(rate, f, k, n, m, count, eff, on_chip, 1, aligned);  // dB = Aᵀ·dY: k x n out
        bwd += dw;
        if (!core) weight_grad += dw;
      }
      bwd_launches += (gm.grad_a ? 1 : 0) + (gm.grad_b ? 1 : 0);
      // Flash attention's backward forms the scores again (Dao et al. 2022, §3.1).
      if (flash && l.kind == LayerKind::kAttentionScores) bwd += gemm_time(rate, f, m, n, k, count, eff, on_chip, 1, 1);
      if (!core) gemms = fwd + bwd;
      // An fp8 linear casts its input to fp8 (and its transpose), and in the backward the output's
      // gradient, as --fp8-recipe does (Fp8CastCostOf).
      if (in_fp8) {
        const Fp8CastCost cast = Fp8CastCostOf(o.fp8_recipe);
        const double cast_fwd = cast.bytes * m * k * count / copy_bandwidth;
        const double cast_bwd = cast.bytes * m * n * count / copy_bandwidth;
        fwd += cast_fwd;
        bwd += cast_bwd;
        memory_fwd += cast_fwd;
        memory_bwd += cast_bwd;
        fwd_launches += cast.kernels;
        bwd_launches += cast.kernels;
      }
    }
    if (in_fp8) fp8_weights += static_cast<double>(l.params) / weight_div * rep;
    if (!l.gemms.empty() && l.component != Component::kAttentionCore) {
      gemm_weights += static_cast<double>(l.params) / weight_div * rep;
      if (l.trainable) trainable_weights += static_cast<double>(l.params) / weight_div * rep;
    }
    if (l.trainable) param_tensors += static_cast<double>(l.param_tensors.size()) * rep;
    if (l.component == Component::kLora && l.gemms.size() == 2) {
      // PEFT's scaling and add around an adapter (and, in fp32, its casts), per token of its input.
      const Gemm& a = l.gemms.front();
      const OpTraffic around =
          LoraTraffic(static_cast<double>(a.k), static_cast<double>(l.gemms.back().n) / div, l.fp32_adapter);
      const double tokens = static_cast<double>(a.m) * static_cast<double>(a.count) / cp;
      fwd += tokens * around.forward_bytes / copy_bandwidth;
      bwd += tokens * around.backward_bytes / copy_bandwidth;
      memory_fwd += tokens * around.forward_bytes / copy_bandwidth;
      memory_bwd += tokens * around.backward_bytes / copy_bandwidth;
      fwd_launches += around.forward_kernels;
      bwd_launches += around.backward_kernels;
    }
    if (l.gemms.empty() && !(flash && l.component == Component::kAttentionCore)) {
      // A memory-bound op: what it moves per output element, eager or fused (estimate/kernel_costs.h),
      // over this device's share of its elements.
      const double shard = ElementwiseTpShards(l, s.tp, s.sp);
      // The cross-entropy runs as --loss-kernel says, whatever the other ops are: eager op by op over
      // logits upcast to fp32 (Hugging Face's loss; Megatron-LM's vocab_parallel_cross_entropy
      // without --cross-entropy-loss-fusion, megatron/core/tensor_parallel/cross_entropy.py), chunked
      // and fused one kernel a chunk or a pass.
      const Kernels kernels = l.kind != LayerKind::kLoss            ? o.kernels
                              : s.loss_kernel == LossKernel::kEager ? Kernels::kEager
                                                                    : Kernels::kFused;
      const OpTraffic traffic = ElementwiseTraffic(l, kernels, act, autocast);
      const double elements = OpElements(l) / shard / cp;
      const double bw = traffic.measured ? copy_bandwidth : bandwidth;
      const double forward = elements * (traffic.forward_bytes / bw + traffic.forward_sm_seconds * sm_scale);
      const double backward = elements * (traffic.backward_bytes / bw + traffic.backward_sm_seconds * sm_scale);
      fwd += forward;
      bwd += backward;
      memory_fwd += forward;
      memory_bwd += backward;
      fwd_launches += traffic.forward_kernels;
      bwd_launches += traffic.backward_kernels;
    }
    // An MoE layer's tokens are permuted to their experts before the first expert GEMM and back after
    // the last: each a read and a write of the routed copies the device's experts compute, forward and
    // backward.
    if (RoutedDownProjection(l)) {
      const double permute = 4 * ShapeElements(l.shape) / cp * expert_rows * act / copy_bandwidth;
      fwd += permute;
      bwd += permute;
      memory_fwd += permute;
      memory_bwd += permute;
      fwd_launches += 2;
      bwd_launches += 2;
    }
    forward_all[part] += fwd * rep;
    if (part == kBlocks && l.component == Component::kAttentionCore) {
      attention_forward += fwd * rep;
      attention_backward += bwd * rep;
    }
    backward_all[part] += bwd * rep;
    weight_grads[part] += weight_grad * rep;
    if (width_div > 1) tp_gemms[part] += gemms * rep;
    launches[part] += (fwd_launches + bwd_launches) * rep;
    // The busiest stage's, since the step runs at its pace (the block sums are scaled to it below).
    // Under --recompute op a linear reruns its modules the policy did not keep: their share of the
    // node's forward, at the node's rate (k_proj's third of Llama's q/k/v GEMM).
    const double blocks_rerun = rerun.BusiestStageReruns(l), share = rerun.RerunShare(l);
    const double reruns = blocks_rerun * share;
    recompute[part] += fwd * reruns;
    memory_all[part] += (memory_fwd + memory_bwd) * rep + memory_fwd * reruns;
    launches[part] += fwd_launches * (share > 0 ? blocks_rerun : 0);  // a rerun module is a whole launch
    const double collective_reruns = rerun.CollectiveReruns(l, s.sp);
    if (l.kind == LayerKind::kAttentionScores && part == kBlocks) {
      attention_blocks += rep;
      attention_reruns += reruns;
    }
    if (RowParallel(l) && routed && expert_tp_apart) {
      const double bytes = ShapeElements(l.shape) * act / cp * expert_rows;
      expert_row_bytes += bytes * rep;
      expert_row_calls += rep;
      rerun_expert_row_bytes += bytes * collective_reruns;
      rerun_expert_row_calls += collective_reruns;
    } else if (RowParallel(l)) {
      const double bytes = ShapeElements(l.shape) * act / cp;
      row_parallel_bytes += bytes * rep;
      row_parallel_calls += rep;
      rerun_row_bytes += bytes * collective_reruns;
      rerun_row_calls += collective_reruns;
    }
    // The pipeline passes a block's [b, s, hidden] output: a row-parallel linear's, not the routed
    // experts' top_k copies of it.
    if (RowParallel(l) && !RoutedDownProjection(l)) hidden = ShapeElements(l.shape) * act / cp;
  }
  // The pipeline runs at its slowest stage: ceil(L / pp) blocks, plus the embedding on the first
  // stage or the head and loss on the last, whichever is heavier (without pipelining, all of it).
  const auto total = [&](int part) { return forward_all[part] + backward_all[part] + recompute[part]; };
  const double layers = static_cast<double>(std::max<uint64_t>(g.n_layers, 1));
  const double stage_share = s.pp > 1 ? std::ceil(layers / pp) / layers : 1;
  const auto stage = [&](const double* per_part) {
    const double ends = s.pp > 1 ? std::max(per_part[kPre], per_part[kPost]) : per_part[kPre] + per_part[kPost];
    return per_part[kBlocks] * stage_share + ends;
  };
  const double totals[3] = {total(kPre), total(kBlocks), total(kPost)};
  const double backward_stage = backward_all[kBlocks] * stage_share + backward_all[kPost];
  // The optimizer update reads and writes every local parameter's state once per step (memory-bound):
  // reads the gradient, the weight (its fp32 master under mixed precision) and the states, writes the
  // weight, the master and the states. ZeRO-1 and above update a 1/(dp·cp) share (--ep: the routed
  // experts' 1/(dp·cp/ep) of the 1/ep the device holds). Adam and AdamW on the weights themselves
  // (no master copy) take PyTorch's measured passes by --optimizer-impl instead, whatever --kernels
  // says: torch.compile leaves the optimizer to PyTorch (estimate/kernel_costs.h).
  const DeviceParams device = TrainableParamsPerDevice(g, trainable_params, s);
  const double local = device.dense / (s.zero >= 1 ? static_cast<double>(GradientRanks(s)) : 1) +
                       device.expert / (s.zero >= 1 ? static_cast<double>(ExpertDataParallel(s)) : 1);
  // Under LoRA only the adapters train, in fp32 where LoraAdaptersInFp32 (AdapterDtypes).
  const Precisions trained = AdapterDtypes(s).value_or(s.dtypes);
  const double master = trained.master ? BytesPerElement(*trained.master) : 0;
  const double states = OptimizerStates(s.optimizer) * BytesPerElement(trained.state);
  // Measured as PyTorch keeps it: gradients and states in the weights' dtype.
  const std::optional<ElementCost> measured_adam =
      !trained.master && IsAdam(s.optimizer) && trained.state == trained.param && trained.grad == trained.param
          ? MeasuredAdamCost(s.optimizer_impl, BytesPerElement(trained.param))
          : std::nullopt;
  out.optimizer =
      measured_adam
          ? local * (measured_adam->bytes / copy_bandwidth + measured_adam->sm_seconds * sm_scale)
          : local * (BytesPerElement(trained.grad) + 2 * BytesPerElement(trained.param) + 2 * master + 2 * states) /
                bandwidth;
  const double optimizer_launches = param_tensors * OptimizerKernelsPerTensor(s.optimizer_impl);
  out.optimizer = std::max(out.optimizer, optimizer_launches * kHostSecondsPerKernel);
  // Offloaded, the update runs on the host's CPUs, which the catalog does not describe: left out.
  if (s.offload != Offload::kNone) out.optimizer = 0;
  // Autocast (torch.amp) casts each fp32 weight to the GEMMs' dtype in every forward (4 bytes read, 2
  // written) and each weight gradient back to fp32 (torch/amp/autocast_mode.py; its cast cache lives
  // one forward).
  const double casts = autocast ? 6 * (gemm_weights + trainable_weights) * stage_share / copy_bandwidth : 0;
  const double fp8_casts = 4 * fp8_weights * stage_share / copy_bandwidth;
  const double gpu = stage(totals) * micro + casts * micro + fp8_casts;
  // The host launches every kernel; where they run shorter than it launches them, the step waits on it.
  out.kernels = (stage(launches) * micro) + optimizer_launches;
  out.host = stage(launches) * micro * kHostSecondsPerKernel;
  // The memory-bound ops of the stage the compute's pace is taken from: its end the heavier in all.
  const int end = totals[kPre] >= totals[kPost] ? kPre : kPost;
  const double memory_ends = s.pp > 1 ? memory_all[end] : memory_all[kPre] + memory_all[kPost];
  out.memory_bound = (memory_all[kBlocks] * stage_share + memory_ends) * micro + casts * micro;
  out.compute = std::max(gpu, out.host) + out.optimizer;
  // Tensor parallel: an all-reduce after each row-parallel linear in the forward and one of the
  // same size in the backward (Shoeybi et al. 2019, Fig. 4: g and f), again in each recomputed
  // block; sequence parallelism replaces each by a reduce-scatter + all-gather of the same volume
  // (Korthikanti et al. 2022, §4.2.2). Not overlapped with compute.
  const double stage_micro = micro * stage_share;
  // NVLS serves NCCL's all-reduces only: not sequence parallelism's reduce-scatters and all-gathers
  // (priced here at the all-reduce's ring volume, which is theirs), nor --tp-overlap's userbuffers,
  // which are Transformer Engine's own exchanges, not NCCL's.
  const auto tp_link = [&](uint64_t ranks, bool all_reduce) {
    Link l = link(ranks);
    if (!all_reduce) l.nvls = NvlsArch::kNone;
    return l;
  };
  if (s.tp > 1) {
    out.tp_comm = CollectiveSeconds(
        Collective::kAllReduce, tp, (2 * row_parallel_bytes + rerun_row_bytes) * stage_micro,
        (2 * row_parallel_calls + rerun_row_calls) * stage_micro, tp_link(s.tp, !s.sp && !o.tp_overlap));
  }
  const double dense_tp_comm = out.tp_comm;
  // --etp other than --tp: the routed experts' tensor-parallel collectives (Megatron-Core's token
  // dispatcher gathers the dispatched tokens over the expert-tensor-parallel group and reduce-scatters
  // the experts' output back, the same volume as an all-reduce) over the etp ranks, of the rows the
  // device's experts compute; none at etp 1.
  if (expert_tp_apart && s.expert_tp() > 1) {
    out.tp_comm +=
        CollectiveSeconds(Collective::kAllReduce, static_cast<double>(s.expert_tp()),
                          (2 * expert_row_bytes + rerun_expert_row_bytes) * stage_micro,
                          (2 * expert_row_calls + rerun_expert_row_calls) * stage_micro, tp_link(s.expert_tp(), false));
  }
  // Overlapped, the collectives run in chunks under the tensor-parallel linears' GEMMs (Wang et al.
  // 2022, "Overlap communication with dependent computation via decomposition"; Megatron-LM's
  // --tp-comm-overlap): only what outlasts those GEMMs is exposed.
  // The "pipeline" overlap reduce-scatters each of its 4 chunks after computing it: the last chunk's
  // share of the forward's reduce-scatter (half of an all-reduce's volume) waits for nothing to hide
  // under.
  const double rerun_rows = row_parallel_bytes > 0 ? rerun_row_bytes / row_parallel_bytes : 0;
  const double last_chunk = dense_tp_comm * (1 + rerun_rows) / (2 + rerun_rows) / 2 / 4;
  out.tp_exposed =
      o.tp_overlap ? last_chunk + std::max(0.0, out.tp_comm - last_chunk - stage(tp_gemms) * micro) : out.tp_comm;
  // Expert parallel: each MoE block's dispatch and combine all-to-alls over the expert group, the
  // etp · ep consecutive ranks (estimate/expert_parallel.h). Overlapped (--ep-overlap), each
  // micro-batch's all-to-alls run under the compute of another micro-batch in flight, so only what
  // outlasts the step's GPU compute is exposed; with one micro-batch there is no other to hide under.
  if (s.ep > 1) {
    link(2);                     // throws where the device gives no bandwidth for the node's peers
    link(s.expert_tp() * s.ep);  // or for the whole group's
    const ExpertLinks links = {.intra_bandwidth = out.intra_bandwidth,
                               .inter_bandwidth = out.inter_bandwidth,
                               .gpus_per_node = static_cast<double>(o.gpus_per_node),
                               .dispatch = o.ep_dispatch};
    // The busiest rank receives (dispatch) and sends back (combine) `imbalance` times its share.
    out.ep_comm = ExpertAllToAllSeconds(g, s, links) * imbalance * micro * stage_share;
  }
  out.ep_exposed = o.ep_overlap ? PairedAllToAllExposed(g, s, out.ep_comm, stage(forward_all) * micro,
                                                        (stage(backward_all) + stage(recompute)) * micro, micro)
                                : out.ep_comm;
  // Pipeline: each micro-batch sends its activation forward and its gradient back across every
  // stage boundary, 1/tp of it per rank with the scatter/gather optimization (Narayanan et al.
  // 2021, §4.1); interleaving crosses vp times as many boundaries. Adjacent stages are tp x cp x dp
  // ranks apart (the pipeline is the outermost dimension in Megatron-Core's order tp, cp, ep, dp, pp,
  // in DeepSpeed's and in torchtitan's meshes), so some boundary crosses nodes, and paces the
  // stages behind it, unless the whole grid fits one node.
  if (s.pp > 1) {
    out.pp_comm = 2 * hidden / tp / link(s.tp * GradientRanks(s) * s.pp).bandwidth * micro * static_cast<double>(o.vp);
  }
  // Context parallel: per block, the ring's hops run under the attention core of the same block
  // (Liu et al. 2023, §3: each hop overlaps the blockwise attention of the chunk in hand), forward,
  // backward and a full recompute's forward; what outlasts it is exposed. The ring stays inside a
  // node while tp · cp devices fit in one (Megatron-Core orders the groups tp, cp, dp, pp).
  if (s.cp > 1) {
    const double bw = link(s.tp * s.cp).bandwidth;
    const double blocks = layers * stage_share * micro;
    const double core_forward = attention_forward / layers, core_backward = attention_backward / layers;
    const double forward = o.ring.forward_hops * o.ring.hop_bytes / bw;
    const double backward = o.ring.backward_hops * o.ring.hop_bytes / bw;
    const double forwards = 1 + (attention_blocks > 0 ? attention_reruns / attention_blocks : 0);
    out.cp_comm = (forwards * forward + backward) * blocks;
    out.cp_exposed =
        (forwards * std::max(0.0, forward - core_forward) + std::max(0.0, backward - core_backward)) * blocks;
  }
  // The pipeline bubble: its stage-times (BubbleStages) of one micro-batch's share of the busy time.
  const double busy = out.compute - out.optimizer + out.tp_exposed + out.pp_comm + out.ep_exposed + out.cp_exposed;
  const double f_stage = stage(forward_all), b_stage = stage(backward_all) + stage(recompute);
  const double bubble = BubbleStages(o.schedule, pp, static_cast<double>(o.vp), f_stage, b_stage, stage(weight_grads));
  out.pipeline_bubble = bubble * busy / micro;
  out.bubble_fraction = out.pipeline_bubble / (busy + out.pipeline_bubble);
  // Data parallel: the gradients of a device's parameters all-reduced across dp ranks (ZeRO-1/2:
  // reduce-scatter + all-gather, the same volume; ZeRO-3 gathers the parameters again in every
  // micro-batch's forward and backward: Rajbhandari et al. 2020, §7), in buckets (--dp-bucket), each a
  // collective with its latency, over the group's link (group_link: its members' NICs across nodes,
  // NVLink when a pipeline stage's devices fit one node). The reduction overlaps with the backward
  // except the last bucket; ZeRO-3's gathers, one per block forward and backward, prefetch under
  // compute.
  // Context-parallel ranks hold the same weights and reduce their gradients with the data-parallel
  // ones; --ep, --etp: the routed experts' gradients over the tp·cp·dp / (ep·etp) ranks holding the
  // same expert shard (ExpertDataParallel).
  const uint64_t dp = GradientRanks(s);
  const uint64_t expert_dp = ExpertGrid(s) ? ExpertDataParallel(s) : dp;
  if (dp > 1 || expert_dp > 1) {
    const double n = static_cast<double>(dp);
    const double n_expert = static_cast<double>(expert_dp);
    const Link net = group_link(dp, s.tp);
    const Link expert_net = group_link(expert_dp, s.ep * s.expert_tp());
    const double grad_bytes = BytesPerElement(trained.grad), weight_bytes = BytesPerElement(trained.param);
    // The parameters a bucket holds (--dp-bucket); a collective moves them in its own dtype.
    const double bucket_params = o.dp_bucket == DpBucket::kMegatron    ? std::max(40e6, 1e6 * n)
                                 : o.dp_bucket == DpBucket::kDeepSpeed ? 5e8
                                 : o.dp_bucket == DpBucket::kParams    ? static_cast<double>(o.dp_bucket_params)
                                                                       : kBucketBytes / grad_bytes;
    out.dp_network = net.network;
    out.dp_bandwidth = net.bandwidth;
    out.dp_ranks_per_node = net.network ? net.ranks_per_node : n;
    // FSDP reduce-scatters each unit's gradients as its backward ends, a block at a time (ZeRO-3 under
    // the default --dp-bucket; a named bucket, DeepSpeed's or Megatron's, takes its own).
    const double block_calls = s.zero >= 3 && o.dp_bucket == DpBucket::kDdp ? std::max(1.0, layers * stage_share) : 0;
    out.dp_bucket_bytes = (block_calls > 0 ? device.dense / block_calls : bucket_params) * grad_bytes;
    // `calls` collectives of `c` over the dense and the routed experts' groups, `bytes_per_param` each
    // parameter; 0 calls: in buckets.
    const auto collective = [&](Collective c, double bytes_per_param, double calls = 0) {
      const auto over = [&](double params, double ranks, const Link& l) {
        const double bucketed = std::max(1.0, std::ceil(params / bucket_params));
        return CollectiveSeconds(c, ranks, params * bytes_per_param, calls > 0 ? calls : bucketed, l);
      };
      return over(device.dense, n, net) + over(device.expert, n_expert, expert_net);
    };
    // One bucket of `c` (under FSDP's per-block scatters, one block's): what no overlap hides (the
    // dense group's, the larger).
    const auto one_bucket = [&](Collective c, double bytes_per_param) {
      const double most = std::max(device.dense, device.expert);
      const double params =
          c == Collective::kReduceScatter && block_calls > 0 ? most / block_calls : std::min(bucket_params, most);
      return CollectiveSeconds(c, n, params * bytes_per_param, 1, net);
    };
    // Without ZeRO the gradients are all-reduced. ZeRO-1 and 2 (Megatron's distributed optimizer,
    // DeepSpeed's stages 1 and 2) reduce-scatter them to the ranks owning each optimizer shard, which
    // all-gather the updated weights after the step: the all-reduce's volume where gradients and
    // weights share a dtype (Rajbhandari et al. 2020, §5.1), fp32 gradients and bf16 weights 4 + 2
    // bytes a parameter where an all-reduce moves 8. The gather waits for the update: DeepSpeed runs
    // it "at the end of each step" (deepspeed/runtime/zero/config.py, allgather_bucket_size), exposed;
    // with --overlap-param-gather (Megatron-LM's) the next forward waits only for each bucket it uses.
    // ZeRO-3 only reduce-scatters the gradients: the next forward gathers the parameters again.
    const double all_reduce = collective(Collective::kAllReduce, grad_bytes);
    const double scatter = collective(Collective::kReduceScatter, grad_bytes, block_calls);
    const double last = s.zero >= 1 ? scatter : all_reduce;
    const bool sharded_update = s.zero == 1 || s.zero == 2;
    const double regather = sharded_update ? collective(Collective::kAllGather, weight_bytes) : 0;
    // ZeRO-2 and 3 partition the gradients, so every micro-batch's backward reduce-scatters its own
    // to their owners (DeepSpeed's stage 2/3 gradient hooks; FSDP outside no_sync), each under that
    // micro-batch's backward; unpartitioned gradients accumulate locally and are reduced once, in the
    // last micro-batch (DDP's no_sync).
    const double earlier = s.zero >= 2 ? (micro - 1) * scatter : 0;
    out.dp_comm = last + earlier + regather;
    double exposed = std::max(one_bucket(s.zero >= 1 ? Collective::kReduceScatter : Collective::kAllReduce, grad_bytes),
                              last - backward_stage);
    if (s.zero >= 2) exposed += (micro - 1) * std::max(0.0, scatter - backward_stage);
    if (sharded_update) {
      exposed += o.param_gather_overlap ? std::max(one_bucket(Collective::kAllGather, weight_bytes), regather - f_stage)
                                        : regather;
    }
    if (s.zero >= 3) {
      // One gather per block, forward and backward, of the dense and the experts' parameters each.
      const double units = 2 * layers * stage_share * micro;
      const double gathers = collective(Collective::kAllGather, weight_bytes * 2 * micro, units);
      out.dp_comm += gathers;
      exposed += std::max(0.0, gathers - out.compute);
    }
    out.dp_exposed = o.dp_overlap ? exposed : out.dp_comm;
  }
  out.communication = out.tp_exposed + out.pp_comm + out.dp_exposed + out.ep_exposed + out.cp_exposed;
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
  // The GEMMs' and attention kernels' share of the step (the device's time less its memory-bound
  // ops, the weights' fp8 casts and the optimizer): what sets the board's power draw.
  out.tensor_duty =
      out.step_seconds > 0 ? std::clamp((gpu - out.memory_bound - fp8_casts) / out.step_seconds, 0.0, 1.0) : 0;
  out.power_weight = power_weight;
  return out;
}

}  // namespace

StepTime TrainingStep(const LayerGraph& g, const Settings& s, const HardwareSpec& hw, double peak, double efficiency,
                      uint64_t trainable_params, const StepOptions& o) {
  const GemmDType dtype = ComputeDtype(s.precision);
  const auto at = [&](double weight) { return StepAt(g, s, hw, peak, efficiency, trainable_params, o, weight); };
  if (!o.power_limit || !PowerLimitPriced(hw, dtype)) return at(0);
  auto [burst, out] = SettleAtPowerLimit(dtype, at);
  out.power_limit = out.step_seconds - burst.step_seconds;
  return out;
}

}  // namespace tally
