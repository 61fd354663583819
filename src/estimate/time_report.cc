#include "estimate/time_report.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/hardware.h"
#include "config/resolve.h"
#include "estimate/context_parallel.h"
#include "estimate/evaluation.h"
#include "estimate/expert_parallel.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "estimate/serving.h"
#include "estimate/step_time.h"
#include "util/checked_math.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr double kDefaultMbu = 0.8;

double PeakFor(const HardwareSpec& hw, const Settings& s) {
  const GemmDType dtype = ComputeDtype(s.precision);
  std::optional<double> peak = hw.Peak(dtype);
  if (!peak || *peak <= 0) {
    throw InputError(std::string("--hardware: ") + hw.name + " lists no dense " + Name(dtype) +
                     " peak for --precision " + PrecisionName(s.precision) + "; choose another precision or device");
  }
  return *peak;
}

void CheckFit(uint64_t needed, const HardwareSpec& hw, const Settings& s, const char* what, Report& r) {
  const uint64_t limit = UsableMemory(hw, s);
  const bool fits = needed <= limit;
  r.Set("time.fits", std::string(what) + " fits in device memory", fits, Unit::kBool);
  if (!fits) {
    r.notes.push_back(std::string(what) + " needs " + FormatBytes(needed, UnitSystem::kIec) + " per device; " +
                      hw.name + " leaves " + FormatBytes(limit, UnitSystem::kIec) +
                      " after the --reserve: it does not fit (see 'tally memory')");
  }
}

// Mean power drawn while training as a fraction of the board's rated power: an assumption (GPUs
// under dense GEMM load run near, not at, their limit; Patterson et al. 2021 report measured mean
// draws below the rated TDP), stated in the report.
constexpr double kPowerUtilization = 0.8;

// --offload: the exposed host-link time, and what it comes from.
void AddOffload(const StepTime& st, const Settings& s, const HardwareSpec& hw, const TrainQuery& q,
                const TrainMemory& m, Report& r) {
  const OffloadTraffic t = OffloadBytes(m, s);
  const double micro = static_cast<double>(s.grad_accum);
  r.Set("time.breakdown.offload", "step: CPU offload (exposed)", st.offload, Unit::kSecond,
        "per micro-batch max(down, up) / host_bandwidth less that micro-batch's compute, at least 0 (a stream of "
        "its own: Ren et al. 2021, §4.2), x grad-accum" +
            std::string(s.offload == Offload::kOptimizer
                            ? "; + the updated weights' upload, exposed whole (the one-step delayed update is not "
                              "modelled)"
                            : "") +
            "; the CPU's optimizer step is left out (the catalog does not describe the host's CPUs)");
  r.Set("time.offload.transfer_seconds", "host-link transfers (whole)", st.offload_transfer, Unit::kSecond,
        "grad-accum x max(down, up) / host_bandwidth per micro-batch + upload / host_bandwidth");
  r.Set("time.offload.down_bytes", "device to host per step (gradients)", t.down_per_micro * micro, Unit::kByte,
        "the device's gradient partition (memory.train.host.gradients) x grad-accum: each micro-batch's gradients "
        "accumulate in host memory");
  r.Set("time.offload.up_bytes", "host to device per step (weights)", t.up_per_micro * micro + t.up_per_step,
        Unit::kByte,
        s.offload == Offload::kParams
            ? "the device's weight partition (memory.train.host.weights) x " +
                  std::string(s.recompute == Recompute::kFull ? "3 (forward, recompute, backward)"
                                                              : "2 (forward, backward)") +
                  " x grad-accum"
            : "the updated weights of the gradient partition at the weight dtype, once per step");
  r.Set("time.offload.host_bandwidth", "host link per device, per direction", hw.host_bandwidth, Unit::kBytePerSecond,
        "from " + hw.source + " (host_bandwidth)");
  const uint64_t per_node = std::min<uint64_t>(q.gpus_per_node, s.gpus);
  r.Set("time.offload.host_bytes_per_node", "host memory per node", CheckedMul(m.host, per_node, "host memory"),
        Unit::kByte,
        "memory.train.host.total x " + std::to_string(per_node) + " devices (--gpus-per-node, at most --gpus)");
}

// --ep: the MoE dispatch and combine all-to-alls (estimate/expert_parallel.h).
void AddExpertAllToAll(const StepTime& st, const Settings& s, const TrainQuery& q, Report& r) {
  const bool intra = s.tp * s.ep <= q.gpus_per_node;
  r.Set("time.breakdown.ep_all_to_all", "step: expert-parallel all-to-all", st.ep_comm, Unit::kSecond,
        "per MoE block and micro-batch " + FormatFixed(ExpertAllToAllsPerBlock(s), 0) +
            " all-to-alls (dispatch and combine, forward and backward" +
            (s.recompute == Recompute::kFull ? ", and the forward's again under --recompute full" : "") +
            "), each tokens x top_k x hidden x activation bytes" + (s.sp ? " / tp (--sp)" : "") +
            " x (ep - 1) / ep / " + (intra ? "intra" : "inter") +
            "-node bandwidth (tp x ep = " + std::to_string(s.tp * s.ep) + (intra ? " <= " : " > ") +
            "--gpus-per-node " + std::to_string(q.gpus_per_node) +
            "), x grad-accum, layers / pp per device; not overlapped (Lepikhin et al. 2020, GShard; Rajbhandari et "
            "al. 2022, DeepSpeed-MoE; Megatron-Core MoE docs, expert parallelism)");
}

// --cp: the ring's total and exposed seconds, and one hop's bytes.
void AddContextParallel(const StepTime& st, const ModelSpec& spec, const Settings& s, Report& r) {
  r.Set("time.breakdown.cp_ring", "step: context-parallel ring (exposed)", st.cp_exposed, Unit::kSecond,
        "per block on the slowest stage and micro-batch: max(0, forward hops - the block's attention core forward) "
        "+ max(0, backward hops - its backward) (+ the forward again under full recomputation); the hops overlap "
        "the blockwise attention of the chunk in hand (Liu et al. 2023, Ring Attention, §3)");
  r.Set("time.comm.cp_seconds", "context-parallel ring (whole)", st.cp_comm, Unit::kSecond,
        "(cp - 1) forward + 2 (cp - 1) backward hops (K,V gathered again and dK,dV reduce-scattered, as ring "
        "point-to-point: Megatron-LM docs, context_parallel) x hop bytes "
        "/ link bandwidth, per block and micro-batch; intra-node while tp x cp <= --gpus-per-node");
  const double hop = RingOf(spec, s).hop_bytes;
  r.Set("time.comm.cp_hop_bytes", "context-parallel hop (one K,V chunk)", hop, Unit::kByte,
        "2 x (seq / cp) x kv_heads / tp-shards x head_dim x activation bytes x micro-batch");
}

void AddBreakdown(const StepTime& st, const Settings& s, const HardwareSpec& hw, const TrainQuery& q,
                  const TrainMemory& ledger, Report& r) {
  r.Set("time.breakdown.compute", "step: compute", st.compute, Unit::kSecond,
        "per device: each GEMM (forward, dX, dW, recomputed forward) at max(FLOPs / (peak x gemm_efficiency x "
        "tile quantization), operands / (bandwidth x MBU)), tile quantization = m / (128 ceil(m / 128)) x "
        "n / (128 ceil(n / 128)) (NVIDIA, Matrix Multiplication Background); other ops at bandwidth x MBU (forward "
        "read + write, backward twice that); flash attention keeps the s x s scores on chip, runs at "
        "attention_efficiency "
        "where the device gives one (16-bit) and re-forms QK^T in its backward; layers / pp per device");
  r.Set("time.breakdown.communication", "step: exposed communication", st.communication, Unit::kSecond,
        "tensor-parallel + pipeline point-to-point + the data-parallel part not hidden under the backward" +
            std::string(s.ep > 1 ? " + the expert-parallel all-to-alls" : "") +
            std::string(s.cp > 1 ? " + the context-parallel ring's exposed part" : ""));
  if (s.ep > 1) AddExpertAllToAll(st, s, q, r);
  r.Set(
      "time.breakdown.pipeline_bubble", "step: pipeline bubble", st.pipeline_bubble, Unit::kSecond,
      "(p - 1) / vp stage-times of one micro-batch: fraction (p - 1) / (vp m + p - 1) of the step (1F1B; Narayanan et "
      "al. 2021, §2.2)");
  if (s.offload == Offload::kNone) {
    r.Set("time.breakdown.offload", "step: CPU offload", 0.0, Unit::kSecond, "no --offload");
  } else {
    AddOffload(st, s, hw, q, ledger, r);
  }
  r.Set("time.comm.tp_seconds", "tensor-parallel collectives", st.tp_comm, Unit::kSecond,
        "2 (t - 1) / t x activation bytes / link bandwidth per row-parallel linear, forward and backward (and a full "
        "recompute); sequence parallel: reduce-scatter + all-gather, the same volume; not overlapped");
  r.Set("time.comm.pp_seconds", "pipeline point-to-point", st.pp_comm, Unit::kSecond,
        "2 x micro-batch activation / tp / link bandwidth per micro-batch (x vp)");
  r.Set("time.comm.dp_seconds", "data-parallel gradient reduction (whole)", st.dp_comm, Unit::kSecond,
        "ring 2 (n - 1) / n x gradient bytes / link bandwidth" + std::string(s.cp > 1 ? ", n = dp x cp" : "") +
            " (ZeRO-2 and 3: also a gradient reduce-scatter, half that, in each earlier micro-batch; ZeRO-3 "
            "reduce-scatters "
            "only, plus a parameter all-gather per micro-batch forward and backward)" +
            (s.ep > 1 ? "; the routed experts' (1 / ep of them per device) over n = dp x cp / ep = " +
                            std::to_string(ExpertDataParallel(s)) + " ranks, the rest over " +
                            std::to_string(GradientRanks(s))
                      : std::string()));
  r.Set("time.comm.dp_exposed_seconds", "data-parallel: exposed", st.dp_exposed, Unit::kSecond,
        "max(last 25 MiB bucket, reduction - last micro-batch's backward); ZeRO-2/3: + each earlier micro-batch's "
        "reduce-scatter past its backward; ZeRO-3 gathers past the compute");
  r.Set("time.comm.intra_node_bandwidth", "intra-node link per device", st.intra_bandwidth, Unit::kBytePerSecond,
        "from " + hw.source + " (a group of up to --gpus-per-node " + std::to_string(q.gpus_per_node) +
            " devices stays inside a node)");
  r.Set("time.comm.inter_node_bandwidth", "inter-node link per device", st.inter_bandwidth, Unit::kBytePerSecond,
        "from " + hw.source);
  r.Set("time.gemm_efficiency", std::string("large-GEMM efficiency (") + Name(ComputeDtype(s.precision)) + ")",
        st.efficiency, Unit::kRatio, "from " + hw.source + " (gemm_efficiency)");
  r.Set("time.bubble_fraction", "pipeline bubble fraction of the step", st.bubble_fraction, Unit::kRatio);
}

// `hw` without a name: no device was named, only an --achieved rate (no peak, MFU, fit or energy).
void AddTraining(Evaluation& ev, const Settings& s, const TimeRequest& req, const HardwareSpec& hw, Report& r) {
  const bool device = !hw.name.empty();
  const auto summary = ev.Summary(s);
  const FlopCounts f = ScaleFlops(summary->flops, s.batch);
  const uint64_t model_step = CheckedAdd(f.forward, f.backward, "the FLOPs of a step");
  const bool transformer = ev.spec().family == Family::kTransformer;
  // Model FLOPs count attention whole, as Megatron, PaLM and NeMo do for MFU; a decoder's kernels
  // skip the masked half (causal flash attention), so the hardware FLOPs a rate is applied to do
  // too, unless --no-causal (or --causal, which halves both).
  // An encoder's attention is bidirectional: nothing is masked.
  const bool encoder = transformer && ev.spec().transformer.encoder;
  const bool causal_kernels = transformer && !encoder && s.causal_kernels && !s.causal;
  Settings kernels = s;
  kernels.causal = kernels.causal || causal_kernels;
  const auto executed = causal_kernels ? ev.Summary(kernels) : summary;
  const FlopCounts h = ScaleFlops(executed->flops, s.batch);
  const uint64_t hardware_step = CheckedAdd(CheckedAdd(h.forward, h.backward, "the FLOPs of a step"),
                                            RecomputeFlopsOf(*executed, kernels), "the FLOPs of a step");
  const uint64_t tokens_per_step =
      transformer ? CheckedMul(s.batch, summary->seq, "the tokens") : s.batch;  // per replica
  const double peak = device ? PeakFor(hw, s) : 0;
  const ParamCounts& params = summary->params;
  // The step modelled from its parts where the catalog gives the GEMM efficiency for the compute
  // dtype and no throughput is given (--mfu or --achieved override the whole).
  TrainQuery query = req.train;
  if (query.vp > 1 && s.pp == 1) throw InputError("--vp: interleaved stages need --pp > 1");
  std::optional<StepTime> step;
  std::optional<TrainMemory> ledger;  // the step's, for --offload's transfers
  const auto efficiency = hw.gemm_efficiency.find(ComputeDtype(s.precision));
  if (!query.mfu && !query.achieved && efficiency != hw.gemm_efficiency.end()) {
    GraphSettings micro = GraphSettingsOf(kernels);
    micro.batch = s.micro_batch;
    // Eager attention computes the masked half and then masks it; only the fused kernel skips it.
    micro.causal = s.causal || (causal_kernels && s.attention == Attention::kFlash);
    ledger = TrainingMemory(s, summary->memory);
    const OffloadTraffic traffic = OffloadBytes(*ledger, s);
    step = TrainingStep(*ev.Graph(micro), s, hw, peak, efficiency->second, params.trainable,
                        {.gpus_per_node = query.gpus_per_node,
                         .vp = query.vp,
                         .mbu = req.mbu.value_or(kDefaultMbu),
                         .offload = traffic,
                         .host_bandwidth = hw.host_bandwidth,
                         .ring = RingOf(ev.spec(), s)});
    query.step_seconds = step->step_seconds;
  } else if (s.offload != Offload::kNone) {
    throw InputError(query.mfu || query.achieved
                         ? std::string("--offload: its transfers are timed in the modelled step, which --mfu and "
                                       "--achieved replace; drop them")
                         : "--offload: its transfers are timed in the modelled step, and " + hw.name +
                               " lists no gemm_efficiency for " + Name(ComputeDtype(s.precision)) + " to model it");
  } else if (device && !query.mfu && !query.achieved) {
    r.notes.push_back(hw.name + " lists no gemm_efficiency for " + Name(ComputeDtype(s.precision)) +
                      ": the step is not modelled from its parts; MFU 0.4 assumed (--mfu sets it)");
  }
  const TrainTime t = TrainingTime(model_step, hardware_step, tokens_per_step, s.tp * s.pp * s.cp, params.total,
                                   params.active, peak, query, s.gpus);
  r.Group("time", device ? std::string("Training time on ") + hw.name : std::string("Training time at --achieved"));
  if (device) {
    r.Set("time.hardware", "device", hw.name, Unit::kText);
    r.Set("time.peak_flop_per_s", std::string("dense ") + Name(ComputeDtype(s.precision)) + " peak per device", peak,
          Unit::kFlopPerSecond, "from " + hw.source);
    r.Set("time.mfu", "MFU (model FLOPs / peak)", t.mfu, Unit::kRatio,
          req.train.achieved ? "achieved x model FLOPs / hardware FLOPs / peak"
          : step             ? "model FLOPs / (step time x devices x peak), from the modelled step"
                             : "as given (--mfu, default 0.4)");
    r.Set("time.hfu", std::string("HFU (") + (causal_kernels ? "causal kernels, " : "") + "with recomputation)", t.hfu,
          Unit::kRatio, "hardware FLOPs / (time x devices x peak); PaLM, App. B");
  } else {
    r.Set("time.achieved_flop_per_s", "achieved FLOP/s per device (--achieved)", *req.train.achieved,
          Unit::kFlopPerSecond, "as given; no device named, so no peak, MFU or memory fit");
  }
  r.Set("time.tokens", "tokens", t.tokens, Unit::kCount);
  r.Set("time.train_seconds", "training time", t.seconds, Unit::kSecond,
        step ? "steps x the modelled step time (time.breakdown)"
             : "model FLOPs / (devices x peak x MFU), or hardware FLOPs / (devices x achieved)");
  r.Set("time.gpus", "devices", t.gpus_needed, Unit::kNumber);
  if (std::fabs(t.gpus - static_cast<double>(t.gpus_needed)) > 1e-9) {
    r.Set("time.gpus_exact", "devices (exact, before rounding up)", t.gpus, Unit::kRatio);
  }
  r.Set("time.steps", "optimizer steps", t.steps, Unit::kCount);
  r.Set("time.step_seconds", "per step", t.step_seconds, Unit::kSecond);
  if (step) AddBreakdown(*step, s, hw, query, *ledger, r);
  if (step && s.cp > 1) AddContextParallel(*step, ev.spec(), s, r);
  if (step && s.offload != Offload::kNone) {
    r.notes.push_back(
        "--offload: the optimizer step runs on the host's CPUs, which the catalog does not describe; the step time "
        "leaves it out (time.breakdown.offload is PCIe time only)");
  }
  if (step && params.active != params.total && s.ep == 1) {
    r.notes.push_back(
        "mixture of experts: the modelled step counts the experts' GEMMs but no expert-parallel "
        "all-to-all (experts are taken as replicated on each device or split by --tp; --ep splits them)");
  }
  r.Set("time.gpu_hours", "device-hours", t.gpu_hours, Unit::kCount);
  r.Set("time.compute_flops", "model FLOPs in all", t.model_flops, Unit::kFlop);
  r.Set("time.hardware_flops",
        std::string("hardware FLOPs in all (") + (causal_kernels ? "causal attention, " : "") + "with recomputation)",
        t.hardware_flops, Unit::kFlop,
        causal_kernels ? "what the kernels execute: attention's masked half skipped (--no-causal counts it)"
                       : "what the kernels execute");
  if (device && hw.board_power_w > 0) {
    r.Set("time.energy_kwh", "energy in kWh (devices only)", t.gpu_hours * hw.board_power_w * kPowerUtilization / 1000,
          Unit::kRatio,
          "device-hours x board power x " + FormatFixed(kPowerUtilization, 2) +
              " (assumed mean draw while training, as a fraction of the rated board power); board power from " +
              hw.source);
  }
  if (query.price) {
    r.Set("time.cost", "cost (device-hours x --price)", t.gpu_hours * *query.price, Unit::kRatio,
          "device-hours x --price per device-hour");
  }
  r.Set("time.chinchilla_tokens", "Chinchilla-optimal tokens (20 per parameter)", t.chinchilla_tokens, Unit::kCount,
        "Hoffmann et al. 2022");
  r.Set("time.approx.six_nd_seconds", "6·N·D time (N = parameters a token uses)", t.six_nd_seconds, Unit::kSecond,
        "6 x params x tokens / (devices x peak x MFU); a mixture of experts counts its active parameters");
  if (!device) return;
  // The memory fit at the devices the answer uses (ZeRO shards over them).
  Settings at = s;
  at.gpus = t.gpus_needed;
  CheckFit(TrainingMemory(at, summary->memory).total, hw, s, "training", r);
}

// --layers: each distinct node's prefill and decode times (a block's node for all its copies), and
// which side of its own ridge point it is on in decode.
void AddLayerRoofline(const Roofline& prefill, const Roofline& decode, Report& r) {
  Table& t = r.AddTable("layers", "Roofline per node (a repeated block's node: all its copies)",
                        {{.key = "path"},
                         {.key = "repeat", .unit = Unit::kCount},
                         {.key = "prefill.compute_seconds", .label = "prefill compute", .unit = Unit::kSecond},
                         {.key = "prefill.memory_seconds", .label = "prefill memory", .unit = Unit::kSecond},
                         {.key = "decode.flops", .unit = Unit::kFlop, .shown = false},
                         {.key = "decode.bytes", .unit = Unit::kByte, .shown = false},
                         {.key = "decode.compute_seconds", .label = "decode compute", .unit = Unit::kSecond},
                         {.key = "decode.memory_seconds", .label = "decode memory", .unit = Unit::kSecond},
                         {.key = "decode.bound", .label = "decode bound"}});
  for (size_t i = 0; i < decode.nodes.size() && i < prefill.nodes.size(); ++i) {
    const NodeRoofline& p = prefill.nodes[i];
    const NodeRoofline& d = decode.nodes[i];
    // Nodes with neither FLOPs nor bytes (flash's fused softmax) are bound by nothing.
    const std::string bound = d.compute_seconds == 0 && d.memory_seconds == 0 ? "-"
                              : d.compute_seconds >= d.memory_seconds         ? "compute"
                                                                              : "memory";
    t.rows.push_back({d.path, d.repeat, p.compute_seconds, p.memory_seconds, d.flops, d.bytes, d.compute_seconds,
                      d.memory_seconds, bound});
  }
}

void AddInference(Evaluation& ev, const Settings& s, const TimeRequest& req, const HardwareSpec& hw, Report& r) {
  const ModelSpec& spec = ev.spec();
  if (spec.family != Family::kTransformer) {
    throw InputError("--mode infer: inference latency needs a transformer; '" + spec.name + "' is sequential");
  }
  const TransformerSpec& t = spec.transformer;
  if (t.encoder) {
    throw InputError("--mode infer: '" + spec.name +
                     "' is an encoder and generates no tokens; 'tally flops' gives "
                     "its forward pass and 'tally memory' its inference memory (no KV cache)");
  }
  // An encoder–decoder: the encoder runs once over the source (--seq), the decoder prefills the
  // prompt (by default its one start token: decoder_start_token_id) and then decodes, its
  // self-attention cache growing while the cross-attention cache holds the source.
  const bool enc_dec = t.encoder_layers > 0;
  if (enc_dec && s.target_seq) {
    throw InputError("--target-seq: inference takes the decoder's tokens from --prompt and --generate");
  }
  const uint64_t prompt = req.prompt.value_or(enc_dec ? 1 : 512);
  const uint64_t source = s.seq.value_or(t.context_length);
  const uint64_t positions = enc_dec && t.target_context > 0 ? t.target_context : t.context_length;
  if (t.position == PositionKind::kLearned && prompt + req.generate > positions) {
    throw InputError("--generate: prompt + generated tokens (" + std::to_string(prompt + req.generate) +
                     ") exceed the " + std::to_string(positions) + " learned positions of " +
                     (enc_dec ? "the decoder of " : "") + "'" + spec.name + "'");
  }
  const RooflineRates rates = InferenceRates(hw, s, req.train.mfu.value_or(0.4), req.mbu.value_or(kDefaultMbu));
  const uint64_t batch = InferenceBatch(s);
  // Inference runs without dropout, and a decoder's prefill is causal.
  Settings prefill = s;
  prefill.batch = batch;
  (enc_dec ? prefill.target_seq : prefill.seq) = prompt;
  if (enc_dec) prefill.seq = source;
  prefill.dropout = 0.0;
  prefill.causal = true;
  ev.Summary(prefill);  // checks the parallelism
  const Roofline p = ForwardRoofline(*ev.Graph(GraphSettingsOf(prefill)), spec, prefill, rates);
  // A decode step: one token per sequence against the cache; its mean context over the generation.
  Settings decode = prefill;
  (enc_dec ? decode.target_seq : decode.seq) = 1;
  decode.context = prompt + req.generate / 2;
  const Roofline d = ForwardRoofline(*ev.Graph(GraphSettingsOf(decode)), spec, decode, rates);
  // What was computed, not the model's context: the prompt, the generated tokens, a causal prefill.
  r.Group("settings", "Settings");
  r.Set("settings.batch", "batch (sequences at once, per replica)", batch, Unit::kNumber);
  if (enc_dec) r.Set("settings.source", "source tokens per sequence (encoder)", source, Unit::kNumber);
  r.Set("settings.prompt", enc_dec ? "decoder prompt tokens per sequence" : "prompt tokens per sequence", prompt,
        Unit::kNumber);
  r.Set("settings.generate", "generated tokens per sequence", req.generate, Unit::kNumber);
  r.Set("settings.causal_prefill", "prefill is causal", true, Unit::kBool);
  r.Group("time", std::string("Inference latency on ") + hw.name + " (roofline)");
  r.Set("time.hardware", "device", hw.name, Unit::kText);
  r.Set("time.peak_flop_per_s", std::string("dense ") + Name(ComputeDtype(s.precision)) + " peak per device",
        rates.peak, Unit::kFlopPerSecond);
  if (rates.linear_peak > 0) {
    r.Set("time.linear_peak_flop_per_s", "dense fp8 peak of the block matrices (W8A8, --quant fp8)", rates.linear_peak,
          Unit::kFlopPerSecond,
          "fp8 weights and activations into fp8 tensor cores; other --quant methods store weights only (W8A16, "
          "W4A16) and compute at the activation dtype's peak");
  }
  r.Set("time.memory_bandwidth", "memory bandwidth per device", rates.bandwidth, Unit::kBytePerSecond);
  r.Set("time.ttft_seconds", enc_dec ? "time to first token (encoder + prefill)" : "time to first token (prefill)",
        p.seconds, Unit::kSecond,
        "sum over ops of max(FLOPs / (peak x MFU), bytes / (bandwidth x MBU)) + all-reduces (Williams et al. 2009)");
  r.Set("time.tpot_seconds", "time per output token (decode step)", d.seconds, Unit::kSecond,
        enc_dec ? "one token per sequence at the mean context prompt + generate / 2, reading the decoder's weights, "
                  "its self-attention KV cache and the cross-attention KV of the source (no encoder)"
                : "one token per sequence at the mean context prompt + generate / 2, reading weights and KV cache");
  r.Set("time.tokens_per_second", "generated tokens/s for the batch", static_cast<double>(batch) / d.seconds,
        Unit::kRatio);
  r.Set("time.generate_seconds", "prefill + all decode steps",
        p.seconds + d.seconds * static_cast<double>(req.generate), Unit::kSecond);
  for (const auto& [name, roof] : {std::pair<const char*, const Roofline&>{"prefill", p}, {"decode", d}}) {
    const std::string key = std::string("time.") + name;
    r.Set(key + ".compute_seconds", std::string(name) + ": compute time of the ops", roof.compute_seconds,
          Unit::kSecond);
    r.Set(key + ".memory_seconds", std::string(name) + ": memory time of the ops", roof.memory_seconds, Unit::kSecond);
    r.Set(key + ".allreduce_seconds", std::string(name) + ": tensor-parallel all-reduces", roof.allreduce_seconds,
          Unit::kSecond, "ring: 2 (t - 1) / t x bytes / interconnect bandwidth, per row-parallel linear");
  }
  if (req.layers) AddLayerRoofline(p, d, r);
  // Found over integer batches with the real cost of each (MoE: the experts read grow as
  // E (1 - (1 - k/E)^n), not linearly), at the same mean context.
  const uint64_t context = *decode.context;
  if (auto b = DecodeComputeBoundBatch(ev, decode, rates, context, false)) {
    r.Set("time.decode_compute_bound_batch", "decode step turns compute-bound from batch", *b, Unit::kCount,
          "the smallest integer batch whose whole decode step's compute time reaches its memory time (searched)");
  } else {
    r.notes.push_back(
        std::string("a decode step stays memory-bound up to batch 2^20: each sequence's ") +
        (spec.transformer.n_heads == 0 ? "SSM-state and activation traffic takes" : "KV-cache reads take") +
        " longer than its compute");
  }
  if (auto b = DecodeComputeBoundBatch(ev, decode, rates, context, true)) {
    r.Set("time.decode_gemm_compute_bound_batch", "weight GEMMs turn compute-bound from batch", *b, Unit::kCount,
          "the smallest integer batch whose linear layers' compute time reaches their memory time (searched)");
  }
  Settings whole = prefill;  // the cache holds the prompt and everything generated
  (enc_dec ? whole.target_seq : whole.seq) = prompt + req.generate;
  CheckFit(InferenceMemory(spec, s, ev.Summary(whole)->memory, batch).total, hw, s, "inference", r);
  if (s.dp() > 1) {
    r.notes.push_back("latency and tokens/s are per model replica; " + std::to_string(s.dp()) +
                      " data-parallel replicas serve that many batches at once");
  }
}

}  // namespace

void AddTime(Evaluation& ev, const Settings& s, const TimeRequest& given, Report& r) {
  // Training from an achieved rate needs no device; everything else takes its peak or bandwidth.
  if (s.hardware.empty() && given.train.achieved && s.mode != Mode::kInfer) {
    BlameOverflowOn(ev.spec().source, [&] { AddTraining(ev, s, given, HardwareSpec{}, r); });
    return;
  }
  if (s.hardware.empty()) {
    throw InputError(
        "--hardware: time needs a device (or, for training, an --achieved FLOP/s rate); run 'tally "
        "hardware' for the catalog");
  }
  if (s.device == nullptr) throw std::logic_error("AddTime: settings not resolved (ResolveSettings)");
  const HardwareSpec& hw = *s.device;
  // A calibrated hardware file carries the rate measured on it: the throughput unless one is given.
  TimeRequest req = given;
  auto measured = hw.achieved_flops.find(ComputeDtype(s.precision));
  if (!req.train.mfu && !req.train.achieved && measured != hw.achieved_flops.end() && s.mode != Mode::kInfer) {
    req.train.achieved = measured->second;
    r.notes.push_back("using the achieved " + std::string(Name(measured->first)) + " rate measured in " + hw.source +
                      " (achieved_flops); --mfu or --achieved overrides it");
  }
  // A calibrated file that did not measure this dtype has only a computed peak for it, which a
  // library may never reach (Debian's OpenBLAS has no bf16 GEMM at all): refuse rather than guess.
  if (!req.train.mfu && !req.train.achieved && !hw.achieved_flops.empty() && measured == hw.achieved_flops.end() &&
      s.mode != Mode::kInfer) {
    std::string dtypes;
    for (const auto& [dtype, rate] : hw.achieved_flops)
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(Name(dtype));
    throw InputError("--hardware: " + hw.source + " measured " + dtypes + " but not " +
                     Name(ComputeDtype(s.precision)) + " (--precision " + PrecisionName(s.precision) +
                     "); choose a measured precision, or give --mfu "
                     "or --achieved");
  }
  BlameOverflowOn(ev.spec().source, [&] {
    if (s.mode == Mode::kInfer) {
      AddInference(ev, s, req, hw, r);
    } else {
      AddTraining(ev, s, req, hw, r);
    }
  });
}

}  // namespace tally
