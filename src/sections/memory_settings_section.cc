#include "config/names.h"
#include "config/settings.h"
#include "sections/sections.h"

namespace tally {
namespace {

using E = const MemoryEstimate&;

const Settings& S(E e) { return *e.settings; }

// The dtypes of what trains: LoRA's adapters keep fp32 weights, gradients and states, with no master
// copy, under --lora-dtype fp32 (AdapterDtypes); otherwise the precision policy's.
Precisions Trained(E e) { return AdapterDtypes(S(e)).value_or(S(e).dtypes); }

}  // namespace

const KeyTable<MemoryEstimate>& MemorySettingsKeys() {
  using U = Unit;
  // No group title: settings.* is titled by SettingsKeys.
  static const KeyTable<MemoryEstimate> kKeys = {
      {"settings.micro_batch", "micro-batch (per device, per pass)", U::kNumber,
       [](E e) -> Cell { return S(e).micro_batch; }},
      {"settings.global_batch", "global batch (batch x data-parallel)", U::kNumber,
       [](E e) -> Cell { return S(e).global_batch(); }},
      {"settings.grad_accum", "gradient accumulation", U::kNumber, [](E e) -> Cell { return S(e).grad_accum(); }},
      {"settings.precision", "precision policy", U::kText,
       [](E e) -> Cell { return std::string(PrecisionName(S(e).precision)); }},
      {"settings.param_dtype", "dtype: weights", U::kText,
       [](E e) -> Cell { return std::string(DTypeName(S(e).dtypes.param)); }},
      {"settings.grad_dtype", "dtype: gradients", U::kText,
       [](E e) -> Cell { return std::string(DTypeName(Trained(e).grad)); }},
      {"settings.master_dtype", "dtype: master weights", U::kText,
       [](E e) -> Cell {
         const std::optional<DType> master = Trained(e).master;
         return std::string(master ? DTypeName(*master) : "none");
       }},
      {"settings.state_dtype", "dtype: optimizer states", U::kText,
       [](E e) -> Cell { return std::string(DTypeName(Trained(e).state)); }},
      {"settings.activation_dtype", "dtype: activations", U::kText,
       [](E e) -> Cell { return std::string(DTypeName(S(e).dtypes.activation)); }},
      {"settings.optimizer", "optimizer", U::kText,
       [](E e) -> Cell { return std::string(OptimizerName(S(e).optimizer)); }},
      {"settings.recompute", "recomputation", U::kText,
       [](E e) -> Cell { return std::string(RecomputeName(S(e).recompute)); }},
      {"settings.recompute_layers", "recomputed blocks per pipeline stage", U::kNumber,
       [](E e) { return When(S(e).recompute_layers.has_value(), S(e).recompute_layers.value_or(0)); }},
      {"settings.attention", "attention kernel", U::kText,
       [](E e) -> Cell { return std::string(AttentionName(S(e).attention)); }},
      {"settings.gpus", "devices", U::kNumber, [](E e) -> Cell { return S(e).gpus; }},
      {"settings.dp", "data parallel", U::kNumber, [](E e) -> Cell { return S(e).dp(); }},
      {"settings.tp", "tensor parallel", U::kNumber, [](E e) -> Cell { return S(e).tp; }},
      {"settings.pp", "pipeline parallel", U::kNumber, [](E e) -> Cell { return S(e).pp; }},
      {"settings.cp", "context parallel", U::kNumber, [](E e) { return When(S(e).cp > 1, S(e).cp); }},
      {"settings.sp", "sequence parallel", U::kBool, [](E e) -> Cell { return S(e).sp; }},
      {"settings.ep", "expert parallel", U::kNumber, [](E e) { return When(S(e).ep > 1, S(e).ep); }},
      {"settings.etp", "expert tensor parallel", U::kNumber, [](E e) { return When(S(e).etp != 0, S(e).etp); }},
      {"settings.zero", "ZeRO stage", U::kNumber, [](E e) -> Cell { return S(e).zero; }},
      {"settings.offload", "CPU offload", U::kText,
       [](E e) { return When(S(e).offload != Offload::kNone, std::string(Name(S(e).offload))); }},
      {"settings.kv_dtype", "KV cache dtype", U::kText, [](E e) -> Cell { return std::string(DTypeName(e.kv_dtype)); }},
      {"settings.quant", "inference weight quantization", U::kText,
       [](E e) -> Cell { return std::string(QuantName(S(e).quant)); }},
      {"settings.max_batched_tokens", "serving: tokens per forward pass", U::kNumber,
       [](E e) { return When(S(e).max_batched_tokens.has_value(), S(e).max_batched_tokens.value_or(0)); }},
      {"settings.kv_block", "serving: KV cache page (tokens)", U::kNumber,
       [](E e) { return When(S(e).kv_block.has_value(), S(e).kv_block.value_or(0)); }},
      {"settings.gpu_memory_utilization", "serving: memory fraction claimed", U::kRatio,
       [](E e) { return When(S(e).gpu_memory_utilization.has_value(), S(e).gpu_memory_utilization.value_or(0.0)); }},
  };
  return kKeys;
}

}  // namespace tally
