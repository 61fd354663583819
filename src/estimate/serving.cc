#include "estimate/serving.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "estimate/defaults.h"
#include "estimate/expert_parallel.h"
#include "estimate/kv_cache.h"
#include "estimate/memory.h"
#include "estimate/power_limit.h"
#include "estimate/step_timeline.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace tally {

uint64_t VllmMaxBatchedTokens(uint64_t device_memory, std::string_view device_name) {
  // vLLM measured that the larger budget lowers an A100's throughput (vLLM PR #17885), hence the name check.
  const bool large = device_memory >= (uint64_t{70} << 30) && device_name.find("a100") == std::string_view::npos;
  return large ? 8192 : 2048;
}

uint64_t VllmMaxNumSeqs(uint64_t device_memory, std::string_view device_name) {
  return VllmMaxBatchedTokens(device_memory, device_name) == 8192 ? 1024 : 256;
}

Settings WithServingDefaults(Settings s, uint64_t device_memory, std::string_view device_name) {
  if (!s.kv_block) s.kv_block = kVllmKvBlock;
  if (!s.gpu_memory_utilization) s.gpu_memory_utilization = kVllmGpuMemoryUtilization;
  // Chunked prefill takes fused attention; an eager run keeps its whole-batch prefill.
  if (!s.max_batched_tokens && s.attention == Attention::kFlash) {
    s.max_batched_tokens = VllmMaxBatchedTokens(device_memory, device_name);
  }
  return s;
}

KvCapacity KvTokenCapacity(const ModelSpec& spec, const Settings& s, const MemoryModel& model, uint64_t limit,
                           uint64_t batch) {
  KvCapacity c;
  // The ledger with no cache: weights and activations of the most-loaded stage.
  const InferMemory m = InferenceMemory(spec, s, model, batch);
  const uint64_t placed = CheckedAdd(m.weights, m.activations, "the memory ledger");
  // The overhead (--overhead) grows with the cache: (placed + kv) (1 + f) + bytes <= limit, less the
  // runtime's own memory (the CUDA context, cuBLAS's workspace: estimate/step_timeline.h).
  const double runtime = static_cast<double>(InferenceOverheads(s, 0).Total());
  const double room =
      (static_cast<double>(limit) - runtime - static_cast<double>(s.overhead_bytes)) / (1 + s.overhead_fraction) -
      static_cast<double>(placed);
  c.free_bytes = room > 0 ? static_cast<uint64_t>(std::floor(room)) : 0;
  const uint64_t page = s.kv_block.value_or(1);
  for (uint64_t stage = 0; stage < s.pp; ++stage) {
    // A page holds `page` tokens in every layer: a window shorter than a page still takes a whole one.
    c.page_bytes = std::max(c.page_bytes, KvCacheBytes(model, page, 1, s, stage));
  }
  if (c.page_bytes == 0) return c;
  c.pages = c.free_bytes / c.page_bytes;
  c.tokens = CheckedMul(c.pages, page, "the KV tokens");
  return c;
}

RooflineRates InferenceRates(const HardwareSpec& hw, const Settings& s, std::optional<double> mfu,
                             std::optional<double> mbu, bool power_limit) {
  if (ExpertGrid(s)) {
    throw InputError(std::string(s.ep > 1 ? "--ep" : "--etp") +
                     ": inference latency under expert parallelism is not modelled (the roofline has no "
                     "all-to-all and reads every expert on each device); 'tally memory --mode infer --ep' gives its "
                     "memory");
  }
  const GemmDType dtype = ComputeDtype(s.precision);
  std::optional<double> peak = hw.Peak(dtype);
  if (!peak || *peak <= 0) {
    throw InputError(std::string("--hardware: ") + hw.name + " lists no dense " + Name(dtype) +
                     " peak for --precision " + PrecisionName(s.precision) + "; choose another precision or device");
  }
  RooflineRates r{*peak, mfu.value_or(kDefaultMfu), hw.memory_bandwidth, DecodeMbu(hw, mbu),
                  hw.IntraNodeCollectiveBandwidth()};
  r.nvls = hw.nvls;
  if (hw.kind == "gpu") {
    r.floors = kGpuKernelFloors;
    r.dequant = DequantCostOf(
        s.dequant_kernel.value_or(DequantKernel::kMarlin));  // GPU kernels; elsewhere weights stream as bf16's
  }
  // Without --mfu, a device whose GEMM efficiency the catalog gives runs each GEMM at its shape's
  // share of it, as a training step does (estimate/gemm_shape.h).
  const auto efficiency = hw.gemm_efficiency.find(dtype);
  if (!mfu && efficiency != hw.gemm_efficiency.end()) {
    r.mfu = efficiency->second;
    r.shaped = dtype;
    r.power_limited = power_limit && PowerLimitPriced(hw, dtype);
  }
  if (s.quant == Quant::kFp8) {
    if (std::optional<double> fp8 = hw.Peak(GemmDType::kFp8); fp8 && *fp8 > 0) r.linear_peak = *fp8;
    const auto fp8_efficiency = hw.gemm_efficiency.find(GemmDType::kFp8);
    if (r.shaped && fp8_efficiency != hw.gemm_efficiency.end()) r.linear_mfu = fp8_efficiency->second;
  }
  return r;
}

double DecodeMbu(const HardwareSpec& hw, std::optional<double> mbu) {
  if (mbu) return *mbu;
  return hw.decode_bandwidth_efficiency > 0 ? hw.decode_bandwidth_efficiency : kDefaultMbu;
}

Roofline DecodeStep(Evaluation& ev, const Settings& s, const RooflineRates& rates, uint64_t batch, uint64_t context) {
  // Inference runs without dropout; one causal query per sequence against the cache.
  Settings step = s;
  step.batch = step.micro_batch = batch;
  // An encoder–decoder keeps its source (--seq): the decoder takes the one token.
  (ev.spec().transformer.encoder_layers > 0 ? step.target_seq : step.seq) = 1;
  step.context = context;
  step.dropout = 0.0;
  step.causal = true;
  return ForwardRoofline(*ev.Graph(GraphSettingsOf(step)), ev.spec(), step, rates);
}

std::optional<uint64_t> DecodeComputeBoundBatch(Evaluation& ev, const Settings& s, const RooflineRates& rates,
                                                uint64_t context, bool gemm, uint64_t cap) {
  auto compute_bound = [&](uint64_t batch) {
    const Roofline r = DecodeStep(ev, s, rates, batch, context);
    return gemm ? r.gemm_compute_seconds >= r.gemm_memory_seconds : r.compute_seconds >= r.memory_seconds;
  };
  // compute - memory is convex in the batch (compute and KV reads linear in it, the experts read
  // E (1 - (1 - k/E)^n) concave) and negative at batch 0 (weights are read, nothing computed), so it
  // changes sign at most once: the compute-bound batches are [b, inf). Double, then bisect.
  uint64_t hi = 1;
  while (hi < cap && !compute_bound(hi)) hi = std::min(cap, hi * 2);
  if (!compute_bound(hi)) return std::nullopt;
  uint64_t lo = hi / 2;  // memory-bound (or 0)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (compute_bound(mid) ? hi : lo) = mid;
  }
  return hi;
}

ServingEstimate EstimateServing(Evaluation& ev, const Settings& s, uint64_t limit, uint64_t max_seqs,
                                const HardwareSpec* hw) {
  ServingEstimate out;
  const auto summary = ev.Summary(s);
  out.kv = KvTokenCapacity(ev.spec(), s, summary->memory, limit, s.batch);
  out.max_seqs = max_seqs;
  out.context = summary->seq;
  out.on_device = hw != nullptr;
  if (hw == nullptr || ExpertGrid(s)) return out;  // InferenceRates refuses --ep
  ServingEstimate::Decode d{.mfu = kDefaultMfu, .mbu = DecodeMbu(*hw, std::nullopt)};
  const RooflineRates rates = InferenceRates(*hw, s, std::nullopt, std::nullopt);
  d.mfu = rates.mfu;
  d.seconds = DecodeStep(ev, s, rates, s.batch, out.context).seconds;
  d.tokens_per_second = static_cast<double>(s.batch) / d.seconds;
  d.compute_bound_batch = DecodeComputeBoundBatch(ev, s, rates, out.context, false);
  out.decode = d;
  return out;
}

}  // namespace tally
