#include "estimate/roofline.h"

#include <algorithm>
#include <cmath>

#include "config/quantization.h"
#include "estimate/checkpoint_weights.h"
#include "estimate/collectives.h"
#include "estimate/defaults.h"
#include "estimate/flops.h"
#include "estimate/gemm_shape.h"
#include "estimate/memory.h"
#include "estimate/power_limit.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

bool TensorParallel(const Layer& l) {
  if (l.tp_split) return true;
  return std::any_of(l.param_tensors.begin(), l.param_tensors.end(), [](const ParamTensor& t) { return t.tp_sharded; });
}

}  // namespace

// How many ways tensor parallelism divides a node's compute: tp, or less where some of its matrices
// split fewer ways (K and V past their heads, each rank computing its replica): the ratio of the
// node's matrix elements to one rank's share of them; a node without matrices on split dimensions
// (Layer::tp_split), its own split.
double TpDivisor(const Layer& l, uint64_t tp) {
  if (!TensorParallel(l)) return 1;
  double total = 0, device = 0;
  for (const ParamTensor& t : l.param_tensors) {
    if (t.shape.size() < 2) continue;
    double n = 1;
    for (uint64_t d : t.shape) n *= static_cast<double>(d);
    total += n;
    device += n / static_cast<double>(TpShards(t.tp_sharded, t.tp_max_shards, tp));
  }
  return device > 0 ? total / device : static_cast<double>(TpShards(true, l.tp_max_shards, tp));
}

double ElementwiseTpShards(const Layer& l, uint64_t tp, bool sp) {
  if (l.tp_split) return static_cast<double>(TpShards(true, l.tp_max_shards, tp));
  const double div = TpDivisor(l, tp);
  if (div > 1) return div;
  return sp ? static_cast<double>(tp) : 1;
}

// A row-parallel linear ends in an all-reduce of its output across the tensor-parallel group.
bool RowParallel(const Layer& l) { return l.kind == LayerKind::kLinear && !l.saved.empty() && l.saved[0].tp_sharded; }

namespace {

struct OpCost {
  double flops = 0;
  double bytes = 0;
  double shaped_flops = 0;   // the weight GEMMs' FLOPs / their shape factor, plus the rest as they are
  double dequant_bytes = 0;  // of `bytes`: weight-only quantized weights, dequantized in the GEMM
  double dequant_flops = 0;  // the GEMM FLOPs of a node whose weights are weight-only quantized
};

OpCost AttentionCost(const Layer& l, const ModelSpec& spec, const Settings& s, double act, double kv) {
  // Queries and keys from the GEMM (QK^T: m x n; AV: m x k) or the [b, a, s, keys] shape of softmax
  // and dropout; per device a / tp query heads and ceil(g / tp) K/V heads.
  const double b = static_cast<double>(l.shape[0]);
  double q = 0, keys = 0;
  if (l.kind == LayerKind::kAttentionScores) {
    q = static_cast<double>(l.gemms[0].m);
    keys = static_cast<double>(l.gemms[0].n);
  } else if (l.kind == LayerKind::kAttentionContext) {
    q = static_cast<double>(l.gemms[0].m);
    keys = static_cast<double>(l.gemms[0].k);
  } else {
    q = static_cast<double>(l.shape.at(2));
    keys = static_cast<double>(l.shape.at(3));
  }
  const TransformerSpec& t = spec.transformer;
  const double tp = static_cast<double>(s.tp);
  const double heads = static_cast<double>(t.n_heads) / tp, d = static_cast<double>(t.head_dim);
  // K (or V) elements per key on this device, from the node's cache layout (estimate/kv_cache.h).
  const double kv_per_key =
      static_cast<double>(CeilDiv(l.kv_elements_per_token, TpShards(true, l.kv_tp_max_shards, s.tp))) / 2;
  const double scores = b * heads * q * keys;
  OpCost c;
  for (const Gemm& g : l.gemms) c.flops += static_cast<double>(GemmForwardFlops(g, l.path)) / tp;
  c.flops += static_cast<double>(l.non_matmul_flops) / tp;
  const bool flash = s.attention == Attention::kFlash;
  switch (l.kind) {
    case LayerKind::kAttentionScores:  // reads Q and K; eager writes the scores
      c.bytes = b * heads * q * d * act + b * kv_per_key * keys * kv + (flash ? 0 : scores * act);
      break;
    case LayerKind::kAttentionContext:  // reads V (and eager the probabilities), writes the output
      c.bytes = b * kv_per_key * keys * kv + b * heads * q * d * act + (flash ? 0 : scores * act);
      break;
    default:  // softmax and dropout: fused into the kernel under flash, a read and a write otherwise
      c.bytes = flash ? 0 : 2 * scores * act;
  }
  return c;
}

OpCost NodeCost(const Layer& l, const LayerGraph& g, const ModelSpec& spec, const Settings& s, DType weight,
                const CheckpointRates* rates, std::optional<GemmDType> shaped, double power_weight) {
  const double act = BytesPerElement(s.dtypes.activation), kv = BytesPerElement(KvDtype(s));
  const double tp = TpDivisor(l, s.tp);
  if (l.component == Component::kAttentionCore) return AttentionCost(l, spec, s, act, kv);
  OpCost c;
  if (l.kind == LayerKind::kLoss) return c;  // inference computes no loss
  // Generation needs the logits of the last position only (an encoder–decoder's: of the target).
  const double positions = static_cast<double>(g.target_seq > 0 ? g.target_seq : g.seq);
  const double share = l.component == Component::kLmHead ? 1.0 / positions : 1.0;
  double weights = 0, dequant = 0;
  for (const ParamTensor& t : l.param_tensors) {
    const double bytes = static_cast<double>(InferenceTensorBytes(l, t, spec, s, weight, rates));
    weights += bytes;
    if (InferenceWeightOnly(l, t, spec, s)) dequant += bytes;
  }
  // A tied head reads the embedding matrix it shares in full.
  if (l.weights_of) {
    const Layer& owner = g.layers[*l.weights_of];
    weights += static_cast<double>(InferenceTensorBytes(owner, owner.param_tensors.front(), spec, s, weight, rates));
  }
  // Experts: only those some token is routed to are read. With n tokens each picking k of E,
  // E · (1 - (1 - k/E)^n) experts are touched on average (uniform routing).
  if (l.n_experts > 0) {
    const double e = static_cast<double>(l.n_experts), k = static_cast<double>(l.active_experts);
    const double tokens = static_cast<double>(l.shape[0] * l.shape[1]);
    weights *= (1 - std::pow(1 - k / e, tokens));
    dequant *= (1 - std::pow(1 - k / e, tokens));
  }
  if (l.kind == LayerKind::kEmbedding) {
    // A lookup reads one row per token, not the table.
    const double rows = ShapeElements(l.shape);
    const std::optional<double> stored =
        rates != nullptr ? rates->PerElement(GraphRole(l.component, l.block_type >= 0)) : std::nullopt;
    c.bytes = rows * stored.value_or(BytesPerElement(weight)) + rows * act;
    c.flops = static_cast<double>(l.non_matmul_flops);
    return c;
  }
  for (const Gemm& gemm : l.gemms) {
    const double count = static_cast<double>(gemm.count);
    const double flops = static_cast<double>(GemmForwardFlops(gemm, l.path)) / tp * share;
    c.flops += flops;
    if (shaped) {
      // The product as it runs on a device: m rows (the head's one position a sequence), its output
      // or input split by tensor parallelism.
      const double m = static_cast<double>(gemm.m) * share;
      double n = static_cast<double>(gemm.n), k = static_cast<double>(gemm.k);
      (RowParallel(l) ? k : n) /= tp;
      const double power = 1 - power_weight * (1 - GemmPowerFactor(*shaped, m, n, k));
      c.shaped_flops += flops / (GemmShapeFactor(*shaped, m, n, k) * power *
                                 GemmAlignmentFactor(*shaped, static_cast<uint64_t>(n), static_cast<uint64_t>(k)));
    }
    c.bytes += (static_cast<double>(gemm.m) * static_cast<double>(gemm.k) +
                static_cast<double>(gemm.m) * static_cast<double>(gemm.n)) *
               count / tp * share * act;
  }
  // An elementwise op reads and writes its device's share of its elements (inference runs no
  // sequence parallelism).
  if (l.gemms.empty()) c.bytes += 2 * OpElements(l) / ElementwiseTpShards(l, s.tp, false) * act;
  // A recurrent node also reads and writes its state, once per pass (a decode step's whole memory
  // traffic besides the weights: mamba_ssm's selective_state_update).
  if (l.state_elements_per_sequence > 0) {
    c.bytes += 2 * static_cast<double>(l.state_elements_per_sequence) * static_cast<double>(l.shape[0]) * act;
  }
  c.flops += static_cast<double>(l.non_matmul_flops) / tp * share;
  c.shaped_flops += static_cast<double>(l.non_matmul_flops) / tp * share;
  c.bytes += weights;
  c.dequant_bytes = dequant;
  if (dequant > 0) {
    for (const Gemm& gemm : l.gemms)
      c.dequant_flops += static_cast<double>(GemmForwardFlops(gemm, l.path)) / tp * share;
  }
  return c;
}

// tinygemm was measured at 4 bits (kernel_costs.h); other widths have no figure.
void CheckDequantKernel(const ModelSpec& spec, const Settings& s) {
  if (s.dequant_kernel != DequantKernel::kTinygemm) return;
  const std::optional<QuantizationSpec> q = WeightQuantization(spec, s);
  if (q && WeightOnly(*q) && WeightBits(*q) != 4) {
    throw InputError("--dequant-kernel: tinygemm runs 4-bit weights; '" + spec.name + "' stores " +
                     std::to_string(WeightBits(*q)) + "-bit weights (" + QuantizationPhrase(*q) + "); use marlin");
  }
}

// The fixed time of the kernel a node runs as (one per node; a fused attention's scores, softmax
// and context are one kernel, charged at its scores).
double KernelFloor(const Layer& l, const Settings& s, const KernelFloors& f) {
  if (l.kind == LayerKind::kLoss) return 0;
  if (l.component == Component::kAttentionCore) {
    if (s.attention == Attention::kFlash) return l.kind == LayerKind::kAttentionScores ? f.attention : 0;
    return l.gemms.empty() ? f.elementwise : f.attention;
  }
  return l.gemms.empty() ? f.elementwise : f.gemm;
}

}  // namespace

GemmDType ComputeDtype(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return GemmDType::kFp32;
    // fp32 tensors whose GEMMs round their inputs to TF32 on the tensor cores (PyTorch's
    // torch.backends.cuda.matmul.allow_tf32 / set_float32_matmul_precision("high"); Hugging Face's --tf32).
    case Precision::kTf32:
      return GemmDType::kTf32;
    case Precision::kFp16:
    case Precision::kMixedFp16:
    case Precision::kAmpFp16:
      return GemmDType::kFp16;
    case Precision::kBf16:
    case Precision::kMixedBf16:
    case Precision::kAmpBf16:
      return GemmDType::kBf16;
    case Precision::kFp8:
      return GemmDType::kFp8;
  }
  return GemmDType::kBf16;
}

namespace {

// The pass with its shaped GEMMs `power_weight` of the way to their power-limited rates.
Roofline RooflineAt(const LayerGraph& graph, const ModelSpec& spec, const Settings& s, const RooflineRates& r,
                    double power_weight) {
  Roofline out;
  double tensor = 0;  // the compute-bound GEMMs' and attention kernels' time
  const DType weight = InferenceWeightDtype(spec, s);
  const double act = BytesPerElement(s.dtypes.activation);
  const std::optional<CheckpointRates> rates =
      UsesCheckpointWeights(spec, s) ? std::optional(CheckpointRatesOf(*spec.checkpoint, graph)) : std::nullopt;
  for (const Layer& l : graph.layers) {
    // A decode step of an encoder–decoder runs no encoder: its output's K and V are cached.
    // Nor does a prefill without images (--images 0) run the vision tower and projector.
    const bool no_images =
        graph.images == uint64_t{0} && (l.component == Component::kVision || l.component == Component::kProjector);
    // Nor do Gemma 3n's towers, counted as their weights alone (graph/build_gemma3n.cc): loaded,
    // never run, their weights not read.
    const bool weights_only = (l.component == Component::kVision || l.component == Component::kAudio) &&
                              l.gemms.empty() && l.non_matmul_flops == 0;
    if ((l.source_side && s.context) || no_images || weights_only) {
      out.nodes.push_back({.path = l.path, .repeat = l.repeat});
      continue;
    }
    // The block matrices' GEMMs run at linear_peak in its dtype (W8A8: fp8), and roll off by its shapes.
    const bool block_matrix =
        l.kind == LayerKind::kLinear && l.block_type >= 0 && l.component != Component::kRouter && r.linear_peak > 0;
    const std::optional<GemmDType> shaped = r.shaped && block_matrix ? std::optional(GemmDType::kFp8) : r.shaped;
    OpCost c = NodeCost(l, graph, spec, s, weight, rates ? &*rates : nullptr, shaped, power_weight);
    if (!r.shaped || l.gemms.empty() || l.component == Component::kAttentionCore) c.shaped_flops = c.flops;
    // A node of a repeated block stands for `repeat` identical ops.
    c.flops *= static_cast<double>(l.repeat);
    c.bytes *= static_cast<double>(l.repeat);
    double compute = c.shaped_flops * static_cast<double>(l.repeat) /
                     (block_matrix ? r.linear_peak * (r.linear_mfu > 0 ? r.linear_mfu : r.mfu) : r.peak * r.mfu);
    // A weight-only quantized GEMM (kernel_costs.h, DequantKernelCost): its stored bytes at its
    // kernel's share of the bf16 GEMMs' bandwidth; its FLOPs at its kernel's rate where that binds.
    const double dequant_bytes = c.dequant_bytes * static_cast<double>(l.repeat);
    if (c.dequant_flops > 0 && r.dequant.compute > 0) {
      compute = std::max(compute, c.dequant_flops * static_cast<double>(l.repeat) / (r.peak * r.dequant.compute));
    }
    const double memory =
        (c.bytes - dequant_bytes) / (r.bandwidth * r.mbu) + dequant_bytes / (r.bandwidth * r.mbu * r.dequant.bandwidth);
    // A node with no work here (a cross-attention K/V projection in a decode step) runs no kernel.
    const double floor = c.bytes > 0 || c.flops > 0 ? KernelFloor(l, s, r.floors) * static_cast<double>(l.repeat) : 0;
    out.nodes.push_back({l.path, l.repeat, c.flops, c.bytes, compute, memory});
    out.flops += c.flops;
    out.bytes += c.bytes;
    out.compute_seconds += compute;
    out.memory_seconds += memory;
    // A kernel's fixed time adds to its streaming (decode_sweep.py: t = floor + bytes / rate); a
    // compute-bound GEMM's measured efficiency already holds it.
    out.seconds += std::max(compute, memory + floor);
    out.floor_seconds += compute > memory + floor ? 0 : floor;
    if (compute > memory + floor && (!l.gemms.empty() || l.component == Component::kAttentionCore)) tensor += compute;
    if (l.kind == LayerKind::kLinear) {
      out.gemm_compute_seconds += compute;
      out.gemm_memory_seconds += memory;
    }
    // An all-reduce of the output across the tensor-parallel group, by NCCL's α–β model
    // (estimate/collectives.h): at a decode step's few kilobytes its latency is all of it.
    if (s.tp > 1 && RowParallel(l)) {
      if (r.interconnect <= 0) throw InputError("--tp: the hardware has no interconnect bandwidth for all-reduces");
      const double rep = static_cast<double>(l.repeat);
      out.allreduce_seconds +=
          CollectiveSeconds(Collective::kAllReduce, static_cast<double>(s.tp), ShapeElements(l.shape) * act * rep, rep,
                            {.bandwidth = r.interconnect, .nvls = r.nvls});
    }
  }
  out.seconds += out.allreduce_seconds;
  out.tensor_duty = out.seconds > 0 ? tensor / out.seconds : 0;
  out.power_weight = power_weight;
  return out;
}

}  // namespace

Roofline ForwardRoofline(const LayerGraph& graph, const ModelSpec& spec, const Settings& s, const RooflineRates& r) {
  CheckDequantKernel(spec, s);
  const auto at = [&](double weight) { return RooflineAt(graph, spec, s, r, weight); };
  if (!r.power_limited || !r.shaped) return at(0);
  auto [burst, out] = SettleAtPowerLimit(*r.shaped, at);
  out.power_limit_seconds = out.seconds - burst.seconds;
  return out;
}

}  // namespace tally
