#include <cmath>

#include "config/names.h"
#include "estimate/defaults.h"
#include "estimate/expert_parallel.h"
#include "estimate/step_model.h"
#include "sections/sections.h"
#include "util/units.h"

namespace tally {
namespace {

using E = const TimeEstimate&;
using T = const TrainingEstimate&;
using M = const ModelledStep&;
using I = const InferenceEstimate&;

const TrainingEstimate* Train(E e) { return e.training ? &*e.training : nullptr; }
const TrainingEstimate* OnDevice(E e) { return e.training && e.training->device() ? &*e.training : nullptr; }
const ModelledStep* Step(E e) { return e.training && e.training->step ? &*e.training->step : nullptr; }
const InferenceEstimate* Infer(E e) { return e.inference ? &*e.inference : nullptr; }
const ValidationBand* Band(E e) { return e.validation ? &*e.validation : nullptr; }
const Settings& S(E e) { return *e.training->settings; }

// The row's value from the part of the estimate it reads, or no key where that part is absent.
template <typename P, typename F>
Cell If(const P* part, F value) {
  return part != nullptr ? Cell(value(*part)) : std::nullopt;
}

std::string DtypeName(E e) { return Name(e.training ? e.training->dtype : e.inference->dtype); }

std::string TimeTitle(E e) {
  if (e.inference) return "Inference latency on " + e.inference->hardware + " (roofline)";
  return e.training->device() ? "Training time on " + e.training->hardware : "Training time at --achieved";
}

std::string MfuText(T t) {
  return t.achieved ? "achieved x model FLOPs / hardware FLOPs / peak"
         : t.throughput == Throughput::kModelledStep
             ? "model FLOPs / (step time x devices x peak), from the modelled step"
             : "as given (--mfu, default " + FormatDouble(kDefaultMfu) + ")";
}

std::string EpText(E e) {
  const Settings& s = S(e);
  const ModelledStep& m = *Step(e);
  return "per MoE block and micro-batch " + FormatDouble(m.ep_all_to_alls) +
         " all-to-alls (dispatch and combine, forward and backward" +
         (RerunsBlocks(s.recompute) ? std::string(", and the forward's again in each recomputed block") +
                                          (s.recompute_layers ? " (the blocks' mean with --recompute-layers)" : "")
                                    : std::string()) +
         "), each tokens x top_k x hidden x activation bytes" + (s.sp ? " / tp (--sp)" : "") +
         ", a share to each of ep ranks: " +
         (m.ep_intra_node
              ? "(ep - 1) / ep of it / intra-node bandwidth (etp x ep = " + std::to_string(s.expert_tp() * s.ep) +
                    " <= --gpus-per-node " + std::to_string(m.gpus_per_node) + ")"
              : "the node's peers' shares / intra-node bandwidth beside " +
                    std::string(m.ep_dispatch == EpDispatch::kDeepEp
                                    ? "one copy of a token per other node its top_k experts reach (--ep-dispatch "
                                      "deepep: (N - 1)(1 - C(E - E/N, k) / C(E, k)) under balanced routing)"
                                    : "the other nodes' shares") +
                    " / inter-node bandwidth, the longer (etp x ep = " + std::to_string(s.expert_tp() * s.ep) +
                    " > --gpus-per-node " + std::to_string(m.gpus_per_node) + ")") +
         (m.moe_imbalance > 1 ? ", x --moe-imbalance " + FormatDouble(m.moe_imbalance) + " on the busiest rank" : "") +
         ", x grad-accum, layers / pp per device (Lepikhin et al. 2020, GShard; Rajbhandari et "
         "al. 2022, DeepSpeed-MoE; Megatron-Core MoE docs, expert parallelism)";
}

std::string DpText(E e) {
  const Settings& s = S(e);
  const ModelledStep& m = *Step(e);
  if (m.time.dp_bucket_bytes <= 0) return "no data-parallel group: every device holds its own parameters' only replica";
  const std::string bucket = FormatBytes(static_cast<uint64_t>(m.time.dp_bucket_bytes), UnitSystem::kIec);
  const char* rule = m.dp_bucket == DpBucket::kMegatron    ? " (Megatron-Core's max(40M, 1M x n) parameters)"
                     : m.dp_bucket == DpBucket::kDeepSpeed ? " (DeepSpeed's 5e8 parameters)"
                     : m.dp_bucket == DpBucket::kParams    ? " (--dp-bucket's parameters)"
                     : s.zero >= 3 ? " (one block's: FSDP reduce-scatters each unit as its backward ends)"
                                   : " (PyTorch DDP's 25 MiB; --dp-bucket for others)";
  return "2 (n - 1) / n x gradient bytes / the group's link (time.comm.dp_bandwidth) in buckets of " + bucket +
         " of gradients" + rule + ", each with NCCL's latency (the faster of ring and tree)" +
         std::string(s.cp > 1 ? ", n = dp x cp" : "") +
         " (ZeRO-1 and 2: a reduce-scatter of the gradients, then an all-gather of the updated weights in their "
         "dtype; ZeRO-2 and 3: also a gradient reduce-scatter in each earlier micro-batch; ZeRO-3 reduce-scatters "
         "only, plus a parameter all-gather per micro-batch forward and backward)" +
         (ExpertGrid(s) ? "; the routed experts' (1 / ep of them per device, each / etp) over n = tp x cp x dp / "
                          "(ep x etp) = " +
                              std::to_string(m.expert_dp) + " ranks, the rest over " + std::to_string(m.gradient_ranks)
                        : std::string());
}

std::string AllReduceText(E) {
  return "one all-reduce per row-parallel linear, NCCL's latency and bandwidth model (estimate/collectives.h) over "
         "what NCCL moves on the device's link (intra_node_bandwidth, else interconnect_bandwidth, x "
         "intra_node_collective_share; NVLS where the device has it and it is faster)";
}

// The power limit's cost, for training steps and prefills alike (estimate/power_limit.h).
std::string PowerLimitText(double weight) {
  return "the GEMMs " + FormatFixed(weight, 2) +
         " of the way from their burst rates to their rates at the board's 700 W limit, by the share of the time "
         "they and the attention kernels take (a duty sweep on an H100, docs/data/h100-gemm-duty.json; each shape's "
         "loss from a steady sweep on an H200, docs/data/h200-steady-gemm.json): the board holds its limit by "
         "lowering the SM clock, to 1,275-1,470 MHz with bf16 GEMMs back to back. Attention keeps its measured rate "
         "(its own loss was not measured). Measured on GH100 at 700 W only, for 16-bit and fp8 GEMMs; elsewhere "
         "not priced";
}

bool Offloads(E e) { return Step(e) != nullptr && S(e).offload != Offload::kNone; }
bool ContextParallel(E e) { return Step(e) != nullptr && S(e).cp > 1; }

std::string OffloadText(E e) {
  if (!Offloads(e)) return "no --offload";
  return "per micro-batch max(down, up) / host_bandwidth less that micro-batch's compute, at least 0 (a stream of "
         "its own: Ren et al. 2021, §4.2), x grad-accum" +
         std::string(S(e).offload == Offload::kOptimizer
                         ? "; + the updated weights' upload, exposed whole (the one-step delayed update is not "
                           "modelled)"
                         : "") +
         "; the CPU's optimizer step is left out (the catalog does not describe the host's CPUs)";
}

std::string UpText(E e) {
  const Settings& s = S(e);
  return s.offload == Offload::kParams
             ? "the device's weight partition (memory.train.host.weights) x " +
                   std::string(RerunsBlocks(s.recompute)
                                   ? (s.recompute_layers ? "(2 + the share of blocks recomputed) (forward, backward, "
                                                           "the recomputed blocks' forward)"
                                                         : "3 (forward, recompute, backward)")
                                   : "2 (forward, backward)") +
                   " x grad-accum"
             : "the updated weights of the gradient partition at the weight dtype, once per step";
}

// The budget: the device and throughput, tokens, time and devices.
KeyTable<TimeEstimate> HeadRows() {
  return {
      {.key = "time", .label_of = TimeTitle},
      {.key = "time.hardware",
       .label = "device",
       .value = [](E e) -> Cell {
         return e.inference ? Cell(e.inference->hardware) : If(OnDevice(e), [](T t) { return t.hardware; });
       }},
      {.key = "time.peak_flop_per_s",
       .unit = Unit::kFlopPerSecond,
       .value = [](E e) -> Cell {
         return e.inference ? Cell(e.inference->rates.peak) : If(OnDevice(e), [](T t) { return t.peak; });
       },
       .explain = [](E e) { return e.training ? "from " + e.training->source : std::string(); },
       .label_of = [](E e) { return "dense " + DtypeName(e) + " peak per device"; }},
      {.key = "time.mfu",
       .label = "MFU (model FLOPs / peak)",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(OnDevice(e), [](T t) { return t.time.mfu; }); },
       .explain = [](E e) { return MfuText(*e.training); }},
      {.key = "time.hfu",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(OnDevice(e), [](T t) { return t.time.hfu; }); },
       .explain = [](E) -> std::string { return "hardware FLOPs / (time x devices x peak); PaLM, App. B"; },
       .label_of = [](E e) -> std::string {
         return std::string("HFU (") + (e.training->causal_kernels ? "causal kernels, " : "") + "with recomputation)";
       }},
      {.key = "time.achieved_flop_per_s",
       .label = "achieved FLOP/s per device (--achieved)",
       .unit = Unit::kFlopPerSecond,
       .value = [](E e) -> Cell {
         return When(e.training && !e.training->device(), e.training ? e.training->achieved.value_or(0) : 0);
       },
       .explain = [](E) -> std::string { return "as given; no device named, so no peak, MFU or memory fit"; }},
      {.key = "time.tokens",
       .label = "tokens",
       .unit = Unit::kCount,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.tokens; }); }},
      {.key = "time.train_seconds",
       .label = "training time",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.seconds; }); },
       .explain = [](E e) -> std::string {
         return e.training->step ? "steps x the modelled step time (time.breakdown)"
                                 : "model FLOPs / (devices x peak x MFU), or hardware FLOPs / (devices x achieved)";
       }},
      {.key = "time.gpus",
       .label = "devices",
       .unit = Unit::kNumber,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.gpus_needed; }); }},
      {.key = "time.gpus_exact",
       .label = "devices (exact, before rounding up)",
       .unit = Unit::kRatio,
       .value = [](E e) -> Cell {
         const TrainingEstimate* t = Train(e);
         return When(t && std::fabs(t->time.gpus - static_cast<double>(t->time.gpus_needed)) > 1e-9,
                     t ? t->time.gpus : 0);
       }},
      {.key = "time.steps",
       .label = "optimizer steps",
       .unit = Unit::kCount,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.steps; }); }},
      {.key = "time.step_seconds",
       .label = "per step",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.step_seconds; }); }},
  };
}

// The modelled step's breakdown: compute, communication, bubble, offload, and the links' figures.
KeyTable<TimeEstimate> StepRows() {
  return {
      {.key = "time.breakdown.compute",
       .label = "step: compute",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.compute; }); },
       .explain = [](E) -> std::string {
         return "per device: each GEMM (forward, dX, dW, recomputed forward) at max(FLOPs / (peak x gemm_efficiency x "
                "tile quantization), operands / (bandwidth x MBU)), tile quantization = m / (128 ceil(m / 128)) x "
                "n / (128 ceil(n / 128)) (NVIDIA, Matrix Multiplication Background; an MoE expert's m is its tokens); "
                "LoRA adapters in fp32 at the fp32 rate under --lora-dtype fp32 (PEFT's); other ops by the bytes "
                "they move, measured per op for eager PyTorch (--kernels eager) or a read and a write (fused), at "
                "the device's bandwidth; flash attention keeps the s x s scores on chip, re-forms QK^T in its "
                "backward and runs, as a whole measured kernel, at cuDNN's rate by shape on the H100's SMs "
                "(H100 SXM, H200, H800) and the memory-efficient kernel's in fp32 and tf32 "
                "(docs/data/h100-kernel-sweep.json), elsewhere at the catalog's attention_efficiency; on the H100 "
                "SXM, H200 and H800 the 16-bit and fp8 GEMMs slowed by the board's power limit as far as the share "
                "of the step they and attention take says (time.power); layers / pp per device; at least the host's "
                "time to launch the "
                "kernels; plus the optimizer update";
       }},
      {.key = "time.compute.memory_bound",
       .label = "compute: non-GEMM ops (GPU time)",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.memory_bound; }); },
       .explain = [](E) -> std::string {
         return "norms, activations, residual adds, dropout, RoPE, the embedding and the loss: bytes per element "
                "/ (bandwidth x 0.85, a copy's share), eager ops plus their SM time per element (each op measured "
                "on an H100 and an H200, docs/data/h100-op-costs.json and h200-op-costs.json; on other SMs than "
                "theirs, as bytes at the H200's bandwidth), over this device's elements (tensor-parallel-split ones: "
                "activation, RoPE, attention core, loss / tp; the residual stream's / tp under --sp); LoRA's "
                "scaling and add (and under --lora-dtype fp32 its casts); fp8 linears' input and gradient casts; an "
                "MoE layer's permutation; autocast's weight casts; on the busiest pipeline stage, with the blocks "
                "recomputation reruns";
       }},
      {.key = "time.compute.optimizer",
       .label = "compute: optimizer update",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.optimizer; }); },
       .explain = [](E) -> std::string {
         return "Adam/AdamW on the weights, gradients and states in their dtype (PyTorch's, whatever --kernels: "
                "torch.compile leaves the optimizer to PyTorch): its measured bytes and SM time per parameter "
                "(foreach, fused, for-loop), split as the eager ops are; "
                "else gradient + 2 x (weight + master + states) bytes per parameter; at bandwidth";
       }},
      {.key = "time.compute.host_launch",
       .label = "compute: host's kernel launches",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.host; }); },
       .explain = [](E) -> std::string {
         return "kernels x 5.7 us (an eager op launched from Python, PyTorch 2.11); the step's compute is at least "
                "this";
       }},
      {.key = "time.compute.kernels",
       .label = "compute: kernel launches",
       .unit = Unit::kCount,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.kernels; }); }},
      {.key = "time.breakdown.communication",
       .label = "step: exposed communication",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.communication; }); },
       .explain =
           [](E e) {
             return "tensor-parallel + pipeline point-to-point + the data-parallel part not hidden under the backward" +
                    std::string(S(e).ep > 1 ? " + the expert-parallel all-to-alls' exposed part" : "") +
                    std::string(S(e).cp > 1 ? " + the context-parallel ring's exposed part" : "");
           }},
      {.key = "time.breakdown.ep_all_to_all",
       .label = "step: expert-parallel all-to-all",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(Step(e) && S(e).ep > 1, Step(e) ? Step(e)->time.ep_exposed : 0); },
       .explain = [](E) -> std::string {
         return "exposed: all of time.comm.ep_seconds; with --ep-overlap, one micro-batch's forward runs beside "
                "another's backward: the forward's all-to-alls show what outlasts the partner's backward compute, the "
                "backward's what outlasts its forward, and the micro-batches with no partner (pp - 1 of m each way, or "
                "the first forward and last backward) show whole (Megatron-Core's "
                "--overlap-moe-expert-parallel-comm; DeepSeek-V3 report, §3.2.1, DualPipe)";
       }},
      {.key = "time.breakdown.pipeline_bubble",
       .label = "step: pipeline bubble",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.pipeline_bubble; }); },
       .explain = [](E) -> std::string {
         return "1F1B: (p - 1) / vp stage-times of one micro-batch (Narayanan et al. 2021, §2.2); zero-bubble: (p - 1) "
                "(F + B - 2W) (Qi et al. 2024, ZB-H1); dualpipe: (p/2 - 1)(F + 2B - 3W) (DeepSeek-V3 report, Table "
                "2); F, B, W: a micro-batch's forward, backward and weight-gradient time on a stage";
       }},
      {.key = "time.breakdown.offload",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(Step(e) != nullptr, Offloads(e) ? Step(e)->time.offload : 0.0); },
       .explain = OffloadText,
       .label_of = [](E e) -> std::string {
         return Offloads(e) ? "step: CPU offload (exposed)" : "step: CPU offload";
       }},
      {.key = "time.offload.transfer_seconds",
       .label = "host-link transfers (whole)",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(Offloads(e), Offloads(e) ? Step(e)->time.offload_transfer : 0); },
       .explain = [](E) -> std::string {
         return "grad-accum x max(down, up) / host_bandwidth per micro-batch + upload / host_bandwidth";
       }},
      {.key = "time.offload.down_bytes",
       .label = "device to host per step (gradients)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(Offloads(e), Offloads(e) ? Step(e)->offload_down_bytes : 0); },
       .explain = [](E) -> std::string {
         return "the device's gradient partition (memory.train.host.gradients) x grad-accum: each micro-batch's "
                "gradients accumulate in host memory";
       }},
      {.key = "time.offload.up_bytes",
       .label = "host to device per step (weights)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(Offloads(e), Offloads(e) ? Step(e)->offload_up_bytes : 0); },
       .explain = UpText},
      {.key = "time.offload.host_bandwidth",
       .label = "host link per device, per direction",
       .unit = Unit::kBytePerSecond,
       .value = [](E e) { return When(Offloads(e), Offloads(e) ? Step(e)->host_bandwidth : 0); },
       .explain = [](E e) { return "from " + e.training->source + " (host_bandwidth)"; }},
      {.key = "time.offload.host_bytes_per_node",
       .label = "host memory per node",
       .unit = Unit::kByte,
       .value = [](E e) { return When(Offloads(e), Offloads(e) ? Step(e)->host_bytes_per_node : 0); },
       .explain =
           [](E e) {
             return "memory.train.host.total x " + std::to_string(Step(e)->devices_per_node) +
                    " devices (--gpus-per-node, at most --gpus)";
           }},
      {.key = "time.comm.tp_seconds",
       .label = "tensor-parallel collectives",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.tp_comm; }); },
       .explain = [](E) -> std::string {
         return "2 (t - 1) / t x activation bytes / link bandwidth per row-parallel linear, forward and backward (and "
                "each recomputed block's forward again), plus NCCL's latency per call (8.4 us + 3.4 us a ring step, "
                "Simple; 3.6 + 0.47 us, LL; in an NVSwitch node an all-reduce by NVLS where faster, 25 us and "
                "2 (c - 1) x a channel's speed x nvlsEfficiency of bus bandwidth, c = min(t, 32) channels: "
                "NVIDIA/nccl src/graph/tuning.cc, search.cc) over the link NCCL sees "
                "(time.comm.intra_node_bandwidth); sequence parallel: reduce-scatter + all-gather, the same "
                "volume as a ring, never NVLS (nor under --tp-overlap, Transformer Engine's own exchanges); whole "
                "(time.comm.tp_exposed_seconds: what the step waits for)";
       }},
      {.key = "time.comm.tp_exposed_seconds",
       .label = "tensor-parallel: exposed",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.tp_exposed; }); },
       .explain = [](E) -> std::string {
         return "all of it; with --tp-overlap, what outlasts the tensor-parallel linears' GEMMs, run in Transformer "
                "Engine's chunks (tp for ring-exchange, 4 for pipeline), plus the pipeline's last reduce-scatter "
                "chunk, "
                "1/16 of it without recomputation, 1/12 with every block rerun (Megatron-LM's --tp-comm-overlap; Wang "
                "et al. 2022; "
                "transformer_engine/pytorch/module/base.py, initialize_ub)";
       }},
      {.key = "time.comm.ep_seconds",
       .label = "expert-parallel all-to-alls (whole)",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(Step(e) && S(e).ep > 1, Step(e) ? Step(e)->time.ep_comm : 0); },
       .explain = EpText},
      {.key = "time.comm.moe_imbalance",
       .label = "MoE load: busiest expert rank / mean",
       .unit = Unit::kRatio,
       .value = [](E e) { return When(Step(e) && S(e).ep > 1, Step(e) ? Step(e)->moe_imbalance : 0); },
       .explain = [](E) -> std::string {
         return "--moe-imbalance (default 1, balanced routing): the routed token copies the busiest expert-parallel "
                "rank receives over the mean; its grouped GEMMs, token permutation and all-to-alls take this many "
                "times the mean's, and every MoE layer waits for it";
       }},
      {.key = "time.comm.pp_seconds",
       .label = "pipeline point-to-point",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.pp_comm; }); },
       .explain = [](E) -> std::string {
         return "2 x micro-batch activation / tp / link bandwidth per micro-batch (x vp); the inter-node link "
                "unless the whole grid fits one node (adjacent stages are tp x cp x dp ranks apart, the pipeline "
                "outermost in Megatron-Core's rank order), the slowest boundary pacing the pipeline";
       }},
      {.key = "time.comm.dp_seconds",
       .label = "data-parallel gradient reduction (whole)",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.dp_comm; }); },
       .explain = DpText},
      {.key = "time.comm.dp_exposed_seconds",
       .label = "data-parallel: exposed",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.dp_exposed; }); },
       .explain = [](E) -> std::string {
         return "max(last bucket, reduction - last micro-batch's backward); ZeRO-1/2: + the weights' all-gather, "
                "whole after the update, or with --overlap-param-gather what outlasts the next first forward; "
                "ZeRO-2/3: + each earlier micro-batch's reduce-scatter past its backward; ZeRO-3 gathers past the "
                "compute; with --no-dp-overlap all of it";
       }},
      {.key = "time.comm.dp_bandwidth",
       .label = "data-parallel link per device",
       .unit = Unit::kBytePerSecond,
       .value =
           [](E e) {
             return When(Step(e) && Step(e)->time.dp_bandwidth > 0, Step(e) ? Step(e)->time.dp_bandwidth : 0);
           },
       .explain =
           [](E e) {
             const StepTime& t = Step(e)->time;
             if (!t.dp_network) {
               return std::string(
                   "the intra-node link: the group's devices (tp x cp x dp of a pipeline stage) fit one "
                   "node");
             }
             return "across nodes, the inter-node link x " + FormatDouble(t.dp_ranks_per_node) +
                    ", the group's members in one node (Megatron-Core's rank order: tp, cp, dp; each drives its own "
                    "NIC and NCCL runs a channel over each), x " +
                    FormatFixed(kNetworkCollectiveShare, 3) +
                    ", the share of the NICs' line rate nccl-tests reached across 4 nodes of 8 H100 (330.93 of 400 "
                    "GB/s of all-reduce bus bandwidth, github.com/aigatech/vpbenchmarking); at most the intra-node "
                    "link";
           }},
      {.key = "time.comm.intra_node_bandwidth",
       .label = "intra-node link per device (what NCCL moves)",
       .unit = Unit::kBytePerSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.intra_bandwidth; }); },
       .explain =
           [](E e) {
             const StepTime& t = Step(e)->time;
             std::string text = "from " + e.training->source + ": intra_node_bandwidth (else interconnect_bandwidth)";
             if (t.intra_share != 1) {
               text += " x intra_node_collective_share " + FormatDouble(t.intra_share) +
                       " (NCCL's per-link NVLink rate over the link's, src/graph/topo.h)";
             }
             if (t.nvls != NvlsArch::kNone) {
               text += std::string("; an NCCL all-reduce inside a node may reduce in the NVSwitches (NVLS, ") +
                       NvlsName(t.nvls) + "'s constants), where that is faster";
             }
             return text + " (a group of up to --gpus-per-node " + std::to_string(Step(e)->gpus_per_node) +
                    " devices stays inside a node)";
           }},
      {.key = "time.comm.inter_node_bandwidth",
       .label = "inter-node link per device",
       .unit = Unit::kBytePerSecond,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.inter_bandwidth; }); },
       .explain =
           [](E e) {
             return "from " + e.training->source +
                    ": inter_node_bandwidth; a file without it gets the intra-node link here, as if the nodes "
                    "shared one NVLink domain";
           }},
      {.key = "time.gemm_efficiency",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.efficiency; }); },
       .explain = [](E e) { return "from " + e.training->source + " (gemm_efficiency)"; },
       .label_of = [](E e) { return "large-GEMM efficiency (" + DtypeName(e) + ")"; }},
      {.key = "time.bubble_fraction",
       .label = "pipeline bubble fraction of the step",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.bubble_fraction; }); }},
      {.key = "time.power.tensor_duty",
       .label = "GEMMs and attention, share of the step",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(Step(e), [](M m) { return m.time.tensor_duty; }); },
       .explain =
           [](E e) {
             const std::string priced =
                 Step(e)->time.power_weight > 0
                     ? "priced here: time.power.limit_seconds"
                     : "not priced here (measured on the H100 SXM, H200 and H800 at 700 W for 16-bit and fp8 GEMMs, "
                       "or --no-power-limit): the GEMMs keep their burst rates, and a step they fill runs slower "
                       "than this says";
             return "the device's time less its memory-bound ops, casts and optimizer, over the step: what sets the "
                    "board's power draw and its clock under the power limit (estimate/power_limit.h); " +
                    priced;
           }},
      {.key = "time.power.limit_seconds",
       .label = "what the power limit adds to the step",
       .unit = Unit::kSecond,
       .value =
           [](E e) { return When(Step(e) && Step(e)->time.power_weight > 0, Step(e) ? Step(e)->time.power_limit : 0); },
       .explain = [](E e) { return PowerLimitText(Step(e)->time.power_weight); }},
      {.key = "time.breakdown.cp_ring",
       .label = "step: context-parallel ring (exposed)",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(ContextParallel(e), Step(e) ? Step(e)->time.cp_exposed : 0); },
       .explain = [](E) -> std::string {
         return "per block on the slowest stage and micro-batch: max(0, forward hops - the block's attention core "
                "forward) + max(0, backward hops - its backward) (+ the forward again under full recomputation); the "
                "hops overlap the blockwise attention of the chunk in hand (Liu et al. 2023, Ring Attention, §3)";
       }},
      {.key = "time.comm.cp_seconds",
       .label = "context-parallel ring (whole)",
       .unit = Unit::kSecond,
       .value = [](E e) { return When(ContextParallel(e), Step(e) ? Step(e)->time.cp_comm : 0); },
       .explain = [](E) -> std::string {
         return "(cp - 1) forward + 2 (cp - 1) backward hops (K,V gathered again and dK,dV reduce-scattered, as ring "
                "point-to-point: Megatron-LM docs, context_parallel) x hop bytes / link bandwidth, per block and "
                "micro-batch; intra-node while tp x cp <= --gpus-per-node";
       }},
      {.key = "time.comm.cp_hop_bytes",
       .label = "context-parallel hop (one K,V chunk)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(ContextParallel(e), Step(e) ? Step(e)->cp_hop_bytes : 0); },
       .explain = [](E) -> std::string {
         return "2 x (seq / cp) x kv_heads / tp-shards x head_dim x activation bytes x micro-batch";
       }},
  };
}

// The budget's totals: device-hours, FLOPs, energy and cost, and the rules of thumb.
KeyTable<TimeEstimate> TotalRows() {
  return {
      {.key = "time.gpu_hours",
       .label = "device-hours",
       .unit = Unit::kCount,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.gpu_hours; }); }},
      {.key = "time.compute_flops",
       .label = "model FLOPs in all",
       .unit = Unit::kFlop,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.model_flops; }); }},
      {.key = "time.hardware_flops",
       .unit = Unit::kFlop,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.hardware_flops; }); },
       .explain = [](E e) -> std::string {
         return e.training->causal_kernels
                    ? "what the kernels execute: attention's masked half skipped (--no-causal counts it)"
                    : "what the kernels execute";
       },
       .label_of = [](E e) -> std::string {
         return std::string("hardware FLOPs in all (") + (e.training->causal_kernels ? "causal attention, " : "") +
                "with recomputation)";
       }},
      {.key = "time.energy_kwh",
       .label = "energy in kWh (devices only)",
       .unit = Unit::kRatio,
       .value = [](E e) -> Cell {
         return e.training && e.training->energy_kwh ? Cell(*e.training->energy_kwh) : std::nullopt;
       },
       .explain =
           [](E e) {
             return "device-hours x board power x " + FormatFixed(kPowerUtilization, 2) +
                    " (assumed mean draw while training, as a fraction of the rated board power); board power from " +
                    e.training->source;
           }},
      {.key = "time.cost",
       .label = "cost (device-hours x --price)",
       .unit = Unit::kRatio,
       .value = [](E e) -> Cell { return e.training && e.training->cost ? Cell(*e.training->cost) : std::nullopt; },
       .explain = [](E) -> std::string { return "device-hours x --price per device-hour"; }},
      {.key = "time.chinchilla_tokens",
       .label = "Chinchilla-optimal tokens (20 per parameter)",
       .unit = Unit::kCount,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.chinchilla_tokens; }); },
       .explain = [](E) -> std::string { return "Hoffmann et al. 2022"; }},
      {.key = "time.approx.six_nd_seconds",
       .label = "6·N·D time (N = parameters a token uses)",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Train(e), [](T t) { return t.time.six_nd_seconds; }); },
       .explain = [](E) -> std::string {
         return "6 x params x tokens / (devices x peak x MFU); a mixture of experts counts its active parameters";
       }},
  };
}

// Inference: the rates, the latencies, the prefill's and decode's parts, where decoding turns compute-bound.
KeyTable<TimeEstimate> InferenceRows() {
  KeyTable<TimeEstimate> rows = {
      {.key = "time.linear_peak_flop_per_s",
       .label = "dense fp8 peak of the block matrices (W8A8, --quant fp8)",
       .unit = Unit::kFlopPerSecond,
       .value =
           [](E e) {
             return When(e.inference && e.inference->rates.linear_peak > 0,
                         e.inference ? e.inference->rates.linear_peak : 0);
           },
       .explain = [](E) -> std::string {
         return "fp8 weights and activations into fp8 tensor cores; other --quant methods store weights only (W8A16, "
                "W4A16) and compute at the activation dtype's peak";
       }},
      {.key = "time.memory_bandwidth",
       .label = "memory bandwidth per device",
       .unit = Unit::kBytePerSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.rates.bandwidth; }); }},
      {.key = "time.mbu",
       .label = "memory-bandwidth utilization (MBU)",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.rates.mbu; }); },
       .explain = [](E e) -> std::string { return e.inference->mbu_basis; }},
      {.key = "time.ttft_seconds",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.prefill.seconds; }); },
       .explain = [](E) -> std::string {
         return "sum over ops of max(FLOPs / (peak x MFU), bytes / (bandwidth x MBU) + the kernel's fixed time) + "
                "all-reduces (Williams et al. 2009)";
       },
       .label_of = [](E e) -> std::string {
         return e.inference->enc_dec ? "time to first token (encoder + prefill)" : "time to first token (prefill)";
       }},
      {.key = "time.tpot_seconds",
       .label = "time per output token (decode step)",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.decode.seconds; }); },
       .explain = [](E e) -> std::string {
         return e.inference->enc_dec
                    ? "one token per sequence at the mean context prompt + generate / 2, reading the decoder's "
                      "weights, its self-attention KV cache and the cross-attention KV of the source (no encoder)"
                    : "one token per sequence at the mean context prompt + generate / 2, reading weights and KV cache";
       }},
      {.key = "time.tokens_per_second",
       .label = "generated tokens/s for the batch",
       .unit = Unit::kRatio,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.tokens_per_second; }); }},
      {.key = "time.generate_seconds",
       .label = "prefill + all decode steps",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.generate_seconds; }); }},
      {.key = "time.prefill.compute_seconds",
       .label = "prefill: compute time of the ops",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.prefill.compute_seconds; }); }},
      {.key = "time.prefill.memory_seconds",
       .label = "prefill: memory time of the ops",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.prefill.memory_seconds; }); }},
      {.key = "time.prefill.allreduce_seconds",
       .label = "prefill: tensor-parallel all-reduces",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.prefill.allreduce_seconds; }); },
       .explain = AllReduceText},
      {.key = "time.prefill.power_limit_seconds",
       .label = "prefill: what the power limit adds",
       .unit = Unit::kSecond,
       .value =
           [](E e) {
             return When(Infer(e) && Infer(e)->prefill.power_weight > 0,
                         Infer(e) ? Infer(e)->prefill.power_limit_seconds : 0);
           },
       .explain = [](E e) { return PowerLimitText(Infer(e)->prefill.power_weight); }},
      {.key = "time.decode.compute_seconds",
       .label = "decode: compute time of the ops",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.decode.compute_seconds; }); }},
      {.key = "time.decode.memory_seconds",
       .label = "decode: memory time of the ops",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.decode.memory_seconds; }); }},
      {.key = "time.decode.kernel_floor_seconds",
       .label = "decode: the kernels' fixed time",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.decode.floor_seconds; }); },
       .explain = [](E e) -> std::string {
         if (e.inference->rates.floors.gemm <= 0) return "none: measured for GPUs only";
         return "a kernel per op, at 3.85 us a weight GEMM, 1.27 us an elementwise op, 4.41 us attention (an H200 in "
                "a CUDA graph: docs/data/h200-decode-sweep.json); an engine that fuses less launches more kernels";
       }},
      {.key = "time.decode.allreduce_seconds",
       .label = "decode: tensor-parallel all-reduces",
       .unit = Unit::kSecond,
       .value = [](E e) { return If(Infer(e), [](I i) { return i.decode.allreduce_seconds; }); },
       .explain = AllReduceText},
      {.key = "time.decode.dequant_kernel",
       .label = "weight-only quantized GEMMs run as",
       .value = [](E e) -> Cell {
         return e.inference && e.inference->dequant_kernel ? Cell(std::string(Name(*e.inference->dequant_kernel)))
                                                           : std::nullopt;
       },
       .explain = [](E e) -> std::string {
         return *e.inference->dequant_kernel == DequantKernel::kTinygemm
                    ? "PyTorch's int4 kernel (tinygemm), measured on an H200 (docs/data/h200-int4-sweep.json): its "
                      "stored bytes at 0.484 of bf16's bandwidth, its FLOPs at 0.0297 of the bf16 peak where that "
                      "binds; --dequant-kernel marlin for vLLM's"
                    : "Marlin, vLLM's kernel for GPTQ, AWQ and compressed-tensors checkpoints: stored bytes at the "
                      "bf16 GEMMs' bandwidth, FLOPs on tensor cores (Frantar et al. 2024: ideal speedups to batch "
                      "16-32); --dequant-kernel tinygemm for PyTorch's";
       }},
      {.key = "time.decode.dequant_mbu",
       .label = "their stored bytes' bandwidth utilization",
       .unit = Unit::kRatio,
       .value = [](E e) -> Cell {
         return e.inference && e.inference->dequant_kernel ? Cell(e.inference->dequant_mbu) : std::nullopt;
       },
       .explain = [](E) -> std::string { return "MBU x the kernel's share of the bf16 GEMMs' bandwidth"; }},
      {.key = "time.decode_compute_bound_batch",
       .label = "decode step turns compute-bound from batch",
       .unit = Unit::kCount,
       .value = [](E e) -> Cell {
         return e.inference && e.inference->compute_bound_batch ? Cell(*e.inference->compute_bound_batch)
                                                                : std::nullopt;
       },
       .explain = [](E) -> std::string {
         return "the smallest integer batch whose whole decode step's compute time reaches its memory time "
                "(searched)";
       }},
      {.key = "time.decode_gemm_compute_bound_batch",
       .label = "weight GEMMs turn compute-bound from batch",
       .unit = Unit::kCount,
       .value = [](E e) -> Cell {
         return e.inference && e.inference->gemm_compute_bound_batch ? Cell(*e.inference->gemm_compute_bound_batch)
                                                                     : std::nullopt;
       },
       .explain = [](E) -> std::string {
         return "the smallest integer batch whose linear layers' compute time reaches their memory time (searched)";
       }},
  };
  return rows;
}

// How far the validated runs of this regime fell from tally's time (estimate/validation_band.h).
KeyTable<TimeEstimate> ValidationRows() {
  return {
      {.key = "time.validation", .label = "validation: a real run's time over tally's, in this regime"},
      {.key = "time.validation.regime",
       .label = "regime",
       .value = [](E e) -> Cell { return If(Band(e), [](const ValidationBand& b) { return std::string(b.regime); }); },
       .explain = [](E e) -> std::string {
         return "docs/validation-time.md: " + std::string(Band(e)->what) + " on " + std::string(Band(e)->devices) +
                ", each from its configuration alone (scripts/validate-time), none of tally's constants fitted to "
                "them; 1.13x: the run took 13% longer than tally says";
       }},
      {.key = "time.validation.runs",
       .unit = Unit::kNumber,
       .value = [](E e) -> Cell {
         return If(Band(e), [](const ValidationBand& b) { return static_cast<uint64_t>(b.runs); });
       },
       .label_of = [](E e) { return std::string(Band(e)->what); }},
      {.key = "time.validation.low",
       .label = "lowest",
       .unit = Unit::kTimes,
       .value = [](E e) -> Cell { return If(Band(e), [](const ValidationBand& b) { return b.low; }); }},
      {.key = "time.validation.median",
       .label = "median",
       .unit = Unit::kTimes,
       .value = [](E e) -> Cell { return If(Band(e), [](const ValidationBand& b) { return b.median; }); }},
      {.key = "time.validation.high",
       .label = "highest",
       .unit = Unit::kTimes,
       .value = [](E e) -> Cell { return If(Band(e), [](const ValidationBand& b) { return b.high; }); }},
  };
}

// Whether the run fits the device's memory: last, after the figures it qualifies.
KeyTable<TimeEstimate> FitRows() {
  return {
      {.key = "time.fits",
       .unit = Unit::kBool,
       .value = [](E e) -> Cell {
         const TimeFit* fit = e.inference                     ? &e.inference->fit
                              : e.training && e.training->fit ? &*e.training->fit
                                                              : nullptr;
         return fit != nullptr ? Cell(fit->fits) : std::nullopt;
       },
       .label_of = [](E e) -> std::string {
         return e.inference ? "inference fits in device memory" : "training fits in device memory";
       }},
  };
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

}  // namespace

const KeyTable<TimeEstimate>& TimeKeys() {
  static const KeyTable<TimeEstimate> kKeys = [] {
    KeyTable<TimeEstimate> keys;
    for (KeyTable<TimeEstimate> part :
         {HeadRows(), StepRows(), TotalRows(), InferenceRows(), ValidationRows(), FitRows()}) {
      keys.insert(keys.end(), part.begin(), part.end());
    }
    return keys;
  }();
  return kKeys;
}

const KeyTable<TimeEstimate>& InferenceSettingsKeys() {
  using IE = const TimeEstimate&;
  static const KeyTable<TimeEstimate> kKeys = {
      {.key = "settings", .label = "Settings"},
      {.key = "settings.batch",
       .label = "batch (sequences at once, per replica)",
       .unit = Unit::kNumber,
       .value = [](IE e) { return If(Infer(e), [](I i) { return i.batch; }); }},
      {.key = "settings.source",
       .label = "source tokens per sequence (encoder)",
       .unit = Unit::kNumber,
       .value = [](IE e) { return When(e.inference && e.inference->enc_dec, e.inference ? e.inference->source : 0); }},
      {.key = "settings.prompt",
       .unit = Unit::kNumber,
       .value = [](IE e) { return If(Infer(e), [](I i) { return i.prompt; }); },
       .label_of = [](IE e) -> std::string {
         return e.inference && e.inference->enc_dec ? "decoder prompt tokens per sequence"
                                                    : "prompt tokens per sequence";
       }},
      {.key = "settings.generate",
       .label = "generated tokens per sequence",
       .unit = Unit::kNumber,
       .value = [](IE e) { return If(Infer(e), [](I i) { return i.generate; }); }},
      {.key = "settings.causal_prefill",
       .label = "prefill is causal",
       .unit = Unit::kBool,
       .value = [](IE e) { return If(Infer(e), [](I) { return true; }); }},
  };
  return kKeys;
}

void PresentTime(const TimeEstimate& e, const TimeView& view, Report& r) {
  if (view.settings) Present(InferenceSettingsKeys(), e, r);
  Present(TimeKeys(), e, r);
  if (view.layers && e.inference) AddLayerRoofline(e.inference->prefill, e.inference->decode, r);
  r.notes.insert(r.notes.end(), e.notes().begin(), e.notes().end());
}

void AddTime(Evaluation& evaluation, const Settings& settings, const TimeRequest& request, Report& r) {
  PresentTime(EstimateTime(evaluation, settings, request), {.layers = request.layers}, r);
}

}  // namespace tally
