#include "cli/settings_flags.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "config/hardware.h"
#include "config/names.h"
#include "graph/layer_names.h"
#include "util/any_case.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// The components --trainable can freeze: those with weights (not the attention core, the loss).
const std::vector<Component>& TrainableComponents() {
  static const std::vector<Component> kComponents = {
      Component::kEmbedding,       Component::kAttention, Component::kMlp,    Component::kNorm,
      Component::kLmHead,          Component::kRouter,    Component::kLinear, Component::kConv2d,
      Component::kEmbedProjection, Component::kHead,      Component::kVision, Component::kProjector};
  return kComponents;
}

// The index of `text` in `names`, else an InputError for --flag with the choices and a suggestion.
size_t Choose(const std::string& text, std::string_view flag, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return i;
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError("--" + std::string(flag) + ": unknown value '" + text + "'" + DidYouMean(text, names) +
                   "; use one of " + list);
}

// `flag` with its dashes ("--tp"): a sweep reads the flags at every point.
uint64_t Count(const std::optional<std::string>& text, std::string_view flag, uint64_t fallback) {
  return text ? ParseCount(*text, flag) : fallback;
}

void ReadPrecision(const WorkloadFlags& f, Settings& s) {
  if (f.precision) s.precision = ParseNameAnyCase<Precision>(*f.precision, "--precision");
  s.dtypes = PolicyDtypes(s.precision);
  if (f.param_dtype) s.dtypes.param = ParseDType(*f.param_dtype, "param-dtype", FlagDtypes("--param-dtype"));
  s.param_dtype_given = f.param_dtype.has_value();
  if (f.grad_dtype) s.dtypes.grad = ParseDType(*f.grad_dtype, "grad-dtype", FlagDtypes("--grad-dtype"));
  if (f.state_dtype) s.dtypes.state = ParseDType(*f.state_dtype, "state-dtype", FlagDtypes("--state-dtype"));
  s.state_dtype_given = f.state_dtype.has_value();
  if (f.kv_dtype) s.kv_dtype = ParseDType(*f.kv_dtype, "kv-dtype", FlagDtypes("--kv-dtype"));
}

void ReadTraining(const WorkloadFlags& f, Settings& s) {
  if (f.optimizer) s.optimizer = ParseNameAnyCase<Optimizer>(*f.optimizer, "--optimizer");
  if (f.recompute) s.recompute = ParseNameAnyCase<Recompute>(*f.recompute, "--recompute");
  if (f.recompute_layers) {
    if (s.recompute != Recompute::kFull) {
      throw InputError("--recompute-layers: reruns whole blocks, so it needs --recompute full");
    }
    s.recompute_layers = ParseCount(*f.recompute_layers, "--recompute-layers", {.min = 1});
  }
  if (f.attention) s.attention = ParseNameAnyCase<Attention>(*f.attention, "--attention");
  if (f.mlp_kernel) s.mlp_kernel = ParseNameAnyCase<MlpKernel>(*f.mlp_kernel, "--mlp-kernel");
  if (f.optimizer_impl) s.optimizer_impl = ParseNameAnyCase<OptimizerImpl>(*f.optimizer_impl, "--optimizer-impl");
  if (f.loss_kernel) s.loss_kernel = ParseNameAnyCase<LossKernel>(*f.loss_kernel, "--loss-kernel");
  if (f.dropout) s.dropout = ParseReal(*f.dropout, "--dropout", kProbability);
  if (f.dropout_mask) s.dropout_mask = ParseNameAnyCase<DropoutMask>(*f.dropout_mask, "--dropout-mask");
  if (f.input) {
    for (const std::string& d : SplitList(*f.input, "--input")) s.input.push_back(ParseCount(d, "--input"));
  }
  if (f.mode) s.mode = ParseNameAnyCase<Mode>(*f.mode, "--mode");
  if (f.quant) s.quant = ParseNameAnyCase<Quant>(*f.quant, "--quant");
  if (f.dequant_kernel) s.dequant_kernel = ParseNameAnyCase<DequantKernel>(*f.dequant_kernel, "--dequant-kernel");
  for (const std::string& item : f.trainable) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    ParseNameAnyCase<Component>(name, "--trainable", TrainableComponents());
    if (value != "false" && value != "true") {
      throw InputError("--trainable: expected COMPONENT=false (or =true), got '" + item + "'");
    }
    if (value == "false") s.frozen.push_back(name);
  }
  s.lora_rank = Count(f.lora, "--lora", 0);
  if (s.lora_rank > 0 && s.recompute == Recompute::kOp) {
    throw InputError(
        "--recompute op: torchtitan's per-op policy, which trains no LoRA adapters (PEFT calls each adapter's "
        "matmuls between the base layers'); use --recompute full or selective");
  }
  if (f.lora_targets) {
    for (const std::string& t : SplitList(*f.lora_targets, "--lora-targets")) {
      static const std::vector<std::string> kTargets = {"qkv", "out", "gate", "up", "down"};
      Choose(t, "lora-targets", kTargets);
      s.lora_targets.push_back(t);
    }
  }
  if (f.lora_dtype) s.lora_dtype = ParseNameAnyCase<LoraDtype>(*f.lora_dtype, "--lora-dtype");
  // The adapters' flags without adapters: say so rather than drop them.
  if (s.lora_rank == 0 && (f.lora_targets || f.lora_dtype)) {
    const std::string flags = f.lora_targets && f.lora_dtype ? "--lora-targets and --lora-dtype"
                              : f.lora_targets               ? "--lora-targets"
                                                             : "--lora-dtype";
    s.notes.push_back(flags + ": no --lora R, so no adapters: " +
                      (f.lora_targets && f.lora_dtype ? "they change" : "it changes") + " nothing");
  }
  // Only the adapters have gradients, and fp32 adapters fp32 ones: PyTorch gives a gradient its
  // parameter's dtype (AdapterDtypes).
  if (f.grad_dtype && LoraAdaptersInFp32(s)) {
    s.notes.push_back(
        "--grad-dtype: LoRA's fp32 adapters (--lora-dtype fp32) keep fp32 gradients, a gradient "
        "taking its parameter's dtype; --lora-dtype base trains them in the policy's dtypes");
  }
}

void ReadParallelism(const WorkloadFlags& f, Settings& s) {
  s.tp = Count(f.tp, "--tp", 1);
  s.pp = Count(f.pp, "--pp", 1);
  s.cp = Count(f.cp, "--cp", 1);
  s.ep = Count(f.ep, "--ep", 1);     // checked against the model and dp by CheckExpertParallel
  s.etp = Count(f.etp, "--etp", 0);  // 0: --tp (Settings::expert_tp); checked by CheckExpertParallel
  // Without --gpus, one data-parallel rank: as many devices as one model replica needs.
  s.gpus = f.gpus ? ParseCount(*f.gpus, "--gpus") : CheckedProduct({s.tp, s.pp, s.cp}, "--tp x --pp x --cp");
  s.sp = f.sp;
  static const std::vector<std::string> kStages = {"0", "1", "2", "3"};
  if (f.zero) s.zero = Choose(*f.zero, "zero", kStages);
  if (s.gpus % CheckedMul(s.tp, s.pp, "--tp x --pp") != 0) {
    throw InputError("--gpus: " + std::to_string(s.gpus) + " devices cannot be split into --tp " +
                     std::to_string(s.tp) + " x --pp " + std::to_string(s.pp) + " groups");
  }
  if (s.gpus % CheckedProduct({s.tp, s.pp, s.cp}, "--tp x --pp x --cp") != 0) {
    throw InputError("--cp: " + std::to_string(s.cp) +
                     " context-parallel ranks do not divide --gpus / (--tp x --pp) = " +
                     std::to_string(s.gpus / (s.tp * s.pp)) + " devices");
  }
  if (s.sp && s.tp == 1) throw InputError("--sp: sequence parallelism needs --tp above 1");
  if (f.offload) s.offload = ParseNameAnyCase<Offload>(*f.offload, "--offload");
  // Both offloads move each rank's ZeRO partition: ZeRO-Offload is built on ZeRO-2 (Ren et al. 2021,
  // §4.1), parameter offload on ZeRO-3 / FSDP full shard (Rajbhandari et al. 2021, ZeRO-Infinity).
  const uint64_t needs = s.offload == Offload::kParams ? 3 : s.offload == Offload::kOptimizer ? 2 : 0;
  if (s.zero < needs) {
    throw InputError("--offload: " + std::string(Name(s.offload)) +
                     " offload moves each rank's ZeRO partition; give --zero " + std::to_string(needs) +
                     (needs < 3 ? " or 3" : ""));
  }
}

// batch = micro_batch · grad_accum per data-parallel replica; any two given decide the third.
void ReadBatch(const WorkloadFlags& f, Settings& s) {
  uint64_t grad_accum = Count(f.grad_accum, "--grad-accum", 1);
  if (!f.batch) {
    s.micro_batch = Count(f.micro_batch, "--micro-batch", 1);
    s.batch = CheckedMul(s.micro_batch, grad_accum, "--batch (micro-batch x grad-accum)");
    return;
  }
  s.batch = ParseCount(*f.batch, "--batch");
  if (f.micro_batch && !f.grad_accum) {
    s.micro_batch = ParseCount(*f.micro_batch, "--micro-batch");
    grad_accum = s.batch / s.micro_batch;
  } else {
    s.micro_batch = f.micro_batch ? ParseCount(*f.micro_batch, "--micro-batch") : s.batch / grad_accum;
  }
  // In 128 bits: the product of two 64-bit values fits.
  const u128 product = static_cast<u128>(s.micro_batch) * grad_accum;
  if (s.micro_batch == 0 || grad_accum == 0 || product != s.batch) {
    throw InputError("--batch: " + std::to_string(s.batch) +
                     " sequences do not split into --micro-batch x "
                     "--grad-accum; give sizes that multiply to it");
  }
}

}  // namespace

const std::vector<DType>& FlagDtypes(std::string_view flag) {
  static const std::vector<DType> kFloats = {DType::kFp32, DType::kFp16, DType::kBf16, DType::kFp8E4m3,
                                             DType::kFp8E5m2};
  static const std::vector<DType> kStates = {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt8};
  static const std::vector<DType> kCaches = {DType::kFp32,    DType::kFp16, DType::kBf16, DType::kFp8E4m3,
                                             DType::kFp8E5m2, DType::kInt8, DType::kInt4};
  if (flag == "--state-dtype") return kStates;
  if (flag == "--kv-dtype") return kCaches;
  return kFloats;  // --param-dtype, --grad-dtype
}

const std::vector<TextFlag>& TextFlags() {
  static const std::vector<TextFlag> kFlags = {
      {"batch", &WorkloadFlags::batch},
      {"micro_batch", &WorkloadFlags::micro_batch},
      {"grad_accum", &WorkloadFlags::grad_accum},
      {"seq", &WorkloadFlags::seq, true},
      {"target_seq", &WorkloadFlags::target_seq, true},
      {"images", &WorkloadFlags::images, true},
      {"mode", &WorkloadFlags::mode},
      {"precision", &WorkloadFlags::precision},
      {"param_dtype", &WorkloadFlags::param_dtype},
      {"grad_dtype", &WorkloadFlags::grad_dtype},
      {"state_dtype", &WorkloadFlags::state_dtype},
      {"optimizer", &WorkloadFlags::optimizer},
      {"recompute", &WorkloadFlags::recompute},
      {"recompute_layers", &WorkloadFlags::recompute_layers},
      {"attention", &WorkloadFlags::attention, true},
      {"dropout", &WorkloadFlags::dropout, true},
      {"lora", &WorkloadFlags::lora, true},
      {"lora_targets", &WorkloadFlags::lora_targets, true},
      {"lora_dtype", &WorkloadFlags::lora_dtype, true},
      {"gpus", &WorkloadFlags::gpus},
      {"tp", &WorkloadFlags::tp},
      {"pp", &WorkloadFlags::pp},
      {"cp", &WorkloadFlags::cp},
      {"ep", &WorkloadFlags::ep},
      {"etp", &WorkloadFlags::etp},
      {"zero", &WorkloadFlags::zero},
      {"kv_dtype", &WorkloadFlags::kv_dtype},
      {"quant", &WorkloadFlags::quant},
      {"overhead", &WorkloadFlags::overhead},
      {"hardware", &WorkloadFlags::hardware},
      {"reserve", &WorkloadFlags::reserve},
      {"dropout_mask", &WorkloadFlags::dropout_mask, true},
      {"input", &WorkloadFlags::input, true},
      {"mlp_kernel", &WorkloadFlags::mlp_kernel, true},
      {"optimizer_impl", &WorkloadFlags::optimizer_impl},
      {"loss_kernel", &WorkloadFlags::loss_kernel, true},
      {"cuda_context", &WorkloadFlags::cuda_context},
      {"cublas_workspace", &WorkloadFlags::cublas_workspace},
      {"nccl_buffers", &WorkloadFlags::nccl_buffers},
      {"fragmentation", &WorkloadFlags::fragmentation},
      {"max_batched_tokens", &WorkloadFlags::max_batched_tokens},
      {"kv_block", &WorkloadFlags::kv_block},
      {"gpu_memory_utilization", &WorkloadFlags::gpu_memory_utilization},
      {"offload", &WorkloadFlags::offload},
      {"dequant_kernel", &WorkloadFlags::dequant_kernel},
  };
  return kFlags;
}

void AddTextOption(CLI::App* cmd, const char* name, std::optional<std::string>& into, const std::string& help,
                   const char* type, const char* group) {
  cmd->add_option(name, into, help)->type_name(type)->group(group);
}

void AddWorkloadFlags(CLI::App* cmd, WorkloadFlags& f) {
  auto opt = [&](const char* name, std::optional<std::string>& into, const std::string& help, const char* type) {
    AddTextOption(cmd, name, into, help, type, "Workload");
  };
  const Settings defaults;
  // "a | b | c (default b)"
  auto choices = [](const std::string& names, const char* fallback) { return names + " (default " + fallback + ")"; };
  opt("--batch", f.batch,
      "sequences (samples) per optimizer step per data-parallel replica; default micro-batch x grad-accum", "N");
  opt("--micro-batch", f.micro_batch, "sequences one device runs per forward pass; default 1", "N");
  opt("--grad-accum", f.grad_accum, "micro-batches accumulated per step; default 1", "N");
  opt("--seq", f.seq, "tokens per sequence (8Ki = 8,192, 8k = 8,000); default the pre-training context, at most 8,192",
      "N");
  opt("--target-seq", f.target_seq,
      "an encoder-decoder's target (decoder) tokens per sequence; default --seq, at most the decoder's positions", "N");
  opt("--images", f.images, "a multimodal model's images per sequence (0: text only); default 1", "N");
  cmd->add_flag("--causal", f.causal,
                "halve attention's QK^T and AV in the model FLOPs too (default: only in the "
                "hardware FLOPs that time applies a rate to)")
      ->group("Workload");
  cmd->add_flag("--no-causal", f.no_causal, "count attention's masked half in the hardware FLOPs too")
      ->group("Workload");
  opt("--mode", f.mode, "memory ledgers to show: " + choices(JoinNames<Mode>(" | "), Name(defaults.mode)), "MODE");
  opt("--precision", f.precision,
      choices(JoinNames<Precision>(" | "), Name(defaults.precision)) +
          "; mixed-* half-precision weights and gradients, an fp32 master copy (ZeRO's 16 bytes a parameter; "
          "Megatron-LM's --bf16 adds --grad-dtype fp32), amp-* PyTorch autocast (fp32 weights, "
          "half-precision GEMMs: Hugging Face's bf16=True), tf32 fp32 with TF32 tensor-core GEMMs (Hugging Face's "
          "tf32=True)",
      "POLICY");
  opt("--param-dtype", f.param_dtype, "override the weights' dtype (also the inference weights)", "DTYPE");
  opt("--grad-dtype", f.grad_dtype,
      "override the gradients' dtype (fp32: Megatron-LM's main gradients under --bf16, FSDP's fp32 reduce_dtype)",
      "DTYPE");
  opt("--state-dtype", f.state_dtype, "override the optimizer states' dtype", "DTYPE");
  opt("--optimizer", f.optimizer, choices(JoinNames<Optimizer>(" | "), Name(defaults.optimizer)), "NAME");
  opt("--optimizer-impl", f.optimizer_impl,
      "the optimizer step's kernels: " + choices(JoinNames<OptimizerImpl>(" | "), Name(defaults.optimizer_impl)) +
          ", PyTorch 2's on a GPU; for-loop keeps one tensor's temporaries, foreach every tensor's, fused none",
      "IMPL");
  opt("--loss-kernel", f.loss_kernel,
      "the cross-entropy: " + choices(JoinNames<LossKernel>(" | "), Name(defaults.loss_kernel)) +
          "; eager (Hugging Face's, Megatron-LM's without --cross-entropy-loss-fusion) holds the whole logits "
          "in fp32 and runs op by op whatever --kernels says, chunked (Liger, Unsloth) one chunk, fused "
          "(torch.compile, Transformer Engine, Megatron-Bridge) a log-sum-exp a row and the gradient in the "
          "logits' dtype; both one kernel",
      "KIND");
  opt("--recompute", f.recompute,
      "activation recomputation: " + choices(JoinNames<Recompute>(" | "), Name(defaults.recompute)) +
          "; selective reruns the core attention, full each block from its input, op torchtitan's per-op "
          "policy (each block keeps every other matmul's output and attention's, and reruns the rest)",
      "KIND");
  opt("--recompute-layers", f.recompute_layers,
      "with --recompute full, the blocks each pipeline stage recomputes, its first N (Megatron-LM's "
      "--recompute-method block); the others keep their activations (default all)",
      "N");
  opt("--attention", f.attention,
      std::string(Name(Attention::kEager)) + " (saves the s x s scores) | " + Name(Attention::kFlash) + " (default)",
      "KIND");
  opt("--mlp-kernel", f.mlp_kernel,
      "a gated MLP's act(gate)·up: " + choices(JoinNames<MlpKernel>(" | "), Name(defaults.mlp_kernel)) +
          "; eager saves act(gate) too",
      "KIND");
  opt("--dropout", f.dropout, "dropout probability, overriding the config's", "P");
  opt("--input", f.input, "a sequential model's sample shape, e.g. 3,299,299 (default the config's input)", "SHAPE");
  opt("--dropout-mask", f.dropout_mask, "saved dropout mask: cuda (1-byte bool, default) | cpu (the activation dtype)",
      "KIND");
  cmd->add_option("--trainable", f.trainable, "COMPONENT=false freezes a component (repeatable), e.g. embedding=false")
      ->type_name("C=false")
      ->group("Workload");
  opt("--lora", f.lora, "LoRA rank: adapters on --lora-targets, every base weight frozen", "R");
  opt("--lora-targets", f.lora_targets, "comma list of qkv, out, gate, up, down (default qkv,out)", "LIST");
  opt("--lora-dtype", f.lora_dtype,
      "the adapters' dtype on a 16-bit model: " + choices(JoinNames<LoraDtype>(" | "), Name(defaults.lora_dtype)) +
          "; fp32 is PEFT's (autocast_adapter_dtype), base the frozen weights' (TRL's bf16 cast, torchtune)",
      "DTYPE");
  opt("--gpus", f.gpus, "devices in all: data x tensor x pipeline x context parallel; default tp x pp x cp", "N");
  opt("--tp", f.tp, "tensor-parallel degree; default 1", "N");
  opt("--pp", f.pp, "pipeline-parallel stages; default 1", "N");
  opt("--cp", f.cp, "context-parallel degree (ring attention over the sequence); default 1", "N");
  opt("--ep", f.ep, "expert-parallel degree: MoE experts split over N ranks; ep x etp divides tp x cp x dp; default 1",
      "N");
  opt("--etp", f.etp,
      "expert tensor-parallel degree: each routed expert split over N ranks (MoE parallel folding); default --tp", "N");
  cmd->add_flag("--sp", f.sp, "sequence parallelism within the tensor-parallel group")->group("Workload");
  opt("--zero", f.zero, "ZeRO stage 0-3 over data-parallel ranks (3 = FSDP full shard); default 0", "STAGE");
  opt("--offload", f.offload,
      "CPU offload in training: " + choices(JoinNames<Offload>(" | "), Name(defaults.offload)) +
          "; optimizer needs --zero 2, params --zero 3",
      "WHAT");
  std::string kv_dtypes;
  for (DType d : FlagDtypes("--kv-dtype")) kv_dtypes += (kv_dtypes.empty() ? "" : " | ") + std::string(Name(d));
  opt("--kv-dtype", f.kv_dtype, "KV cache dtype: " + kv_dtypes + " (default the activations')", "DTYPE");
  opt("--quant", f.quant,
      "weight quantization (inference; the frozen base under --lora): " +
          choices(JoinNames<Quant>(" | "), Name(defaults.quant)),
      "KIND");
  opt("--max-batched-tokens", f.max_batched_tokens,
      "serving: tokens one forward pass takes (chunked prefill), bounding inference activations; fit --mode infer: "
      "vLLM's default",
      "N");
  opt("--kv-block", f.kv_block, "serving: KV cache in pages of N tokens (fit --mode infer: 16, vLLM's)", "N");
  opt("--gpu-memory-utilization", f.gpu_memory_utilization,
      "serving: fraction of device memory a server claims (fit --mode infer: 0.9, vLLM's)", "F");
  opt("--hardware", f.hardware, "a device from 'tally hardware' or a hardware YAML file: time, and whether memory fits",
      "NAME");
  opt("--reserve", f.reserve,
      "device memory kept back beyond the modelled runtime lines, with --hardware (default none)", "SIZE");
  opt("--cuda-context", f.cuda_context,
      "device memory of the CUDA context and its kernels (default 685MiB, measured on an H100; docs/timeline.md)",
      "SIZE");
  opt("--cublas-workspace", f.cublas_workspace, "cuBLAS workspace (default 32MiB, PyTorch's on Hopper)", "SIZE");
  opt("--nccl-buffers", f.nccl_buffers, "NCCL communicator buffers with more than one device (default 256MiB)", "SIZE");
  opt("--fragmentation", f.fragmentation,
      "the caching allocator's reserved memory beyond the peak of live tensors, a percent (default 10%)", "PCT");
  opt("--overhead", f.overhead, "memory not modelled, added per device: a size (2GiB, 2GB) or a percent (10%)",
      "SIZE|PCT");
  opt("--dequant-kernel", f.dequant_kernel,
      "inference: the GEMM kernel of weight-only quantized weights (int8, int4, nf4, mxfp4, GPTQ, AWQ): " +
          choices(JoinNames<DequantKernel>(" | "), Name(DequantKernel::kMarlin)) +
          ", vLLM's; tinygemm is PyTorch's int4 kernel",
      "KERNEL");
}

std::shared_ptr<const HardwareSpec> ReadDevice(const std::string& name) {
  return std::make_shared<const HardwareSpec>(ResolveHardware(name));
}

Settings ReadSettings(const WorkloadFlags& f, const DeviceReader& read_device) {
  Settings s;
  ReadPrecision(f, s);
  ReadTraining(f, s);
  ReadParallelism(f, s);
  ReadBatch(f, s);
  if (f.seq) s.seq = ParseLength(*f.seq, "--seq");
  if (f.target_seq) s.target_seq = ParseLength(*f.target_seq, "--target-seq");
  for (const auto& [flag, text] : {std::pair{"--seq", &f.seq}, std::pair{"--target-seq", &f.target_seq},
                                   std::pair{"--max-batched-tokens", &f.max_batched_tokens}}) {
    if (*text) {
      if (std::optional<std::string> note = LengthSuffixNote(**text, flag)) s.notes.push_back(*note);
    }
  }
  if (f.images) s.images = ParseCount(*f.images, "--images", {.min = 0});
  if (f.hardware) {
    // The one read of the device: an unknown name is a flag error here, and the estimators take
    // Settings::device. A sweep passes a reader that reads each of its devices once.
    s.device = read_device(*f.hardware);
    s.hardware = *f.hardware;
  }
  if (f.causal && f.no_causal) throw InputError("--no-causal: give --causal or --no-causal, not both");
  s.causal = f.causal;
  s.causal_kernels = !f.no_causal;
  if (f.reserve) s.reserve = ParseBytes(*f.reserve, "--reserve");
  if (f.cuda_context) s.cuda_context = ParseBytes(*f.cuda_context, "--cuda-context", true);
  if (f.cublas_workspace) s.cublas_workspace = ParseBytes(*f.cublas_workspace, "--cublas-workspace", true);
  if (f.nccl_buffers) s.nccl_buffers = ParseBytes(*f.nccl_buffers, "--nccl-buffers", true);
  if (f.fragmentation) s.fragmentation = ParsePercent(*f.fragmentation, "--fragmentation");
  if (f.max_batched_tokens) s.max_batched_tokens = ParseLength(*f.max_batched_tokens, "--max-batched-tokens");
  if (s.max_batched_tokens && s.attention == Attention::kEager) {
    throw InputError(
        "--max-batched-tokens: chunked prefill runs fused attention, which never holds the s x s scores; drop "
        "--attention eager");
  }
  if (f.kv_block) s.kv_block = ParseCount(*f.kv_block, "--kv-block");
  if (f.gpu_memory_utilization) {
    s.gpu_memory_utilization = ParseReal(*f.gpu_memory_utilization, "--gpu-memory-utilization", kRatio);
  }
  if (f.overhead) {
    const std::string& o = *f.overhead;
    if (o.ends_with('%')) {
      s.overhead_fraction = ParsePercent(o, "--overhead");
    } else {
      s.overhead_bytes = ParseBytes(o, "--overhead");
    }
  }
  return s;
}

}  // namespace tally
