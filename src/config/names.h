// The names of config's enums, one `{value, "name"}` table each (util/names.h has the machinery):
// flags, config keys, help, completion and reports all spell them from here.
#pragma once

#include "config/model_spec.h"
#include "config/settings.h"
#include "util/names.h"

namespace tally {

template <>
struct EnumNames<Mode> {
  static constexpr NameEntry<Mode> kTable[] = {{Mode::kBoth, "both"}, {Mode::kTrain, "train"}, {Mode::kInfer, "infer"}};
};

template <>
struct EnumNames<Precision> {
  static constexpr NameEntry<Precision> kTable[] = {{Precision::kFp32, "fp32"},
                                                    {Precision::kTf32, "tf32"},
                                                    {Precision::kFp16, "fp16"},
                                                    {Precision::kBf16, "bf16"},
                                                    {Precision::kMixedFp16, "mixed-fp16"},
                                                    {Precision::kMixedBf16, "mixed-bf16"},
                                                    {Precision::kFp8, "fp8"},
                                                    {Precision::kAmpFp16, "amp-fp16"},
                                                    {Precision::kAmpBf16, "amp-bf16"}};
};

template <>
struct EnumNames<Kernels> {
  static constexpr NameEntry<Kernels> kTable[] = {{Kernels::kEager, "eager"}, {Kernels::kFused, "fused"}};
};

template <>
struct EnumNames<PipelineSchedule> {
  static constexpr NameEntry<PipelineSchedule> kTable[] = {{PipelineSchedule::k1f1b, "1f1b"},
                                                           {PipelineSchedule::kInterleaved, "interleaved"},
                                                           {PipelineSchedule::kZeroBubble, "zero-bubble"},
                                                           {PipelineSchedule::kDualPipe, "dualpipe"}};
};

template <>
struct EnumNames<Fp8Recipe> {
  static constexpr NameEntry<Fp8Recipe> kTable[] = {{Fp8Recipe::kTensorwise, "tensorwise"},
                                                    {Fp8Recipe::kDelayed, "delayed"},
                                                    {Fp8Recipe::kBlockwise, "blockwise"},
                                                    {Fp8Recipe::kMxfp8, "mxfp8"}};
};

template <>
struct EnumNames<EpDispatch> {
  static constexpr NameEntry<EpDispatch> kTable[] = {{EpDispatch::kAllToAll, "all-to-all"},
                                                     {EpDispatch::kDeepEp, "deepep"}};
};

template <>
struct EnumNames<DpBucket> {
  static constexpr NameEntry<DpBucket> kTable[] = {
      {DpBucket::kDdp, "ddp"}, {DpBucket::kMegatron, "megatron"}, {DpBucket::kDeepSpeed, "deepspeed"}};
};

template <>
struct EnumNames<Optimizer> {
  static constexpr NameEntry<Optimizer> kTable[] = {{Optimizer::kSgd, "sgd"},
                                                    {Optimizer::kSgdMomentum, "sgd-momentum"},
                                                    {Optimizer::kAdagrad, "adagrad"},
                                                    {Optimizer::kRmsprop, "rmsprop"},
                                                    {Optimizer::kAdam, "adam"},
                                                    {Optimizer::kAdamw, "adamw"},
                                                    {Optimizer::kAdam8bit, "adam-8bit"},
                                                    {Optimizer::kLion, "lion"},
                                                    {Optimizer::kAdafactor, "adafactor"}};
};

template <>
struct EnumNames<Recompute> {
  static constexpr NameEntry<Recompute> kTable[] = {{Recompute::kNone, "none"},
                                                    {Recompute::kSelective, "selective"},
                                                    {Recompute::kFull, "full"},
                                                    {Recompute::kOp, "op"}};
};

template <>
struct EnumNames<Offload> {
  static constexpr NameEntry<Offload> kTable[] = {
      {Offload::kNone, "none"}, {Offload::kOptimizer, "optimizer"}, {Offload::kParams, "params"}};
};

template <>
struct EnumNames<Attention> {
  static constexpr NameEntry<Attention> kTable[] = {{Attention::kEager, "eager"}, {Attention::kFlash, "flash"}};
};

template <>
struct EnumNames<OptimizerImpl> {
  static constexpr NameEntry<OptimizerImpl> kTable[] = {
      {OptimizerImpl::kForLoop, "for-loop"}, {OptimizerImpl::kForeach, "foreach"}, {OptimizerImpl::kFused, "fused"}};
};

template <>
struct EnumNames<LoraDtype> {
  static constexpr NameEntry<LoraDtype> kTable[] = {{LoraDtype::kFp32, "fp32"}, {LoraDtype::kBase, "base"}};
};

template <>
struct EnumNames<LossKernel> {
  static constexpr NameEntry<LossKernel> kTable[] = {
      {LossKernel::kEager, "eager"}, {LossKernel::kChunked, "chunked"}, {LossKernel::kFused, "fused"}};
};

template <>
struct EnumNames<MlpKernel> {
  static constexpr NameEntry<MlpKernel> kTable[] = {{MlpKernel::kEager, "eager"}, {MlpKernel::kFused, "fused"}};
};

template <>
struct EnumNames<Quant> {
  static constexpr NameEntry<Quant> kTable[] = {{Quant::kNone, "none"}, {Quant::kInt8, "int8"},
                                                {Quant::kInt4, "int4"}, {Quant::kFp8, "fp8"},
                                                {Quant::kNf4, "nf4"},   {Quant::kMxfp4, "mxfp4"}};
};

template <>
struct EnumNames<DequantKernel> {
  static constexpr NameEntry<DequantKernel> kTable[] = {{DequantKernel::kMarlin, "marlin"},
                                                        {DequantKernel::kTinygemm, "tinygemm"}};
};

template <>
struct EnumNames<Family> {
  static constexpr NameEntry<Family> kTable[] = {{Family::kTransformer, "transformer"},
                                                 {Family::kSequential, "sequential"}};
};

template <>
struct EnumNames<NormPlacement> {
  static constexpr NameEntry<NormPlacement> kTable[] = {{NormPlacement::kPre, "pre"},
                                                        {NormPlacement::kPost, "post"},
                                                        {NormPlacement::kSandwich, "sandwich"},
                                                        {NormPlacement::kAfterAdd, "after_add"}};
};

template <>
struct EnumNames<NormParams> {
  static constexpr NameEntry<NormParams> kTable[] = {
      {NormParams::kAffine, "affine"}, {NormParams::kWeightOnly, "weight_only"}, {NormParams::kNone, "none"}};
};

template <>
struct EnumNames<QkNorm> {
  static constexpr NameEntry<QkNorm> kTable[] = {
      {QkNorm::kNone, "none"}, {QkNorm::kPerHead, "per_head"}, {QkNorm::kProjection, "projection"}};
};

template <>
struct EnumNames<AttentionKind> {
  static constexpr NameEntry<AttentionKind> kTable[] = {{AttentionKind::kFull, "full"},
                                                        {AttentionKind::kSliding, "sliding"},
                                                        {AttentionKind::kChunked, "chunked"},
                                                        {AttentionKind::kLatent, "latent"},
                                                        {AttentionKind::kCross, "cross"}};
};

template <>
struct EnumNames<MlpKind> {
  static constexpr NameEntry<MlpKind> kTable[] = {{MlpKind::kGelu, "gelu"},     {MlpKind::kRelu, "relu"},
                                                  {MlpKind::kSwiglu, "swiglu"}, {MlpKind::kGeglu, "geglu"},
                                                  {MlpKind::kRelu2, "relu2"},   {MlpKind::kXielu, "xielu"}};
};

template <>
struct EnumNames<NormKind> {
  static constexpr NameEntry<NormKind> kTable[] = {{NormKind::kLayerNorm, "layernorm"},
                                                   {NormKind::kRmsNorm, "rmsnorm"}};
};

template <>
struct EnumNames<PositionKind> {
  static constexpr NameEntry<PositionKind> kTable[] = {{PositionKind::kLearned, "learned"},
                                                       {PositionKind::kRope, "rope"},
                                                       {PositionKind::kNone, "none"},
                                                       {PositionKind::kAlibi, "alibi"}};
};

template <>
struct EnumNames<ActivationKind> {
  static constexpr NameEntry<ActivationKind> kTable[] = {
      {ActivationKind::kRelu, "relu"},           {ActivationKind::kGelu, "gelu"},
      {ActivationKind::kSilu, "silu"},           {ActivationKind::kTanh, "tanh"},
      {ActivationKind::kSigmoid, "sigmoid"},     {ActivationKind::kRelu6, "relu6"},
      {ActivationKind::kHardswish, "hardswish"}, {ActivationKind::kHardsigmoid, "hardsigmoid"}};
};

template <>
struct EnumNames<DropoutMask> {
  static constexpr NameEntry<DropoutMask> kTable[] = {{DropoutMask::kCuda, "cuda"}, {DropoutMask::kCpu, "cpu"}};
};

}  // namespace tally
