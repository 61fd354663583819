#include "estimate/memory_report.h"

#include "config/names.h"
#include "config/resolve.h"
#include "estimate/checkpoint_weights.h"
#include "estimate/context_parallel.h"
#include "estimate/expert_parallel.h"
#include "estimate/kv_cache.h"
#include "estimate/memory.h"
#include "estimate/optimizer.h"
#include "util/checked_math.h"
#include "util/units.h"

namespace tally {
namespace {

std::string N(uint64_t n) { return std::to_string(n); }

// "tensor-parallel tensors / tp", with the K/V projections' cap where tp passes the KV heads.
// --ep: each device holds E / ep of every MoE block's routed experts (estimate/expert_parallel.h).
std::string TensorParallelShare(const ModelSpec& spec, const Settings& s) {
  std::string experts = s.ep > 1 ? "; routed experts / " + N(s.ep) + " expert-parallel ranks" : "";
  if (s.tp <= 1) return experts;
  const uint64_t kv = spec.family == Family::kTransformer ? spec.transformer.n_kv_heads : s.tp;
  return "; tensor-parallel tensors / " + N(s.tp) + (s.tp > kv ? " (K/V / " + N(kv) + ")" : "") + experts;
}

std::string Sharding(const ModelSpec& spec, const Settings& s, uint64_t from_stage) {
  std::string out = TensorParallelShare(spec, s);
  if (s.pp > 1) out += "; this pipeline stage's layers";
  if (s.zero >= from_stage && GradientRanks(s) > 1) {
    out += "; / " + N(GradientRanks(s)) + (s.cp > 1 ? " data- x context-parallel" : " data-parallel") +
           " ranks (ZeRO-" + N(s.zero) + ")";
  }
  if (s.zero >= from_stage && s.ep > 1)
    out += ", the routed experts' / " + N(ExpertDataParallel(s)) + " (dp x cp / ep)";
  return out;
}

// The KV cache's formula with its numbers: one term per kind of attention layer; `cross`: the
// cross-attention layers' alone (an encoder–decoder's, at the source length), else the others'.
std::string KvExplain(const ModelSpec& spec, const Settings& s, const MemoryModel& model, uint64_t batch,
                      bool cross = false) {
  const DType kv = KvDtype(s);
  const std::string bytes = FormatDouble(static_cast<double>(BitsPer(kv)) / 8) + " (" + DTypeName(kv) + ")";
  const TransformerSpec& t = spec.transformer;
  const bool uniform = model.kv.size() == 1 && model.kv[0].kind == AttentionKind::kFull;
  if (uniform && model.kv[0].elements_per_token == 2 * t.n_kv_heads * t.head_dim) {
    const uint64_t heads = CeilDiv(t.n_kv_heads, s.tp);
    const std::string tokens =
        s.kv_block ? N(PagedTokens(model.seq, s)) + " (" + N(model.seq) + " in whole pages of " + N(*s.kv_block) + ")"
                   : N(model.seq);
    return "2 · L · g · d · bytes · b · s = 2 · " + N(t.n_layers) + " · " + N(heads) + " · " + N(t.head_dim) + " · " +
           bytes + " · " + N(batch) + " · " + tokens;
  }
  // Σ over layer kinds: layers · elements per token per device · tokens kept · b · bytes.
  const uint64_t context = model.target_seq > 0 ? model.target_seq : model.seq;
  std::string out;
  for (const KvEntry& e : model.kv) {
    if ((e.kind == AttentionKind::kCross) != cross) continue;
    const uint64_t layers = StageCopies(model, e.block_type, false, 0, 1);
    out += (out.empty() ? "" : " + ") + N(layers) + " " + Name(e.kind) + (e.span > 0 ? "(" + N(e.span) + ")" : "") +
           " layers · " + N(CeilDiv(e.elements_per_token, TpShards(true, e.tp_max_shards, s.tp))) + " · " +
           N(PagedTokens(KvTokens(e.kind, e.span, context), s)) + " tokens";
  }
  if (out.empty() && cross) out = "0";
  return out + " · " + N(batch) + " · " + bytes + (s.kv_block ? "; tokens in whole pages of " + N(*s.kv_block) : "") +
         (s.pp > 1 ? "; the most-loaded stage's share" : "");
}

// The SSM state's formula with its numbers: one term per kind of state-space layer.
std::string SsmStateExplain(const Settings& s, const MemoryModel& model, uint64_t batch) {
  std::string out;
  for (const StateEntry& e : model.states) {
    out += (out.empty() ? "" : " + ") + N(StageCopies(model, e.block_type, false, 0, 1)) + " layers · " +
           N(e.elements_per_sequence);
  }
  return out + " (conv + SSM state per sequence) · " + N(batch) + " · " +
         FormatDouble(static_cast<double>(BitsPer(s.dtypes.activation)) / 8) + " (" + DTypeName(s.dtypes.activation) +
         ")" + (s.pp > 1 ? "; the most-loaded stage's share" : "");
}

// Korthikanti et al. 2022's per-layer activation bytes, for comparison: Eq. 1 (s·b·h·(34 + 5·a·s/h)),
// Eq. 2 with tensor parallelism t, Eq. 4 with sequence parallelism, §5's selective (the 5·a·s/h term
// dropped: Eq. 6; flash attention keeps no s² tensors either) and full (2·s·b·h) recomputation. They
// assume a GPT block with 2-byte activations, 1-byte dropout masks and eager attention, and leave out
// LayerNorm's fp32 mean and rstd, which autograd keeps: 16·s·b bytes a block under those conditions
// (tests/unit/memory_test.cc).
void AddKorthikanti(const ModelSpec& spec, const Settings& s, const MemoryModel& model, uint64_t exact, Report& r) {
  const std::string what = "Korthikanti et al.'s activation formula";
  const uint64_t h = spec.transformer.d_model, a = spec.transformer.n_heads, t = s.tp;
  const uint64_t sbh = CheckedProduct({model.seq, s.micro_batch, h}, what);
  const uint64_t as2b = CheckedProduct({5, a, model.seq, model.seq, s.micro_batch}, what);
  const bool flash = s.attention == Attention::kFlash;
  const bool selective = s.recompute == Recompute::kSelective || flash;
  uint64_t bytes = 0;
  std::string formula;
  // Without the s² attention tensors: the 5·a·s/h term drops (§5; Eq. 6 with sequence parallelism).
  const std::string without = std::string(" without its 5·a·s/h term (") +
                              (s.recompute == Recompute::kSelective ? "selective recomputation" : "flash attention") +
                              ")";
  if (s.recompute == Recompute::kFull) {
    bytes = CheckedMul(2, sbh, what) / (s.sp ? t : 1);
    formula = s.sp ? "2·s·b·h/t (§5, full recomputation)" : "2·s·b·h (§5, full recomputation)";
  } else if (t > 1 && !s.sp) {
    bytes = CheckedAdd(CheckedMul(10, sbh, what), CheckedMul(24, sbh, what) / t, what);
    if (!selective) bytes = CheckedAdd(bytes, as2b / t, what);
    formula = selective ? "s·b·h·(10 + 24/t): Eq. 2" + without : "s·b·h·(10 + 24/t + 5·a·s/(h·t)) (Eq. 2)";
  } else {
    bytes = CheckedMul(34, sbh, what);
    if (!selective) bytes = CheckedAdd(bytes, as2b, what);
    bytes /= s.sp ? t : 1;
    formula = s.sp ? (selective ? "s·b·h/t·34: Eq. 4" + without : "s·b·h/t·(34 + 5·a·s/h) (Eq. 4)")
                   : (selective ? "34·s·b·h: Eq. 1" + without : "s·b·h·(34 + 5·a·s/h) (Eq. 1)");
  }
  // Context parallel (flash attention only): every term is linear in s, and a device keeps s/cp tokens.
  bytes /= s.cp;
  if (s.cp > 1) formula += " / cp, cp = " + N(s.cp);
  r.Set("activations.korthikanti_per_layer", "Korthikanti et al. 2022 per block", bytes, Unit::kByte,
        formula + ", s = " + N(model.seq) + ", b = " + N(s.micro_batch) + ", h = " + N(h) + ", a = " + N(a) +
            (t > 1 ? ", t = " + N(t) : "") +
            ": a GPT block at 2-byte activations and 1-byte masks; without LayerNorm's fp32 mean and "
            "rstd (16·s·b bytes)");
  r.Set("activations.korthikanti_ratio", "exact / Korthikanti et al.",
        bytes == 0 ? 0.0 : static_cast<double>(exact) / static_cast<double>(bytes), Unit::kRatio);
}

// What an --offload moves off the device, said where its line reads 0.
std::string Offloaded(const Settings& s) {
  return s.offload == Offload::kNone ? "" : "; --offload: in host memory instead (memory.train.host)";
}

// --offload: what the device's partition keeps in host memory instead (estimate/offload.h), out of
// the device's total.
void AddHostMemory(const TrainMemory& m, const Settings& s, Report& r) {
  const bool params = s.offload == Offload::kParams;
  const std::string zero = "this device's ZeRO-" + N(s.zero) + " partition";
  r.Group("memory.train.host", "host memory (--offload " + std::string(Name(s.offload)) + ")").ledger = true;
  if (params) {
    r.Set("memory.train.host.weights", "weights", m.host_weights, Unit::kByte,
          zero + " of the weights, streamed in for each pass (ZeRO-Infinity, Rajbhandari et al. 2021)");
  }
  r.Set("memory.train.host.gradients", "gradients", m.host_gradients, Unit::kByte,
        zero +
            ", accumulated there; the device holds them only bucket by bucket as the backward produces them "
            "(communication buffers, --overhead) (ZeRO-Offload, Ren et al. 2021, §4.1)");
  r.Set("memory.train.host.master_weights", "master weights", m.host_master, Unit::kByte, zero);
  r.Set("memory.train.host.optimizer", "optimizer states", m.host_optimizer, Unit::kByte,
        zero + "; the optimizer step runs on the CPU");
  r.Set("memory.train.host.total", "total", m.host, Unit::kByte,
        "the sum of the lines above; a node holds it once per device (time.offload.host_bytes_per_node)");
}

void AddTraining(const ModelSpec& spec, const Settings& s, const MemoryModel& model, Report& r) {
  const TrainMemory m = TrainingMemory(s, model);
  const Precisions& d = s.dtypes;
  ReportNode& group = r.Group("memory.train", "training (micro-batch " + N(s.micro_batch) + ", " +
                                                  PrecisionName(s.precision) + ", " + OptimizerName(s.optimizer) + ")");
  group.ledger = true;
  const std::optional<QuantizationSpec> frozen = FrozenQuantization(model, s);
  const bool qlora = frozen && (s.lora_rank > 0 || !s.frozen.empty());
  r.Set("memory.train.weights", "weights", m.weights, Unit::kByte,
        std::string("params x ") + N(BitsPer(d.param) / 8) + " B (" + DTypeName(d.param) + ")" +
            (qlora ? ", frozen block matrices in " + QuantizationPhrase(*frozen) +
                         (s.quant == Quant::kNone ? " (quantization_config)" : "") + ", + " + FormatGrouped(m.dequant) +
                         " B to dequantize the largest at " + DTypeName(d.activation)
                   : "") +
            Sharding(spec, s, 3) +
            (s.offload == Offload::kParams
                 ? "; --offload params: the weights gathered at once instead: those outside the blocks and two of "
                   "the largest block (running, prefetched; FSDP per-block wrapping)"
                 : ""));
  r.Set("memory.train.gradients", "gradients", m.gradients, Unit::kByte,
        std::string("trainable params x ") + N(BitsPer(d.grad) / 8) + " B (" + DTypeName(d.grad) + ")" +
            Sharding(spec, s, 2) + Offloaded(s));
  r.Set("memory.train.master_weights", "master weights", m.master_weights, Unit::kByte,
        d.master ? "trainable params x 4 B fp32 copy (Micikevicius et al. 2017)" + Sharding(spec, s, 1) + Offloaded(s)
                 : std::string("none: the policy keeps no master copy"));
  r.Set("memory.train.optimizer", "optimizer states", m.optimizer, Unit::kByte,
        std::string(OptimizerStateFormula(s.optimizer)) + ", " + DTypeName(d.state) + Sharding(spec, s, 1) +
            " (ZeRO, Rajbhandari et al. 2019, §5)" + Offloaded(s));
  r.Set("memory.train.activations", "activations", m.activations, Unit::kByte,
        "unique tensors saved for backward, " + std::string(RecomputeName(s.recompute)) + " recomputation, " +
            AttentionName(s.attention) + " attention, " + DTypeName(d.activation) +
            (s.pp > 1 ? ", x micro-batches in flight (1F1B)" : "") + " (Korthikanti et al. 2022)" +
            (s.cp > 1 ? "; / " + N(s.cp) +
                            " context-parallel ranks, each keeping s/cp tokens (weights, gradients "
                            "and optimizer states do not shrink but by ZeRO)"
                      : ""));
  if (m.overhead > 0) r.Set("memory.train.overhead", "overhead (--overhead)", m.overhead, Unit::kByte, "as given");
  r.Set("memory.train.total", "total", m.total, Unit::kByte, "the sum of the lines above");
  if (s.offload != Offload::kNone) AddHostMemory(m, s, r);
  if (s.pp > 1) r.Set("memory.train.stage", "most-loaded pipeline stage", m.stage, Unit::kNumber);
  if (spec.family == Family::kTransformer) {
    const bool ssm = HasSsmBlocks(spec.transformer);
    r.Set("activations.per_layer", "activations of one block (micro-batch, this device)", m.per_layer_activations,
          Unit::kByte,
          ssm ? "the unique tensors one block saves for backward, as mamba_ssm's fused kernels do (README)"
              : "the unique tensors one block saves for backward, as eager PyTorch's autograd does");
    if (!ssm) AddKorthikanti(spec, s, model, m.per_layer_activations, r);  // a GPT block's formula
  }
}

void AddInference(const ModelSpec& spec, const Settings& s, const MemoryModel& model, Report& r) {
  const uint64_t batch = InferenceBatch(s);
  const InferMemory m = InferenceMemory(spec, s, model, batch);
  const DType weight = InferenceWeightDtype(spec, s);
  const std::optional<QuantizationSpec> quant = WeightQuantization(spec, s);
  const DType kv = KvDtype(s);
  std::string seq = spec.family == Family::kTransformer ? ", seq " + N(model.seq) : "";
  if (model.target_seq > 0) seq += ", target " + N(model.target_seq);
  ReportNode& group = r.Group("memory.infer", "inference (batch " + N(batch) + seq + ")");
  group.ledger = true;
  const bool stored = UsesCheckpointWeights(spec, s);
  r.Set("memory.infer.weights", "weights", m.weights, Unit::kByte,
        stored ? "the checkpoint's bytes (" + spec.checkpoint->format +
                     " headers): each role's stored bytes (attention, MLP, norms, embedding, head) over the graph's "
                     "tensors of that role by elements; a role it lacks: params x " +
                     DTypeName(weight) + TensorParallelShare(spec, s)
               : std::string("params x ") + DTypeName(weight) +
                     (quant ? ", quantized: " + QuantizationPhrase(*quant) +
                                  (s.quant == Quant::kNone ? " (quantization_config)" : "")
                            : "") +
                     TensorParallelShare(spec, s));
  if (spec.checkpoint) {
    r.Set("memory.weights_source", "inference weight bytes from",
          stored                    ? CheckpointRatesOf(*spec.checkpoint, model).Coverage()
          : s.quant != Quant::kNone ? "--quant"
                                    : "--param-dtype",
          Unit::kText);
  }
  if (spec.family == Family::kTransformer) {
    r.Set("memory.infer.kv_cache", "KV cache", m.kv_cache, Unit::kByte,
          model.kv.empty() ? std::string("none: no attention layers") : KvExplain(spec, s, model, batch));
  }
  if (model.target_seq > 0) {
    r.Set("memory.infer.cross_kv_cache", "cross-attention KV cache (source tokens)", m.cross_kv_cache, Unit::kByte,
          KvExplain(spec, s, model, batch, true));
  }
  if (!model.states.empty()) {
    r.Set("memory.infer.ssm_state", "SSM state", m.ssm_state, Unit::kByte, SsmStateExplain(s, model, batch));
  }
  r.Set(
      "memory.infer.activations", "activations (largest live pair)", m.activations, Unit::kByte,
      s.max_batched_tokens
          ? "the largest node input + output of one forward pass of min(batch x seq, --max-batched-tokens " +
                N(*s.max_batched_tokens) + ") tokens (chunked prefill), plus fp32 logits of min(batch, that) positions"
          : std::string("the largest node input + output of one forward pass, plus fp32 logits of the last position"));
  if (m.overhead > 0) r.Set("memory.infer.overhead", "overhead (--overhead)", m.overhead, Unit::kByte, "as given");
  r.Set("memory.infer.total", "total", m.total, Unit::kByte, "the sum of the lines above");
  if (spec.family == Family::kTransformer) {
    r.Set("kv_cache.per_token", "KV cache per token (all layers)", KvBytesPerToken(model, kv), Unit::kByte,
          "2 · L · g · d · bytes (K and V, or MLA's latent, of every layer; sliding and chunked layers stop "
          "growing at their span: memory.infer.kv_cache is exact)");
  }
  if (!model.states.empty()) {
    Settings whole = s;  // every layer, as kv_cache.per_token counts them
    whole.pp = 1;
    r.Set("kv_cache.ssm_state_per_sequence", "SSM state per sequence (all layers)", SsmStateBytes(model, 1, whole, 0),
          Unit::kByte, "the convolution and SSM states of every state-space layer: constant, whatever the context");
  }
}

}  // namespace

void AddMemorySettings(const ModelSpec& spec, const Settings& s, Report& r) {
  (void)spec;
  const Precisions& d = s.dtypes;
  r.Set("settings.micro_batch", "micro-batch (per device, per pass)", s.micro_batch, Unit::kNumber);
  r.Set("settings.global_batch", "global batch (batch x data-parallel)", s.global_batch(), Unit::kNumber);
  r.Set("settings.grad_accum", "gradient accumulation", s.grad_accum, Unit::kNumber);
  r.Set("settings.precision", "precision policy", PrecisionName(s.precision), Unit::kText);
  r.Set("settings.param_dtype", "dtype: weights", DTypeName(d.param), Unit::kText);
  r.Set("settings.grad_dtype", "dtype: gradients", DTypeName(d.grad), Unit::kText);
  r.Set("settings.master_dtype", "dtype: master weights", d.master ? DTypeName(*d.master) : "none", Unit::kText);
  r.Set("settings.state_dtype", "dtype: optimizer states", DTypeName(d.state), Unit::kText);
  r.Set("settings.activation_dtype", "dtype: activations", DTypeName(d.activation), Unit::kText);
  r.Set("settings.optimizer", "optimizer", OptimizerName(s.optimizer), Unit::kText);
  r.Set("settings.recompute", "recomputation", RecomputeName(s.recompute), Unit::kText);
  r.Set("settings.attention", "attention kernel", AttentionName(s.attention), Unit::kText);
  r.Set("settings.gpus", "devices", s.gpus, Unit::kNumber);
  r.Set("settings.dp", "data parallel", s.dp(), Unit::kNumber);
  r.Set("settings.tp", "tensor parallel", s.tp, Unit::kNumber);
  r.Set("settings.pp", "pipeline parallel", s.pp, Unit::kNumber);
  if (s.cp > 1) r.Set("settings.cp", "context parallel", s.cp, Unit::kNumber);
  r.Set("settings.sp", "sequence parallel", s.sp, Unit::kBool);
  if (s.ep > 1) r.Set("settings.ep", "expert parallel", s.ep, Unit::kNumber);
  r.Set("settings.zero", "ZeRO stage", s.zero, Unit::kNumber);
  if (s.offload != Offload::kNone) r.Set("settings.offload", "CPU offload", Name(s.offload), Unit::kText);
  r.Set("settings.kv_dtype", "KV cache dtype", DTypeName(KvDtype(s)), Unit::kText);
  r.Set("settings.quant", "inference weight quantization", QuantName(s.quant), Unit::kText);
  if (s.max_batched_tokens) {
    r.Set("settings.max_batched_tokens", "serving: tokens per forward pass", *s.max_batched_tokens, Unit::kNumber);
  }
  if (s.kv_block) r.Set("settings.kv_block", "serving: KV cache page (tokens)", *s.kv_block, Unit::kNumber);
  if (s.gpu_memory_utilization) {
    r.Set("settings.gpu_memory_utilization", "serving: memory fraction claimed", *s.gpu_memory_utilization,
          Unit::kRatio);
  }
}

// Settings that change nothing here, said rather than silently ignored.
void NoteMootSettings(const ModelSpec& spec, const Settings& s, Report& r) {
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
  if (spec.family == Family::kTransformer && spec.transformer.n_heads == 0 && s.kv_dtype)
    r.notes.push_back("--kv-dtype: '" + spec.name + "' has no KV cache; its SSM state is kept at the activation dtype");
  if (s.zero > 0 && GradientRanks(s) == 1) {
    r.notes.push_back("--zero " + N(s.zero) + ": one data-parallel rank, so ZeRO shards nothing (add --gpus)");
  }
  if (s.lora_rank > 0 && !s.frozen.empty())
    r.notes.push_back("--trainable: moot with --lora, which freezes every base weight");
  // (A model without attention, Mamba, has no K/V heads.)
  if (spec.family == Family::kTransformer && spec.transformer.n_kv_heads > 0 && s.tp > spec.transformer.n_kv_heads) {
    r.notes.push_back("--tp " + N(s.tp) + " exceeds the " + N(spec.transformer.n_kv_heads) +
                      " KV heads: each rank holds one K/V head, replicated " + N(s.tp / spec.transformer.n_kv_heads) +
                      " times, in its weights, saved K/V activations, KV cache and K/V compute (vLLM's layout; "
                      "Megatron-Core training allows tp up to the KV heads); the model FLOPs count each once");
  }
}

// With --hardware: the usable memory and, for each ledger, whether it fits, with a verdict.
void AddFit(const ModelSpec& spec, const Settings& s, Report& r) {
  if (s.device == nullptr) return;
  const HardwareSpec& hw = *s.device;
  const uint64_t limit = UsableMemory(hw, s);
  r.Set("memory.limit", "usable per device (" + hw.name + ")", limit, Unit::kByte,
        (s.gpu_memory_utilization ? FormatFixed(*s.gpu_memory_utilization, 2) + " (--gpu-memory-utilization) x " : "") +
            FormatBytes(hw.memory_bytes, UnitSystem::kIec) + " - " + FormatBytes(*s.reserve, UnitSystem::kIec) +
            " reserved for the runtime (CUDA context, workspaces, communication buffers; --reserve)");
  for (const char* mode : {"train", "infer"}) {
    const ReportNode* total = r.Find(std::string("memory.") + mode + ".total");
    if (total == nullptr) continue;
    const uint64_t needed = std::get<uint64_t>(total->value);
    const bool fits = needed <= limit;
    r.Set(std::string("memory.") + mode + ".fits", "fits in " + hw.name, fits, Unit::kBool);
    const std::string what = std::string(mode) == "train" ? "training" : "inference";
    r.notes.push_back("'" + spec.name + "': " + what + " needs " + FormatBytes(needed, UnitSystem::kIec) +
                      " per device; " + hw.name + " leaves " + FormatBytes(limit, UnitSystem::kIec) + ": " +
                      (fits ? "it fits" : "it does not fit (see 'tally fit')"));
  }
}

void AddMemory(const ModelSpec& spec, const Settings& s, const MemoryModel& model, Report& r) {
  NoteMootSettings(spec, s, r);
  r.Group("memory", "Memory per device");
  if (spec.family == Family::kTransformer) {
    if (s.mode != Mode::kInfer) r.Group("activations", "Activations");
    if (s.mode != Mode::kTrain) r.Group("kv_cache", "KV cache");
  }
  if (s.mode != Mode::kInfer) AddTraining(spec, s, model, r);
  if (s.mode != Mode::kTrain) AddInference(spec, s, model, r);
  AddFit(spec, s, r);
}

}  // namespace tally
