#include "config/names.h"
#include "sections/sections.h"

namespace tally {
namespace {

const TransformerSpec* Transformer(const ModelEstimate& e) {
  return e.spec->family == Family::kTransformer ? &e.spec->transformer : nullptr;
}

// With per-layer kinds (Gemma 2/3, gpt-oss) the window is only the sliding layers': how many.
uint64_t SlidingLayers(const TransformerSpec& t) {
  uint64_t sliding = 0;
  for (const auto& [layer, count] : LayerRuns(t)) sliding += layer.attention == AttentionKind::kSliding ? count : 0;
  return sliding;
}

bool MixedWindow(const ModelEstimate& e) {
  const TransformerSpec* t = Transformer(e);
  return t != nullptr && t->sliding_window > 0 && SlidingLayers(*t) != t->n_layers;
}

}  // namespace

const KeyTable<ModelEstimate>& ModelKeys() {
  static const KeyTable<ModelEstimate> kKeys = {
      {.key = "model", .label = "Model"},
      {.key = "model.name", .label = "name", .value = [](const ModelEstimate& e) -> Cell { return e.spec->name; }},
      {.key = "model.family",
       .label = "family",
       .value = [](const ModelEstimate& e) -> Cell { return std::string(FamilyName(e.spec->family)); }},
      {.key = "model.source",
       .label = "config",
       .value = [](const ModelEstimate& e) -> Cell { return e.spec->source; }},
      {.key = "model.dtype",
       .label = "weight dtype",
       .value = [](const ModelEstimate& e) -> Cell {
         const TransformerSpec* t = Transformer(e);
         return When(t != nullptr && t->dtype, t != nullptr && t->dtype ? std::string(DTypeName(*t->dtype)) : "");
       }},
      {.key = "model.sliding_window",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         const TransformerSpec* t = Transformer(e);
         return When(t != nullptr && t->sliding_window > 0, t != nullptr ? t->sliding_window : 0);
       },
       .label_of = [](const ModelEstimate& e) -> std::string {
         return MixedWindow(e) ? "attention window of the sliding layers (tokens)" : "attention window (tokens)";
       }},
      {.key = "model.sliding_layers",
       .label = "layers with the sliding window",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         return When(MixedWindow(e), MixedWindow(e) ? SlidingLayers(*Transformer(e)) : 0);
       }},
      {.key = "model.experts",
       .label = "experts per block",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         const TransformerSpec* t = Transformer(e);
         return When(t != nullptr && t->n_experts > 0, t != nullptr ? t->n_experts : 0);
       }},
      {.key = "model.top_k",
       .label = "experts per token",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         const TransformerSpec* t = Transformer(e);
         return When(t != nullptr && t->n_experts > 0, t != nullptr ? t->top_k : 0);
       }},
  };
  return kKeys;
}

const KeyTable<ModelEstimate>& SettingsKeys() {
  static const KeyTable<ModelEstimate> kKeys = {
      {.key = "settings", .label = "Settings"},
      {.key = "settings.batch",
       .label = "batch",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell { return e.settings->batch; }},
      {.key = "settings.seq",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell { return When(e.transformer(), e.graph().seq); },
       .label_of = [](const ModelEstimate& e) -> std::string {
         return e.graph().target_seq > 0 ? "source sequence length (encoder)" : "sequence length";
       }},
      {.key = "settings.target_seq",
       .label = "target sequence length (decoder)",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         return When(e.transformer() && e.graph().target_seq > 0, e.graph().target_seq);
       }},
      {.key = "settings.tokens",
       .label = "tokens (batch x seq)",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell { return When(e.transformer(), e.flops.units); }},
      {.key = "settings.causal",
       .label = "causal (attention FLOPs halved)",
       .unit = Unit::kBool,
       .value = [](const ModelEstimate& e) -> Cell { return When(e.transformer(), e.graph().causal); }},
      {.key = "settings.images",
       .label = "images per sequence (vision tower)",
       .unit = Unit::kNumber,
       .value = [](const ModelEstimate& e) -> Cell {
         return When(e.transformer() && e.graph().images.has_value(), e.graph().images.value_or(0));
       }},
  };
  return kKeys;
}

}  // namespace tally
