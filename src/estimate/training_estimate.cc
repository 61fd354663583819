#include "estimate/training_estimate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/hardware.h"
#include "config/names.h"
#include "config/resolve.h"
#include "estimate/context_parallel.h"
#include "estimate/defaults.h"
#include "estimate/expert_parallel.h"
#include "estimate/memory.h"
#include "estimate/offload.h"
#include "estimate/params.h"
#include "estimate/roofline.h"
#include "estimate/step_timeline.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

double PeakFor(const HardwareSpec& hw, const Settings& s) {
  const GemmDType dtype = ComputeDtype(s.precision);
  std::optional<double> peak = hw.Peak(dtype);
  if (!peak || *peak <= 0) {
    throw InputError(std::string("--hardware: ") + hw.name + " lists no dense " + Name(dtype) +
                     " peak for --precision " + PrecisionName(s.precision) + "; choose another precision or device");
  }
  return *peak;
}

// The FLOPs of one replica's optimizer step: the model's (attention whole, as Megatron, PaLM and
// NeMo count them for MFU) and the kernels' (recomputation included; a decoder's causal kernels skip
// the masked half unless --no-causal, or --causal, which halves both).
struct StepFlops {
  uint64_t model = 0;
  uint64_t hardware = 0;
  uint64_t tokens = 0;  // per replica
  Settings kernels;     // the settings the kernels run at: causal where they skip the masked half
};

StepFlops StepFlopsOf(Evaluation& ev, const Settings& s, const GraphSummary& summary, bool causal_kernels) {
  StepFlops out;
  const FlopCounts f = ScaleFlops(summary.flops, s.batch);
  out.model = CheckedAdd(f.forward, f.backward, "the FLOPs of a step");
  out.kernels = s;
  out.kernels.causal = out.kernels.causal || causal_kernels;
  const auto executed = causal_kernels ? ev.Summary(out.kernels) : nullptr;
  const GraphSummary& run = executed ? *executed : summary;
  const FlopCounts h = ScaleFlops(run.flops, s.batch);
  out.hardware = CheckedAdd(CheckedAdd(h.forward, h.backward, "the FLOPs of a step"),
                            RecomputeFlopsOf(run, out.kernels), "the FLOPs of a step");
  out.tokens = ev.spec().family == Family::kTransformer ? CheckedMul(s.batch, summary.seq, "the tokens") : s.batch;
  return out;
}

// The step modelled from its parts (estimate/step_model.h) at the micro-batch.
ModelledStep ModelStep(Evaluation& ev, const Settings& s, const TimeRequest& req, const HardwareSpec& hw,
                       const StepFlops& flops, bool causal_kernels, double peak, double efficiency,
                       const GraphSummary& summary) {
  GraphSettings micro = GraphSettingsOf(flops.kernels);
  micro.batch = s.micro_batch;
  // Eager attention computes the masked half and then masks it; only the fused kernel skips it.
  micro.causal = s.causal || (causal_kernels && s.attention == Attention::kFlash);
  const TrainMemory ledger = TrainingMemory(s, summary.memory);
  const OffloadTraffic traffic = OffloadBytes(ledger, s, summary.memory.n_layers);
  if (const double most = MostMoeImbalance(ev.spec(), s); s.ep > 1 && req.train.moe_imbalance > most) {
    const TransformerSpec& t = ev.spec().transformer;
    const uint64_t local = t.n_experts / s.ep;
    throw InputError("--moe-imbalance: at most " + FormatDouble(most) + " with --ep " + std::to_string(s.ep) +
                     ": a rank's " + std::to_string(local) + " of the " + std::to_string(t.n_experts) +
                     " experts take at most " + std::to_string(std::min(t.top_k, local)) + " of a token's " +
                     std::to_string(t.top_k) + " copies, where the mean is top_k / ep = " +
                     FormatDouble(static_cast<double>(t.top_k) / static_cast<double>(s.ep)));
  }
  ModelledStep m;
  m.gpus_per_node = req.train.gpus_per_node;
  m.host_bandwidth = hw.host_bandwidth;
  const RingExchange ring = RingOf(ev.spec(), s);
  m.time = TrainingStep(*ev.Graph(micro), s, hw, peak, efficiency, summary.params.trainable,
                        {.gpus_per_node = req.train.gpus_per_node,
                         .vp = req.train.vp,
                         .kernels = req.train.kernels,
                         .schedule = req.train.schedule,
                         .tp_overlap = req.train.tp_overlap,
                         .dp_overlap = req.train.dp_overlap,
                         .ep_overlap = req.train.ep_overlap,
                         .ep_dispatch = req.train.ep_dispatch,
                         .dp_bucket = req.train.dp_bucket,
                         .dp_bucket_params = req.train.dp_bucket_params,
                         .param_gather_overlap = req.train.param_gather_overlap,
                         .moe_imbalance = req.train.moe_imbalance,
                         .fp8_recipe = req.train.fp8_recipe,
                         .power_limit = req.train.power_limit,
                         .mbu = req.mbu.value_or(kDefaultMbu),
                         .offload = traffic,
                         .host_bandwidth = hw.host_bandwidth,
                         .ring = ring});
  m.ep_all_to_alls = ExpertAllToAllsPerBlock(*summary.graph, s);
  m.ep_intra_node = s.expert_tp() * s.ep <= req.train.gpus_per_node;
  m.ep_dispatch = req.train.ep_dispatch;
  m.dp_bucket = req.train.dp_bucket;
  m.moe_imbalance = s.ep > 1 ? req.train.moe_imbalance : 1;
  if (ExpertGrid(s)) {
    m.expert_dp = ExpertDataParallel(s);
    m.gradient_ranks = GradientRanks(s);
  }
  const double micro_batches = static_cast<double>(s.grad_accum());
  m.offload_down_bytes = traffic.down_per_micro * micro_batches;
  m.offload_up_bytes = traffic.up_per_micro * micro_batches + traffic.up_per_step;
  m.devices_per_node = std::min<uint64_t>(req.train.gpus_per_node, s.gpus);
  m.host_bytes = ledger.host;
  m.cp_hop_bytes = ring.hop_bytes;
  return m;
}

// What follows from the budget: the offload's host memory per node, the notes, energy, cost and the fit.
void Finish(const HardwareSpec& hw, const Settings& s, const TrainQuery& query, const GraphSummary& summary,
            TrainingEstimate& e) {
  const ParamCounts& params = summary.params;
  if (e.step && s.offload != Offload::kNone) {
    e.step->host_bytes_per_node = CheckedMul(e.step->host_bytes, e.step->devices_per_node, "host memory");
    e.notes.push_back(
        "--offload: the optimizer step runs on the host's CPUs, which the catalog does not describe; the step time "
        "leaves it out (time.breakdown.offload is PCIe time only)");
  }
  if (e.step && params.active != params.total && s.ep == 1) {
    e.notes.push_back(
        "mixture of experts: the modelled step counts the experts' GEMMs but no expert-parallel "
        "all-to-all (experts are taken as replicated on each device or split by --tp; --ep splits them)");
  }
  if (e.step && LoraAdaptersInFp32(s) &&
      !(hw.Peak(GemmDType::kFp32) && hw.gemm_efficiency.count(GemmDType::kFp32) > 0)) {
    e.notes.push_back("--lora-dtype fp32: " + hw.name +
                      " gives no fp32 GEMM rate (peak_flops.fp32 and gemm_efficiency.fp32), so the adapters' "
                      "fp32 GEMMs are priced at the " +
                      Name(e.dtype) + " rate, faster than they run");
  }
  // The flags that shape the modelled step change nothing where no step is modelled (--mfu,
  // --achieved, or a device without the dtype's GEMM efficiency): say so rather than drop them.
  if (!e.step) {
    std::string unused;
    int count = 0;
    for (const auto& [flag, set] : {std::pair{"--tp-overlap", query.tp_overlap},
                                    {"--no-dp-overlap", !query.dp_overlap},
                                    {"--ep-overlap", query.ep_overlap},
                                    {"--ep-dispatch", query.ep_dispatch != EpDispatch::kAllToAll},
                                    {"--dp-bucket", query.dp_bucket != DpBucket::kDdp},
                                    {"--overlap-param-gather", query.param_gather_overlap},
                                    {"--moe-imbalance", query.moe_imbalance != 1},
                                    {"--fp8-recipe", query.fp8_recipe != Fp8Recipe::kTensorwise},
                                    {"--no-power-limit", !query.power_limit}}) {
      if (set) unused += (count++ == 0 ? "" : ", ") + std::string(flag);
    }
    if (!unused.empty()) {
      e.notes.push_back(unused + ": the step is not modelled from its parts here (" +
                        (query.mfu || query.achieved
                             ? std::string("--mfu or --achieved sets the rate")
                             : "the device gives no GEMM efficiency for " + std::string(Name(e.dtype))) +
                        (count == 1 ? "), so it changes nothing" : "), so they change nothing"));
    }
  }
  if (e.step && query.fp8_recipe != Fp8Recipe::kTensorwise && s.precision != Precision::kFp8) {
    e.notes.push_back(std::string("--fp8-recipe ") + Name(query.fp8_recipe) +
                      " changes nothing without --precision fp8: only fp8 linears cast their tensors");
  }
  // group_link (estimate/step_model.cc) takes a pipeline stage's devices as whole nodes or part of one.
  const uint64_t stage = s.tp * GradientRanks(s), per_node = query.gpus_per_node;
  const bool ragged_stage = s.gpus > per_node && stage % per_node != 0 && per_node % stage != 0;
  const bool ragged_groups = stage > per_node && s.tp < per_node && per_node % s.tp != 0;
  if (e.step && GradientRanks(s) > 1 && (ragged_stage || ragged_groups)) {
    e.notes.push_back("a pipeline stage's tp x cp x dp = " + std::to_string(stage) + " devices (tp " +
                      std::to_string(s.tp) + ") do not fall evenly into nodes of --gpus-per-node " +
                      std::to_string(per_node) +
                      ": some data-parallel groups straddle nodes or hold fewer members in one, and their link is "
                      "priced as if each node held --gpus-per-node / tp of them");
  }
  if (e.step && query.param_gather_overlap && s.zero != 1 && s.zero != 2) {
    e.notes.push_back(
        "--overlap-param-gather changes nothing without --zero 1 or 2: only a sharded optimizer "
        "all-gathers the updated weights after its step");
  }
  if (e.step && query.dp_bucket != DpBucket::kDdp && e.step->time.dp_bucket_bytes <= 0) {
    e.notes.push_back("--dp-bucket changes nothing here: no data-parallel group reduces gradients");
  }
  if (e.step && query.moe_imbalance > 1 && s.ep == 1) {
    e.notes.push_back(
        "--moe-imbalance changes nothing without --ep: every device computes every expert's tokens (or its "
        "--etp slice of them), so no device waits for a busier one");
  }
  // An expert group smaller than a node that does not divide it: some groups straddle two nodes, yet
  // ExpertAllToAllSeconds puts min(ep, nodes' ranks) of each in one node.
  const uint64_t expert_group = s.ep * s.expert_tp();
  if (e.step && s.ep > 1 && s.gpus > per_node && expert_group < per_node && per_node % expert_group != 0) {
    e.notes.push_back("an expert group's ep x etp = " + std::to_string(expert_group) +
                      " devices do not fall evenly into nodes of --gpus-per-node " + std::to_string(per_node) +
                      ": some groups straddle two nodes, and their all-to-all is priced as if each sat in one");
  }
  if (query.ep_dispatch == EpDispatch::kDeepEp && s.ep * s.expert_tp() <= query.gpus_per_node) {
    e.notes.push_back("--ep-dispatch deepep changes nothing here: the expert group (ep x etp = " +
                      std::to_string(s.ep * s.expert_tp()) +
                      " devices) fits one node, where DeepEP's all-to-all moves what NCCL's does");
  }
  if (e.device() && hw.board_power_w > 0) {
    e.energy_kwh = e.time.gpu_hours * hw.board_power_w * kPowerUtilization / 1000;
  }
  if (query.price) {
    e.cost = e.time.gpu_hours * *query.price;
    if (!std::isfinite(*e.cost)) {
      throw InputError("--price: " + FormatDouble(e.time.gpu_hours) + " device-hours x " + FormatDouble(*query.price) +
                       " is past the largest number tally prints; give a price per device-hour");
    }
  }
  if (!e.device()) return;
  // The memory fit at the devices the answer uses (ZeRO shards over them).
  Settings at = s;
  at.gpus = e.time.gpus_needed;
  e.fit = CheckFit(TrainingStepMemory(summary.memory, at, TrainingMemory(at, summary.memory), false).device, hw, s,
                   "training", e.notes);
}

}  // namespace

TimeFit CheckFit(uint64_t needed, const HardwareSpec& hw, const Settings& s, const char* what,
                 std::vector<std::string>& notes) {
  const uint64_t limit = UsableMemory(hw, s);
  const TimeFit fit{.needed = needed, .limit = limit, .fits = needed <= limit};
  if (!fit.fits) {
    notes.push_back(std::string(what) + " needs " + FormatBytes(needed, UnitSystem::kIec) + " per device; " + hw.name +
                    " leaves " + FormatBytes(fit.limit, UnitSystem::kIec) +
                    (s.reserve.value_or(0) > 0 ? " after the --reserve" : "") +
                    ": it does not fit (see 'tally memory')");
  }
  return fit;
}

TrainingEstimate EstimateTraining(Evaluation& ev, const Settings& s, const TimeRequest& given) {
  static const HardwareSpec kNoDevice;
  const HardwareSpec& hw = s.device != nullptr ? *s.device : kNoDevice;
  // A node is what --gpus-per-node says, else the devices one scale-up link joins on this device
  // (a GB200 NVL72 rack's 72), else an HGX board's 8.
  TimeRequest req = given;
  if (req.train.gpus_per_node == 0) req.train.gpus_per_node = hw.gpus_per_node > 0 ? hw.gpus_per_node : 8;
  TrainingEstimate e;
  e.settings = &s;
  e.hardware = hw.name;
  e.source = hw.source;
  e.dtype = ComputeDtype(s.precision);
  e.achieved = req.train.achieved;
  if (!e.device() && !e.achieved) throw std::logic_error("EstimateTraining: no device and no --achieved rate");
  const auto summary = ev.Summary(s);
  // An encoder's attention is bidirectional: nothing is masked.
  const bool transformer = ev.spec().family == Family::kTransformer;
  e.causal_kernels = transformer && !ev.spec().transformer.encoder && s.causal_kernels && !s.causal;
  const StepFlops flops = StepFlopsOf(ev, s, *summary, e.causal_kernels);
  e.peak = e.device() ? PeakFor(hw, s) : 0;
  // The step modelled from its parts where the catalog gives the GEMM efficiency for the compute
  // dtype and no throughput is given (--mfu or --achieved override the whole).
  TrainQuery query = req.train;
  if (query.vp > 1 && s.pp == 1) throw InputError("--vp: interleaved stages need --pp > 1");
  const auto efficiency = hw.gemm_efficiency.find(e.dtype);
  if (!query.mfu && !query.achieved && efficiency != hw.gemm_efficiency.end()) {
    e.step = ModelStep(ev, s, req, hw, flops, e.causal_kernels, e.peak, efficiency->second, *summary);
    query.step_seconds = e.step->time.step_seconds;
  } else if (s.offload != Offload::kNone) {
    throw InputError(query.mfu || query.achieved
                         ? std::string("--offload: its transfers are timed in the modelled step, which --mfu and "
                                       "--achieved replace; drop them")
                         : "--offload: its transfers are timed in the modelled step, and " + hw.name +
                               " lists no gemm_efficiency for " + Name(e.dtype) + " to model it");
  } else if (e.device() && !query.mfu && !query.achieved) {
    e.notes.push_back(hw.name + " lists no gemm_efficiency for " + Name(e.dtype) +
                      ": the step is not modelled from its parts; MFU " + FormatDouble(kDefaultMfu) +
                      " assumed (--mfu sets it)");
  }
  e.throughput = query.achieved ? Throughput::kAchieved : e.step ? Throughput::kModelledStep : Throughput::kMfu;
  const ParamCounts& params = summary->params;
  e.time = TrainingTime(flops.model, flops.hardware, flops.tokens, s.tp * s.pp * s.cp, params.total, params.active,
                        e.peak, query, s.gpus);
  Finish(hw, s, query, *summary, e);
  return e;
}

}  // namespace tally
