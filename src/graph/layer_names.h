// The names of the graph's enums (util/names.h): node kinds in --layers and JSON, components in
// the rollups and in --trainable.
#pragma once

#include "graph/layer.h"
#include "util/names.h"

namespace tally {

template <>
struct EnumNames<LayerKind> {
  static constexpr NameEntry<LayerKind> kTable[] = {
      {LayerKind::kEmbedding, "embedding"},
      {LayerKind::kLinear, "linear"},
      {LayerKind::kAttentionScores, "attention_scores"},
      {LayerKind::kSoftmax, "softmax"},
      {LayerKind::kAttentionContext, "attention_context"},
      {LayerKind::kRope, "rope"},
      {LayerKind::kNorm, "norm"},
      {LayerKind::kActivation, "activation"},
      {LayerKind::kResidualAdd, "residual_add"},
      {LayerKind::kDropout, "dropout"},
      {LayerKind::kLoss, "loss"},
      {LayerKind::kConv2d, "conv2d"},
      {LayerKind::kPool, "pool"},
      {LayerKind::kFlatten, "flatten"},
      {LayerKind::kConcat, "concat"},
      {LayerKind::kMultiply, "multiply"},
      {LayerKind::kConv1d, "conv1d"},
      {LayerKind::kScan, "selective_scan"},
      {LayerKind::kDeltaRule, "gated_delta_rule"},
      {LayerKind::kLightning, "lightning_attention"},
      {LayerKind::kLru, "rg_lru"},
  };
};

template <>
struct EnumNames<Component> {
  static constexpr NameEntry<Component> kTable[] = {
      {Component::kEmbedding, "embedding"},
      {Component::kAttention, "attention"},
      {Component::kAttentionCore, "attention_core"},
      {Component::kMlp, "mlp"},
      {Component::kNorm, "norm"},
      {Component::kLmHead, "lm_head"},
      {Component::kEmbedProjection, "embed_projection"},
      {Component::kRouter, "router"},
      {Component::kLora, "lora"},
      {Component::kLoss, "loss"},
      {Component::kHead, "head"},
      {Component::kSsm, "ssm"},
      {Component::kVision, "vision"},
      {Component::kProjector, "projector"},
      {Component::kAudio, "audio"},
      {Component::kLinear, "linear"},
      {Component::kConv2d, "conv2d"},
      {Component::kPool, "pool"},
      {Component::kActivation, "activation"},
      {Component::kOther, "other"},
  };
};

}  // namespace tally
