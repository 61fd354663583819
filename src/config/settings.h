// Settings: everything about a run that is not the model (workload, precision, optimizer,
// recomputation, attention kernel, parallelism), with the defaults a practitioner expects today.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.h"

namespace tally {

struct HardwareSpec;

enum class Mode { kBoth, kTrain, kInfer };
// fp32 | fp16 | bf16: every tensor in the one dtype. mixed-*: Megatron-LM's policy, half-precision
// weights, gradients and activations with an fp32 master copy. amp-*: PyTorch autocast (what Hugging
// Face's Trainer runs with bf16=True): fp32 weights, gradients and states, GEMMs on half-precision
// casts of their inputs and weights. fp8: Transformer Engine's.
enum class Precision { kFp32, kTf32, kFp16, kBf16, kMixedFp16, kMixedBf16, kFp8, kAmpFp16, kAmpBf16 };
enum class Optimizer { kSgd, kSgdMomentum, kAdagrad, kRmsprop, kAdam, kAdamw, kAdam8bit, kLion, kAdafactor };
// Activation recomputation: none; selective (the core attention, Korthikanti et al. 2022); full (each
// block from its input); op (torchtitan's per-op policy: graph/op_checkpoint.h).
enum class Recompute { kNone, kSelective, kFull, kOp };
// Whether the backward runs each block's forward again from its checkpointed input (all of it, or
// under `op` what the policy did not keep).
inline bool RerunsBlocks(Recompute r) { return r == Recompute::kFull || r == Recompute::kOp; }
// How the optimizer step runs (torch.optim's `foreach` and `fused`): a loop over the parameters
// with per-tensor temporaries, multi-tensor kernels with temporaries for every parameter at once,
// or one fused kernel with none (estimate/step_timeline.cc). PyTorch 2 picks foreach on a GPU.
enum class OptimizerImpl { kForLoop, kForeach, kFused };
// The dtype of LoRA's adapters on a 16-bit model: fp32, PEFT's default (get_peft_model and PeftModel's
// autocast_adapter_dtype=True upcasts bf16 and fp16 adapters to fp32), whose forward casts each
// adapted linear's input to fp32 and adds the fp32 update to the 16-bit output
// (peft/tuners/lora/layer.py, Linear.forward); or the base weights' dtype (PEFT with
// autocast_adapter_dtype=False, TRL's bf16 casting of PEFT modules, torchtune).
enum class LoraDtype { kFp32, kBase };
// The cross-entropy over the logits: eager PyTorch (Hugging Face upcasts the logits to fp32, then
// log-softmax), or a chunked kernel that never holds the whole logits (Liger's fused linear
// cross-entropy, Unsloth's).
// The cross-entropy's kernels (estimate/step_timeline.cc, Loss): eager PyTorch over fp32 logits,
// chunked (Liger's fused linear cross-entropy), or fused (torch.compile's, Transformer Engine's).
enum class LossKernel { kEager, kChunked, kFused };
enum class Attention { kEager, kFlash };
// The kernels a training step runs (estimate/kernel_costs.h): eager PyTorch op by op, as Hugging Face
// scripts run it, or fused (Megatron-LM, NeMo, TransformerEngine, torch.compile).
enum class Kernels { kEager, kFused };
// The pipeline schedule (estimate/step_model.cc): its bubble.
enum class PipelineSchedule { k1f1b, kInterleaved, kZeroBubble, kDualPipe };
// The MoE token dispatcher (estimate/expert_parallel.h): NCCL's all-to-all, or DeepEP's, which sends
// a token across nodes once per destination node and forwards it inside the node.
enum class EpDispatch { kAllToAll, kDeepEp };
// The data-parallel buckets (estimate/step_model.cc): PyTorch DDP's 25 MiB of gradients, Megatron-Core's
// max(40M, 1M x dp) parameters (megatron/core/distributed/distributed_data_parallel.py), DeepSpeed's
// 5e8 (deepspeed/runtime/zero/config.py: reduce_bucket_size, allgather_bucket_size), or a given count.
enum class DpBucket { kDdp, kMegatron, kDeepSpeed, kParams };
// How fp8 training scales its tensors (Transformer Engine's recipes, transformer_engine/common/recipe):
// one scale per tensor from its own amax (Float8CurrentScaling; torchao's tensorwise), per tensor from
// an amax history (DelayedScaling), per 1 x 128 / 128 x 128 block (Float8BlockScaling, DeepSeek-V3's),
// per 32 values with E8M0 scales (MXFP8BlockScaling). What each costs: estimate/kernel_costs.h.
enum class Fp8Recipe { kTensorwise, kDelayed, kBlockwise, kMxfp8 };
// A gated MLP's act(gate) · up: eager PyTorch ops (4 saved tensors) or one fused kernel (3).
enum class MlpKernel { kEager, kFused };
// Weight quantization by --quant, each one method of config/quantization.h (QuantFlagSpec): int8
// bitsandbytes LLM.int8, int4 GPTQ group 128, fp8 blocks of 128 x 128, nf4 bitsandbytes with double
// quantization (QLoRA), mxfp4 OCP microscaling.
enum class Quant { kNone, kInt8, kInt4, kFp8, kNf4, kMxfp4 };
// The kernel a weight-only quantized GEMM runs as (--dequant-kernel; estimate/kernel_costs.h holds
// what each costs): Marlin (Frantar et al. 2024), the one vLLM runs GPTQ, AWQ and compressed-tensors
// W4A16/W8A16 checkpoints with; tinygemm, PyTorch's own W4A16 kernel (torchao's int4 weight-only).
enum class DequantKernel { kMarlin, kTinygemm };
// What a dropout mask costs: CUDA's fused kernel keeps a 1-byte bool per element; on the CPU PyTorch
// multiplies by a scaled noise tensor of the activation dtype.
enum class DropoutMask { kCuda, kCpu };
// CPU offload in training (estimate/offload.h): none; the optimizer states, fp32 master weights and
// gradients in host memory with the update on the CPU (ZeRO-Offload); the weights too, streamed in.
enum class Offload { kNone, kOptimizer, kParams };

// The dtypes a precision policy stores each kind of tensor in.
struct Precisions {
  DType param = DType::kBf16;
  DType grad = DType::kBf16;
  std::optional<DType> master;  // fp32 master weights of mixed precision
  DType state = DType::kFp32;   // optimizer states
  DType activation = DType::kBf16;
  auto operator<=>(const Precisions&) const = default;
};

struct Settings {
  // Workload, per data-parallel replica: `batch` sequences (or samples) per optimizer step, run as
  // grad_accum() passes of `micro_batch`. The two are stored and the third derived, so they cannot
  // disagree (ReadSettings checks that micro_batch divides batch). The global batch is batch · dp.
  // FLOPs are counted over `batch`, memory over `micro_batch`.
  uint64_t batch = 1;
  uint64_t micro_batch = 1;
  std::optional<uint64_t> seq;  // unset: ResolveSettings fills a transformer's (config/resolve.h)
  // An encoder–decoder's target (decoder) tokens per sequence, `seq` being the source; unset: as
  // many as the source, at most the decoder's learned positions (config/resolve.h, DefaultTargetSeq).
  std::optional<uint64_t> target_seq;
  // --images: images per sequence a model with a vision tower encodes (0: text only); default its VisionSpec's.
  std::optional<uint64_t> images;
  bool causal = false;  // halve the attention QK^T and AV FLOPs (model FLOPs too)
  // A decoder's kernels skip attention's masked half: hardware FLOPs, and times derived from a
  // hardware rate, count half of QK^T and AV; model FLOPs and MFU keep them whole. --no-causal: off.
  bool causal_kernels = true;
  // Keys each query attends to when not `seq`: a decode step runs seq 1 against a cache of `context`.
  std::optional<uint64_t> context;

  Mode mode = Mode::kBoth;
  Precision precision = Precision::kMixedBf16;
  Precisions dtypes;               // from `precision`, then the per-tensor overrides
  bool param_dtype_given = false;  // --param-dtype also sets the inference weight dtype
  bool state_dtype_given = false;  // --state-dtype holds for LoRA's fp32 adapters too (AdapterDtypes)
  Optimizer optimizer = Optimizer::kAdamw;
  OptimizerImpl optimizer_impl = OptimizerImpl::kForeach;
  Recompute recompute = Recompute::kNone;
  // --recompute full: the blocks each pipeline stage reruns, its first N (Megatron-LM's
  // --recompute-method block --recompute-num-layers N); absent: all of them.
  std::optional<uint64_t> recompute_layers;
  LossKernel loss_kernel = LossKernel::kEager;
  Attention attention = Attention::kFlash;
  MlpKernel mlp_kernel = MlpKernel::kEager;
  std::optional<double> dropout;  // overrides the config's
  DropoutMask dropout_mask = DropoutMask::kCuda;
  std::vector<uint64_t> input;      // a sequential model's sample shape, overriding the config's; empty: its own
  std::vector<std::string> frozen;  // components with no gradient or optimizer state
  uint64_t lora_rank = 0;           // > 0: LoRA adapters on `lora_targets`, every base weight frozen
  // Empty: qkv and out (LoraTargets). Not spelled out here, so that making a Settings allocates
  // nothing (a sweep makes one per point).
  std::vector<std::string> lora_targets;
  LoraDtype lora_dtype = LoraDtype::kFp32;

  // Parallelism: gpus = dp · tp · pp · cp. The routed experts have their own grid over the same
  // devices, etp · ep · edp · pp with etp · ep · edp = tp · cp · dp (estimate/expert_parallel.h).
  uint64_t gpus = 1;
  uint64_t tp = 1;
  uint64_t pp = 1;
  uint64_t cp = 1;  // --cp: context parallelism, the sequence split over cp ranks (ring attention)
  uint64_t ep = 1;  // --ep: expert parallelism, each MoE layer's experts split over ep ranks
  // --etp: expert tensor parallelism, each routed expert split over etp ranks (0: --tp, see expert_tp()).
  uint64_t etp = 0;
  bool sp = false;                   // sequence parallelism inside the tensor-parallel group
  uint64_t zero = 0;                 // ZeRO stage 0-3 over the data-parallel ranks (FSDP full shard = 3)
  Offload offload = Offload::kNone;  // --offload: needs --zero 2 (optimizer) or 3 (params)

  std::string hardware;  // a catalog name or a hardware file; empty: none named
  // The device `hardware` names, read once where --hardware is read (ReadSettings,
  // cli/settings_flags.h), or by ResolveSettings for settings made otherwise; null when none.
  std::shared_ptr<const HardwareSpec> device;
  // Device memory kept from the model beyond the modelled overheads: what `memory.limit` subtracts
  // from a named device's memory. Default kDefaultReserve (none).
  std::optional<uint64_t> reserve;

  // Inference.
  std::optional<DType> kv_dtype;  // default: the activation dtype
  Quant quant = Quant::kNone;
  // Weight-only formats' GEMM kernel (--dequant-kernel); unset: Marlin, vLLM's (estimate/kernel_costs.h).
  std::optional<DequantKernel> dequant_kernel;
  // Serving (estimate/serving.h): the tokens one forward pass takes (chunked prefill), the KV cache in
  // pages of this many tokens, and the fraction of a device's memory a server claims. Unset: the
  // whole batch in one pass, a contiguous cache, all of the memory (fit --mode infer sets vLLM's).
  std::optional<uint64_t> max_batched_tokens;
  std::optional<uint64_t> kv_block;
  std::optional<double> gpu_memory_utilization;

  // The device's memory beyond the step's tensors (estimate/step_timeline.h, DeviceOverheads); unset:
  // the defaults there.
  std::optional<uint64_t> cuda_context, cublas_workspace, nccl_buffers;
  std::optional<double> fragmentation;

  // Memory not modelled (allocator, CUDA context, communication buffers), added on request.
  uint64_t overhead_bytes = 0;
  double overhead_fraction = 0;

  // What ResolveSettings filled in for the user, said as warnings with the report.
  std::vector<std::string> notes;

  uint64_t grad_accum() const { return batch / micro_batch; }
  bool autocast() const { return precision == Precision::kAmpFp16 || precision == Precision::kAmpBf16; }
  uint64_t dp() const { return gpus / (tp * pp * cp); }
  // The routed experts' tensor-parallel degree: --etp, else --tp (Megatron-Core's default for
  // --expert-tensor-parallel-size, which keeps each expert split as the dense layers are).
  uint64_t expert_tp() const { return etp != 0 ? etp : tp; }
  uint64_t global_batch() const { return batch * dp(); }
};

// The dtypes of a precision policy (Micikevicius et al. 2017 for mixed precision).
Precisions PolicyDtypes(Precision p);

// The projections LoRA adapts: settings.lora_targets, else qkv and out (--lora-targets' default).
const std::vector<std::string>& LoraTargets(const Settings& settings);

// Whether LoRA's adapters compute in fp32 beside 16-bit weights (--lora-dtype fp32 on a 16-bit policy;
// under autocast the weights, adapters and all, are fp32 already).
bool LoraAdaptersInFp32(const Settings& settings);
// The dtypes LoRA's fp32 adapters are kept in, where LoraAdaptersInFp32 (else none): PEFT upcasts
// their weights, so their gradients are fp32, torch.optim keeps their states in that dtype (unless
// --state-dtype says otherwise), and no master copy is needed.
std::optional<Precisions> AdapterDtypes(const Settings& settings);

// The names in config/names.h (kept for the callers that print them).
const char* PrecisionName(Precision p);
const char* OptimizerName(Optimizer o);
const char* RecomputeName(Recompute r);
const char* OptimizerImplName(OptimizerImpl i);
const char* AttentionName(Attention a);
const char* QuantName(Quant q);

}  // namespace tally
