#include "config/settings.h"

#include "config/names.h"

namespace tally {

Precisions PolicyDtypes(Precision p) {
  switch (p) {
    // tf32 stores what fp32 does; only its GEMMs differ (ComputeDtype).
    case Precision::kFp32:
    case Precision::kTf32:
      return {DType::kFp32, DType::kFp32, std::nullopt, DType::kFp32, DType::kFp32};
    // Pure low precision: everything, optimizer states included, in the one dtype.
    case Precision::kFp16:
      return {DType::kFp16, DType::kFp16, std::nullopt, DType::kFp16, DType::kFp16};
    case Precision::kBf16:
      return {DType::kBf16, DType::kBf16, std::nullopt, DType::kBf16, DType::kBf16};
    // Micikevicius et al. 2017, §3: half-precision weights, activations and gradients, an fp32 master
    // copy of the weights; optimizer states in fp32 (ZeRO §3.1's 2 + 2 + 12 bytes for Adam).
    case Precision::kMixedFp16:
      return {DType::kFp16, DType::kFp16, DType::kFp32, DType::kFp32, DType::kFp16};
    // NOLINTNEXTLINE(bugprone-branch-clone): fp8 (below) stores the same dtypes but is its own precision.
    case Precision::kMixedBf16:
      return {DType::kBf16, DType::kBf16, DType::kFp32, DType::kFp32, DType::kBf16};
    // FP8 GEMMs as in NVIDIA Transformer Engine: bf16 weights and gradients, fp32 master and states;
    // activations counted at bf16 (TE's fp8 copies of GEMM inputs are not modelled: an upper bound).
    case Precision::kFp8:
      return {DType::kBf16, DType::kBf16, DType::kFp32, DType::kFp32, DType::kBf16};
    // PyTorch autocast: the weights, their gradients and the optimizer states stay fp32; the
    // activation dtype is the GEMMs' (the casts autocast makes), norms and softmax run in fp32
    // (torch.amp's op lists; estimate/activations.cc).
    case Precision::kAmpFp16:
      return {DType::kFp32, DType::kFp32, std::nullopt, DType::kFp32, DType::kFp16};
    case Precision::kAmpBf16:
      return {DType::kFp32, DType::kFp32, std::nullopt, DType::kFp32, DType::kBf16};
  }
  return {};
}

const char* PrecisionName(Precision p) { return Name(p); }
const char* OptimizerName(Optimizer o) { return Name(o); }
const char* RecomputeName(Recompute r) { return Name(r); }
const char* OptimizerImplName(OptimizerImpl i) { return Name(i); }
const char* AttentionName(Attention a) { return Name(a); }
const char* QuantName(Quant q) { return Name(q); }

bool LoraAdaptersInFp32(const Settings& s) {
  return s.lora_rank > 0 && s.lora_dtype == LoraDtype::kFp32 && BitsPer(s.dtypes.param) == 16 && !s.autocast();
}

std::optional<Precisions> AdapterDtypes(const Settings& s) {
  if (!LoraAdaptersInFp32(s)) return std::nullopt;
  Precisions d = s.dtypes;
  d.param = d.grad = DType::kFp32;
  if (!s.state_dtype_given) d.state = DType::kFp32;
  d.master.reset();
  return d;
}

const std::vector<std::string>& LoraTargets(const Settings& settings) {
  static const std::vector<std::string> kDefault = {"qkv", "out"};
  return settings.lora_targets.empty() ? kDefault : settings.lora_targets;
}

}  // namespace tally
