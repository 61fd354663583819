#include "config/hardware.h"
#include "config/names.h"
#include "config/quantization.h"
#include "estimate/defaults.h"
#include "estimate/expert_parallel.h"
#include "estimate/optimizer.h"
#include "estimate/step_timeline.h"
#include "sections/sections.h"
#include "util/units.h"

namespace tally {
namespace {

using E = const MemoryEstimate&;

std::string N(uint64_t n) { return std::to_string(n); }
const Settings& S(E e) { return *e.settings; }

Cell Train(E e, uint64_t TrainMemory::*field) { return When(e.train.has_value(), e.train ? (*e.train).*field : 0); }
Cell Infer(E e, uint64_t InferMemory::*field) { return When(e.infer.has_value(), e.infer ? (*e.infer).*field : 0); }
Cell Host(E e, uint64_t TrainMemory::*field, bool present = true) {
  return When(e.train.has_value() && S(e).offload != Offload::kNone && present, e.train ? (*e.train).*field : 0);
}

// "tensor-parallel tensors / tp", with the K/V projections' cap where tp passes the KV heads.
// --ep: each device holds E / ep of every MoE block's routed experts (estimate/expert_parallel.h).
std::string TensorParallelShare(E e) {
  const Settings& s = S(e);
  std::string experts = s.ep > 1 ? "; routed experts / " + N(s.ep) + " expert-parallel ranks" : "";
  // --etp: each routed expert split over etp ranks instead of tp.
  if (s.expert_tp() != s.tp) experts += "; each routed expert / " + N(s.expert_tp()) + " (--etp)";
  if (s.tp <= 1) return experts;
  const uint64_t kv = e.transformer ? e.spec->transformer.n_kv_heads : s.tp;
  return "; tensor-parallel tensors / " + N(s.tp) + (s.tp > kv ? " (K/V / " + N(kv) + ")" : "") + experts;
}

std::string Sharding(E e, uint64_t from_stage) {
  const Settings& s = S(e);
  std::string out = TensorParallelShare(e);
  if (s.pp > 1) out += "; this pipeline stage's layers";
  if (s.zero >= from_stage && e.gradient_ranks > 1) {
    out += "; / " + N(e.gradient_ranks) + (s.cp > 1 ? " data- x context-parallel" : " data-parallel") +
           " ranks (ZeRO-" + N(s.zero) + ")";
  }
  if (s.zero >= from_stage && ExpertGrid(s))
    out += ", the routed experts' / " + N(e.expert_data_parallel) + " (tp x cp x dp / (ep x etp))";
  return out;
}

std::string DTypeBytes(DType d) {
  return FormatDouble(static_cast<double>(BitsPer(d)) / 8) + " (" + DTypeName(d) + ")";
}

// The KV cache's formula with its numbers: one term per kind of attention layer; `cross`: the
// cross-attention layers' alone (an encoder–decoder's, at the source length), else the others'.
std::string KvExplain(E e, bool cross) {
  const Settings& s = S(e);
  const KvFormula& f = e.kv;
  const std::string bytes = DTypeBytes(e.kv_dtype);
  const uint64_t seq = e.model().seq;
  if (f.uniform) {
    const TransformerSpec& t = e.spec->transformer;
    const std::string tokens =
        s.kv_block ? N(f.tokens) + " (" + N(seq) + " in whole pages of " + N(*s.kv_block) + ")" : N(seq);
    return "2 · L · g · d · bytes · b · s = 2 · " + N(t.n_layers) + " · " + N(f.heads) + " · " + N(t.head_dim) + " · " +
           bytes + " · " + N(e.infer_batch) + " · " + tokens;
  }
  // Σ over layer kinds: layers · elements per token per device · tokens kept · b · bytes.
  std::string out;
  for (const KvTerm& k : cross ? f.cross : f.self) {
    out += (out.empty() ? "" : " + ") + N(k.layers) + " " + Name(k.kind) + (k.span > 0 ? "(" + N(k.span) + ")" : "") +
           " layers · " + N(k.elements) + " · " + N(k.tokens) + " tokens";
  }
  if (out.empty() && cross) out = "0";
  return out + " · " + N(e.infer_batch) + " · " + bytes +
         (s.kv_block ? "; tokens in whole pages of " + N(*s.kv_block) : "") +
         (s.pp > 1 ? "; the most-loaded stage's share" : "");
}

// The SSM state's formula with its numbers: one term per kind of state-space layer.
std::string SsmStateExplain(E e) {
  std::string out;
  for (const SsmTerm& t : e.ssm_terms) out += (out.empty() ? "" : " + ") + N(t.layers) + " layers · " + N(t.elements);
  return out + " (conv + SSM state per sequence) · " + N(e.infer_batch) + " · " + DTypeBytes(S(e).dtypes.activation) +
         (S(e).pp > 1 ? "; the most-loaded stage's share" : "");
}

std::string KorthikantiExplain(E e) {
  const Korthikanti& k = *e.korthikanti;
  const Settings& s = S(e);
  // Without the s² attention tensors: the 5·a·s/h term drops (§5; Eq. 6 with sequence parallelism).
  const std::string without = std::string(" without its 5·a·s/h term (") +
                              (s.recompute == Recompute::kSelective ? "selective recomputation" : "flash attention") +
                              ")";
  const bool drop = k.no_attention_scores;
  std::string formula;
  switch (k.equation) {
    case KorthikantiEquation::kFull:
      formula = s.sp ? "2·s·b·h/t (§5, full recomputation)" : "2·s·b·h (§5, full recomputation)";
      break;
    case KorthikantiEquation::kEq2:
      formula = drop ? "s·b·h·(10 + 24/t): Eq. 2" + without : "s·b·h·(10 + 24/t + 5·a·s/(h·t)) (Eq. 2)";
      break;
    case KorthikantiEquation::kEq4:
      formula = drop ? "s·b·h/t·34: Eq. 4" + without : "s·b·h/t·(34 + 5·a·s/h) (Eq. 4)";
      break;
    case KorthikantiEquation::kEq1:
      formula = drop ? "34·s·b·h: Eq. 1" + without : "s·b·h·(34 + 5·a·s/h) (Eq. 1)";
      break;
  }
  if (s.cp > 1) formula += " / cp, cp = " + N(s.cp);
  return formula + ", s = " + N(k.s) + ", b = " + N(k.b) + ", h = " + N(k.h) + ", a = " + N(k.a) +
         (k.t > 1 ? ", t = " + N(k.t) : "") +
         ": a GPT block at 2-byte activations and 1-byte masks; without LayerNorm's fp32 mean and "
         "rstd (16·s·b bytes)";
}

// What an --offload moves off the device, said where its line reads 0.
std::string Offloaded(E e) {
  return S(e).offload == Offload::kNone ? "" : "; --offload: in host memory instead (memory.train.host)";
}

std::string OffloadPartition(E e) { return "this device's ZeRO-" + N(S(e).zero) + " partition"; }

std::string TrainWeightsExplain(E e) {
  const Settings& s = S(e);
  const Precisions& d = s.dtypes;
  const std::optional<Precisions> adapter = AdapterDtypes(s);
  return std::string("params x ") + N(BitsPer(d.param) / 8) + " B (" + DTypeName(d.param) + ")" +
         (adapter ? ", LoRA's adapters x 4 B (fp32, as PEFT keeps them: --lora-dtype fp32)" : "") +
         (e.frozen ? ", frozen block matrices in " + QuantizationPhrase(*e.frozen) +
                         (s.quant == Quant::kNone ? " (quantization_config)" : "") + ", + " +
                         FormatGrouped(e.train->dequant) + " B to dequantize the largest at " + DTypeName(d.activation)
                   : "") +
         Sharding(e, 3) +
         (s.offload == Offload::kParams
              ? "; --offload params: the weights gathered at once instead: those outside the blocks and two of "
                "the largest block (running, prefetched; FSDP per-block wrapping)"
              : "");
}

std::string TrainActivationsExplain(E e) {
  const Settings& s = S(e);
  const std::string recompute = s.recompute == Recompute::kOp ? "torchtitan's per-op (op)" : RecomputeName(s.recompute);
  return "unique tensors saved for backward, " + recompute + " recomputation, " + AttentionName(s.attention) +
         " attention, " + DTypeName(s.dtypes.activation) + (s.pp > 1 ? ", x micro-batches in flight (1F1B)" : "") +
         (s.recompute == Recompute::kOp ? " (torchtitan's parallelize_llama.py, _save_list)"
                                        : " (Korthikanti et al. 2022)") +
         (s.cp > 1 ? "; / " + N(s.cp) +
                         " context-parallel ranks, each keeping s/cp tokens (weights, gradients "
                         "and optimizer states do not shrink but by ZeRO)"
                   : "");
}

std::string InferWeightsExplain(E e) {
  const Settings& s = S(e);
  if (e.checkpoint_weights) {
    return "the checkpoint's bytes (" + e.spec->checkpoint->format +
           " headers): each role's stored bytes (attention, MLP, norms, embedding, head) over the graph's "
           "tensors of that role by elements; a role it lacks: params x " +
           DTypeName(e.infer_weight_dtype) + TensorParallelShare(e);
  }
  const std::optional<QuantizationSpec>& quant = e.infer_quantization;
  return std::string("params x ") + DTypeName(e.infer_weight_dtype) +
         (quant
              ? ", quantized: " + QuantizationPhrase(*quant) + (s.quant == Quant::kNone ? " (quantization_config)" : "")
              : "") +
         TensorParallelShare(e);
}

std::string InferGroupLabel(E e) {
  std::string seq = e.transformer ? ", seq " + N(e.model().seq) : "";
  if (e.model().target_seq > 0) seq += ", target " + N(e.model().target_seq);
  return "inference (batch " + N(e.infer_batch) + seq + ")";
}

std::string LimitExplain(E e) {
  const Settings& s = S(e);
  return (s.gpu_memory_utilization ? FormatFixed(*s.gpu_memory_utilization, 2) + " (--gpu-memory-utilization) x "
                                   : "") +
         FormatBytes(s.device->memory_bytes, UnitSystem::kIec) +
         (*s.reserve > 0 ? " - " + FormatBytes(*s.reserve, UnitSystem::kIec) + " kept back (--reserve)" : "") +
         "; the CUDA context, workspaces and fragmentation are lines of memory.train.device and memory.infer.device";
}

std::string FitsLabel(E e) { return "fits in " + S(e).device->name; }

Cell Step(E e, uint64_t StepTimeline::*field) { return When(e.step.has_value(), e.step ? e.step->step.*field : 0); }
Cell Overhead(E e, uint64_t DeviceOverheads::*field, bool train) {
  if (train) return When(e.step.has_value(), e.step ? e.step->overheads.*field : 0);
  return When(e.infer.has_value(), e.infer_overheads.*field);
}

std::string PeakExplain(E e) {
  const StepTimeline& t = e.step->step;
  std::string parts;
  for (size_t c = 0; c < kLiveCategories; ++c) {
    const auto category = static_cast<LiveCategory>(c);
    parts += (parts.empty() ? "" : " + ") + std::string(LiveCategoryName(category)) + " " +
             FormatBytes(t.at_peak[category], UnitSystem::kIec);
  }
  return "the most bytes live over the step's allocations and frees (forward, loss, backward, optimizer; "
         "docs/timeline.md), in " +
         std::string(StepPhaseName(t.peak_phase)) + " at " + t.peak_at + ": " + parts +
         (e.train->overhead > 0 ? "; + --overhead" : "") +
         "; optimizer step: " + OptimizerImplName(S(e).optimizer_impl) + ", loss: " + Name(S(e).loss_kernel);
}

std::string ContextExplain(E e) {
  return S(e).cuda_context ? std::string("as given (--cuda-context)")
                           : "PyTorch's CUDA context with lazily loaded kernels, measured on an H100 (CUDA 13.0, "
                             "PyTorch 2.11; docs/validation.md); --cuda-context";
}
std::string WorkspaceExplain(E e) {
  return S(e).cublas_workspace ? std::string("as given (--cublas-workspace)")
                               : "PyTorch's cuBLAS workspace, CUBLAS_WORKSPACE_CONFIG :4096:8 on Hopper "
                                 "(CublasHandlePool.cpp); --cublas-workspace";
}
std::string NcclExplain(E e) {
  return S(e).nccl_buffers ? std::string("as given (--nccl-buffers)")
                           : "NCCL_BUFFSIZE 4 MiB x 32 channels x send and receive, with more than one device; "
                             "--nccl-buffers";
}
std::string FragmentationExplain(E e) {
  return FormatFixed(S(e).fragmentation.value_or(kDefaultFragmentation) * 100, 1) +
         "% of the peak: the caching allocator's reserved bytes beyond its live tensors (512 B blocks, 2 MiB and 20 "
         "MiB "
         "segments, split blocks); --fragmentation";
}

}  // namespace

void AddMemoryNotes(E e, Report& r) {
  const ModelSpec& spec = *e.spec;
  const Settings& s = S(e);
  // Settings that change nothing here, said rather than silently ignored.
  const bool frozen = s.lora_rank > 0 || !s.frozen.empty();
  if (s.quant != Quant::kNone && s.mode != Mode::kInfer && !frozen) {
    r.notes.push_back(
        "--quant: training keeps trainable weights unquantized; it applies to inference and to "
        "frozen weights (QLoRA with --lora)");
  }
  if (spec.quantization && s.quant == Quant::kNone && s.mode != Mode::kInfer && !frozen) {
    r.notes.push_back("training: the config's quantization_config (" + spec.quantization->name +
                      ") stores the weights quantized, and quantized weights do not train (transformers asks for "
                      "adapters): full training is costed on the weights at the training dtype; --lora R keeps "
                      "them quantized and frozen (QLoRA)");
  }
  if (spec.family == Family::kSequential && s.kv_dtype)
    r.notes.push_back("--kv-dtype: a sequential model has no KV cache");
  if (e.transformer && spec.transformer.n_heads == 0 && s.kv_dtype)
    r.notes.push_back("--kv-dtype: '" + spec.name + "' has no KV cache; its SSM state is kept at the activation dtype");
  if (s.zero > 0 && e.gradient_ranks == 1) {
    r.notes.push_back("--zero " + N(s.zero) + ": one data-parallel rank, so ZeRO shards nothing (add --gpus)");
  }
  if (s.loss_kernel == LossKernel::kChunked && e.model().vocab == 0 && s.mode != Mode::kInfer) {
    r.notes.push_back("--loss-kernel chunked: '" + spec.name +
                      "' has no language-model head to chunk; its loss is counted as it runs, whole");
  }
  if (s.lora_rank > 0 && !s.frozen.empty())
    r.notes.push_back("--trainable: moot with --lora, which freezes every base weight");
  // (A model without attention, Mamba, has no K/V heads.)
  if (e.transformer && spec.transformer.n_kv_heads > 0 && s.tp > spec.transformer.n_kv_heads) {
    r.notes.push_back("--tp " + N(s.tp) + " exceeds the " + N(spec.transformer.n_kv_heads) +
                      " KV heads: each rank holds one K/V head, replicated " + N(s.tp / spec.transformer.n_kv_heads) +
                      " times, in its weights, saved K/V activations, KV cache and K/V compute (vLLM's layout; "
                      "Megatron-Core training allows tp up to the KV heads); the model FLOPs count each once");
  }
  // With --hardware: a warning for each ledger that does not fit (one that fits is no warning: the
  // report's memory.*.fits says so).
  const auto verdict = [&](const char* what, const std::optional<uint64_t>& needed, std::optional<bool> fits) {
    if (!fits || *fits) return;
    r.notes.push_back("'" + spec.name + "': " + what + " needs " + FormatBytes(*needed, UnitSystem::kIec) +
                      " per device; " + s.device->name + " leaves " + FormatBytes(*e.limit, UnitSystem::kIec) + ": " +
                      "it does not fit (see 'tally fit')");
  };
  verdict("training", e.step ? std::optional(e.step->device) : std::nullopt, e.train_fits);
  verdict("inference", e.infer ? std::optional(e.infer_device) : std::nullopt, e.infer_fits);
}

const KeyTable<MemoryEstimate>& MemoryKeys() {
  static const KeyTable<MemoryEstimate> kKeys = {
      {.key = "memory", .label = "Memory per device"},
      {.key = "memory.train",
       .label_of =
           [](E e) {
             return "training (micro-batch " + N(S(e).micro_batch) + ", " + PrecisionName(S(e).precision) + ", " +
                    OptimizerName(S(e).optimizer) + ")";
           },
       .ledger = true},
      {.key = "memory.train.weights",
       .label = "weights",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::weights); },
       .explain = TrainWeightsExplain},
      {.key = "memory.train.gradients",
       .label = "gradients",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::gradients); },
       .explain =
           [](E e) {
             const DType grad = AdapterDtypes(S(e)).value_or(S(e).dtypes).grad;
             return std::string("trainable params x ") + N(BitsPer(grad) / 8) + " B (" + DTypeName(grad) + ")" +
                    Sharding(e, 2) + Offloaded(e);
           }},
      {.key = "memory.train.master_weights",
       .label = "master weights",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::master_weights); },
       .explain =
           [](E e) {
             if (AdapterDtypes(S(e))) return std::string("none: LoRA's adapters train in fp32 themselves");
             return S(e).dtypes.master
                        ? "trainable params x 4 B fp32 copy (Micikevicius et al. 2017)" + Sharding(e, 1) + Offloaded(e)
                        : std::string("none: the policy keeps no master copy");
           }},
      {.key = "memory.train.optimizer",
       .label = "optimizer states",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::optimizer); },
       .explain =
           [](E e) {
             return std::string(OptimizerStateFormula(S(e).optimizer)) + ", " +
                    DTypeName(AdapterDtypes(S(e)).value_or(S(e).dtypes).state) + Sharding(e, 1) +
                    " (ZeRO, Rajbhandari et al. 2019, §5)" + Offloaded(e);
           }},
      {.key = "memory.train.activations",
       .label = "activations",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::activations); },
       .explain = TrainActivationsExplain},
      {.key = "memory.train.overhead",
       .label = "overhead (--overhead)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.train && e.train->overhead > 0, e.train ? e.train->overhead : 0); },
       .explain = [](E) -> std::string { return "as given"; }},
      {.key = "memory.train.total",
       .label = "total",
       .unit = Unit::kByte,
       .value = [](E e) { return Train(e, &TrainMemory::total); },
       .explain = [](E) -> std::string { return "the sum of the lines above"; }},
      // --offload: what the device's partition keeps in host memory instead (estimate/offload.h), out
      // of the device's total.
      {.key = "memory.train.host",
       .label_of = [](E e) { return "host memory (--offload " + std::string(Name(S(e).offload)) + ")"; },
       .ledger = true},
      {.key = "memory.train.host.weights",
       .label = "weights",
       .unit = Unit::kByte,
       .value = [](E e) { return Host(e, &TrainMemory::host_weights, S(e).offload == Offload::kParams); },
       .explain =
           [](E e) {
             return OffloadPartition(e) +
                    " of the weights, streamed in for each pass (ZeRO-Infinity, Rajbhandari et al. 2021)";
           }},
      {.key = "memory.train.host.gradients",
       .label = "gradients",
       .unit = Unit::kByte,
       .value = [](E e) { return Host(e, &TrainMemory::host_gradients); },
       .explain =
           [](E e) {
             return OffloadPartition(e) +
                    ", accumulated there; the device holds them only bucket by bucket as the backward produces "
                    "them (communication buffers, --overhead) (ZeRO-Offload, Ren et al. 2021, §4.1)";
           }},
      {.key = "memory.train.host.master_weights",
       .label = "master weights",
       .unit = Unit::kByte,
       .value = [](E e) { return Host(e, &TrainMemory::host_master); },
       .explain = OffloadPartition},
      {.key = "memory.train.host.optimizer",
       .label = "optimizer states",
       .unit = Unit::kByte,
       .value = [](E e) { return Host(e, &TrainMemory::host_optimizer); },
       .explain = [](E e) { return OffloadPartition(e) + "; the optimizer step runs on the CPU"; }},
      {.key = "memory.train.host.total",
       .label = "total",
       .unit = Unit::kByte,
       .value = [](E e) { return Host(e, &TrainMemory::host); },
       .explain = [](E) -> std::string {
         return "the sum of the lines above; a node holds it once per device (time.offload.host_bytes_per_node)";
       }},
      {.key = "memory.train.stage",
       .label = "most-loaded pipeline stage",
       .unit = Unit::kNumber,
       .value = [](E e) { return When(e.train && S(e).pp > 1, e.train ? e.train->stage : 0); }},
      {.key = "activations", .label = "Activations"},
      {.key = "activations.per_layer",
       .label = "activations of one block (micro-batch, this device)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.train && e.transformer, e.train ? e.train->per_layer_activations : 0); },
       .explain = [](E e) -> std::string {
         return e.ssm ? "the unique tensors one block saves for backward, as mamba_ssm's fused kernels do "
                        "(docs/memory.md)"
                      : "the unique tensors one block saves for backward, as eager PyTorch's autograd does";
       }},
      {.key = "activations.korthikanti_per_layer",
       .label = "Korthikanti et al. 2022 per block",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.korthikanti.has_value(), e.korthikanti ? e.korthikanti->bytes : 0); },
       .explain = KorthikantiExplain},
      {.key = "activations.korthikanti_ratio",
       .label = "exact / Korthikanti et al.",
       .unit = Unit::kRatio,
       .value = [](E e) { return When(e.korthikanti.has_value(), e.korthikanti ? e.korthikanti->ratio : 0.0); }},
      {.key = "memory.infer", .label_of = InferGroupLabel, .ledger = true},
      {.key = "memory.infer.weights",
       .label = "weights",
       .unit = Unit::kByte,
       .value = [](E e) { return Infer(e, &InferMemory::weights); },
       .explain = InferWeightsExplain},
      {.key = "memory.weights_source",
       .label = "inference weight bytes from",
       .value = [](E e) { return When(e.infer && e.spec->checkpoint, e.weights_source); }},
      {.key = "memory.infer.kv_cache",
       .label = "KV cache",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.infer && e.transformer, e.infer ? e.infer->kv_cache : 0); },
       .explain =
           [](E e) { return e.model().kv.empty() ? std::string("none: no attention layers") : KvExplain(e, false); }},
      {.key = "memory.infer.cross_kv_cache",
       .label = "cross-attention KV cache (source tokens)",
       .unit = Unit::kByte,
       // An encoder–decoder's over its source; Mllama's over its images' tokens.
       .value =
           [](E e) {
             return When(e.infer && (e.model().target_seq > 0 || e.infer->cross_kv_cache > 0),
                         e.infer ? e.infer->cross_kv_cache : 0);
           },
       .explain = [](E e) { return KvExplain(e, true); }},
      {.key = "memory.infer.ssm_state",
       .label = "SSM state",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.infer && !e.model().states.empty(), e.infer ? e.infer->ssm_state : 0); },
       .explain = SsmStateExplain},
      {.key = "memory.infer.activations",
       .label = "activations (largest live pair)",
       .unit = Unit::kByte,
       .value = [](E e) { return Infer(e, &InferMemory::activations); },
       .explain =
           [](E e) {
             const std::optional<uint64_t>& chunk = S(e).max_batched_tokens;
             return chunk ? "the largest node input + output of one forward pass of min(batch x seq, "
                            "--max-batched-tokens " +
                                N(*chunk) + ") tokens (chunked prefill), plus fp32 logits of min(batch, that) positions"
                          : std::string(
                                "the largest node input + output of one forward pass, plus fp32 logits of the last "
                                "position");
           }},
      {.key = "memory.infer.overhead",
       .label = "overhead (--overhead)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.infer && e.infer->overhead > 0, e.infer ? e.infer->overhead : 0); },
       .explain = [](E) -> std::string { return "as given"; }},
      {.key = "memory.infer.total",
       .label = "total",
       .unit = Unit::kByte,
       .value = [](E e) { return Infer(e, &InferMemory::total); },
       .explain = [](E) -> std::string { return "the sum of the lines above"; }},
      {.key = "kv_cache", .label = "KV cache"},
      {.key = "kv_cache.per_token",
       .label = "KV cache per token (all layers)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.kv_per_token.has_value(), e.kv_per_token.value_or(0)); },
       .explain = [](E) -> std::string {
         return "2 · L · g · d · bytes (K and V, or MLA's latent, of every layer; sliding and chunked layers stop "
                "growing at their span: memory.infer.kv_cache is exact)";
       }},
      {.key = "kv_cache.ssm_state_per_sequence",
       .label = "SSM state per sequence (all layers)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.ssm_state_per_sequence.has_value(), e.ssm_state_per_sequence.value_or(0)); },
       .explain = [](E) -> std::string {
         return "the convolution and SSM states of every state-space layer: constant, whatever the context";
       }},
  };
  return kKeys;
}

const KeyTable<MemoryEstimate>& MemoryStepKeys() {
  static const KeyTable<MemoryEstimate> kKeys = {
      // The step's peak (estimate/step_timeline.h) and what the device holds beyond the tensors.
      {.key = "memory.train.peak",
       .label = "peak of the step",
       .unit = Unit::kByte,
       .value = [](E e) { return Step(e, &StepTimeline::peak); },
       .explain = PeakExplain},
      {.key = "memory.train.peak_phase",
       .label = "peak in",
       .value =
           [](E e) {
             return When(e.step.has_value(), std::string(e.step ? StepPhaseName(e.step->step.peak_phase) : ""));
           }},
      {.key = "memory.train.peak_at",
       .label = "peak at",
       .value = [](E e) { return When(e.step.has_value(), e.step ? e.step->step.peak_at : std::string()); }},
      {.key = "memory.train.cuda_context",
       .label = "CUDA context",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::cuda_context, true); },
       .explain = ContextExplain},
      {.key = "memory.train.cublas_workspace",
       .label = "cuBLAS workspace",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::cublas_workspace, true); },
       .explain = WorkspaceExplain},
      {.key = "memory.train.nccl_buffers",
       .label = "NCCL buffers",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.step && S(e).gpus > 1, e.step ? e.step->overheads.nccl : 0); },
       .explain = NcclExplain},
      {.key = "memory.train.fragmentation",
       .label = "allocator fragmentation",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::fragmentation, true); },
       .explain = FragmentationExplain},
      {.key = "memory.train.device",
       .label = "on the device (peak + the lines above)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.step.has_value(), e.step ? e.step->device : 0); },
       .explain = [](E) -> std::string { return "what the device must hold: what fits and fit compare"; }},
      {.key = "memory.infer.peak",
       .label = "peak (the total)",
       .unit = Unit::kByte,
       .value = [](E e) { return Infer(e, &InferMemory::total); },
       .explain = [](E) -> std::string {
         return "the weights, the cache and the largest live node input + output are all held at once";
       }},
      {.key = "memory.infer.cuda_context",
       .label = "CUDA context",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::cuda_context, false); },
       .explain = ContextExplain},
      {.key = "memory.infer.cublas_workspace",
       .label = "cuBLAS workspace",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::cublas_workspace, false); },
       .explain = WorkspaceExplain},
      {.key = "memory.infer.nccl_buffers",
       .label = "NCCL buffers",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.infer && S(e).gpus > 1, e.infer_overheads.nccl); },
       .explain = NcclExplain},
      {.key = "memory.infer.fragmentation",
       .label = "allocator fragmentation",
       .unit = Unit::kByte,
       .value = [](E e) { return Overhead(e, &DeviceOverheads::fragmentation, false); },
       .explain = FragmentationExplain},
      {.key = "memory.infer.device",
       .label = "on the device (peak + the lines above)",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.infer.has_value(), e.infer_device); },
       .explain = [](E e) -> std::string {
         return S(e).gpu_memory_utilization
                    ? "what the server's --gpu-memory-utilization share must hold, its runtime included (vLLM)"
                    : "what the device must hold: what fits and fit compare";
       }},
      // With --hardware: the usable memory and, for each ledger, whether it fits.
      {.key = "memory.limit",
       .unit = Unit::kByte,
       .value = [](E e) { return When(e.limit.has_value(), e.limit.value_or(0)); },
       .explain = LimitExplain,
       .label_of = [](E e) { return "usable per device (" + S(e).device->name + ")"; }},
      {.key = "memory.train.fits",
       .unit = Unit::kBool,
       .value = [](E e) { return When(e.train_fits.has_value(), e.train_fits.value_or(false)); },
       .label_of = FitsLabel},
      {.key = "memory.infer.fits",
       .unit = Unit::kBool,
       .value = [](E e) { return When(e.infer_fits.has_value(), e.infer_fits.value_or(false)); },
       .label_of = FitsLabel},
  };
  return kKeys;
}

}  // namespace tally
