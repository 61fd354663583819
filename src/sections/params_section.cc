#include "config/names.h"
#include "sections/explain_text.h"
#include "sections/sections.h"

namespace tally {
namespace {

const ParamCounts& P(const ModelEstimate& e) { return e.summary->params; }

bool Parametric(Component c) {
  return c == Component::kEmbedding || c == Component::kAttention || c == Component::kMlp || c == Component::kNorm ||
         c == Component::kLmHead || c == Component::kLinear || c == Component::kConv2d || c == Component::kRouter ||
         c == Component::kEmbedProjection || c == Component::kLora || c == Component::kHead || c == Component::kSsm ||
         c == Component::kVision || c == Component::kProjector || c == Component::kAudio;
}

// The first block's parameters node by node: "attn_norm 1,536 + attn.qkv 1,771,776 + ... = 7,087,872".
std::string BlockText(const LayerGraph& graph) {
  std::string out;
  uint64_t total = 0;
  const std::string prefix = "blocks.0.";
  const int first = graph.runs.empty() ? -2 : graph.runs.front().type;
  for (const Layer& l : graph.layers) {
    if (l.block_type != first || l.params == 0) continue;
    out += (out.empty() ? "" : " + ") + l.path.substr(prefix.size()) + " " + Grouped(l.params);
    total += l.params;
  }
  return out + " = " + Grouped(total);
}

std::vector<KeyEntry> Components(const ModelEstimate& e) {
  bool tied = false;
  for (const Layer& l : e.graph().layers) tied = tied || (l.component == Component::kLmHead && l.weights_of);
  std::vector<KeyEntry> out;
  for (const auto& [component, count] : P(e).by_component) {
    if (!Parametric(component)) continue;
    out.push_back({ComponentName(component),
                   component == Component::kLmHead && tied ? "lm_head (tied to embedding)" : "", count});
  }
  return out;
}

Cell OfTransformer(const ModelEstimate& e, uint64_t n) { return When(e.transformer(), n); }

}  // namespace

const KeyTable<ModelEstimate>& ParamsKeys() {
  using E = const ModelEstimate&;
  static const KeyTable<ModelEstimate> kKeys = {
      {.key = "params", .label = "Parameters"},
      {.key = "params.total",
       .unit = Unit::kCount,
       .value = [](E e) -> Cell { return P(e).total; },
       .explain = [](E e) { return SumText(P(e).by_component, P(e).total); },
       .label_of = [](E e) -> std::string { return e.transformer() ? "total (tied weights once)" : "total"; }},
      {.key = "params.embedding",
       .label = "embedding (tokens, positions, untied head)",
       .unit = Unit::kCount,
       .value = [](E e) { return OfTransformer(e, P(e).embedding); },
       .explain = [](E) -> std::string {
         return "token and learned-position embeddings and an untied head: what Kaplan et al. 2020 (§2.1) leave out "
                "of N";
       }},
      {.key = "params.non_embedding",
       .label = "non-embedding (Kaplan's N)",
       .unit = Unit::kCount,
       .value = [](E e) { return OfTransformer(e, P(e).non_embedding); },
       .explain =
           [](E e) {
             return Grouped(P(e).total) + " - " + Grouped(P(e).embedding) + " = " + Grouped(P(e).non_embedding);
           }},
      {.key = "params.per_layer",
       .label = "per block",
       .unit = Unit::kCount,
       .value = [](E e) { return OfTransformer(e, P(e).per_layer); },
       .explain = [](E e) { return BlockText(e.graph()); }},
      {.key = "params.trainable",
       .label = "trainable (the rest frozen)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).trainable != P(e).total, P(e).trainable); }},
      {.key = "params.active",
       .label = "active per token (with input embedding)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).active != P(e).total, P(e).active); },
       .explain = [](E) -> std::string {
         return "total less the experts a token is not routed to; with the input embedding, as Qwen, Meta and "
                "Microsoft count active parameters";
       }},
      {.key = "params.active_non_embedding",
       .label = "active per token (no input embedding)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).active != P(e).total, P(e).active_non_embedding); },
       .explain =
           [](E e) {
             return Grouped(P(e).active) + " less the input embedding table = " + Grouped(P(e).active_non_embedding) +
                    ": DeepSeek's 'activated' and OpenAI's 'active' parameters";
           }},
      {.key = "params.active_text",
       .label = "active per text token (no vision tower)",
       .unit = Unit::kCount,
       .value =
           [](E e) {
             return When(e.transformer() && P(e).active != P(e).total && P(e).active_text != P(e).active,
                         P(e).active_text);
           },
       .explain =
           [](E e) {
             return Grouped(P(e).active) +
                    " less the vision tower and projector, which run once per image = " + Grouped(P(e).active_text) +
                    ": Meta's 'active' parameters of Llama 4";
           }},
      {.key = "params.per_layer_embedding",
       .label = "per-layer embedding (PLE, host-cacheable)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).per_layer_embedding > 0, P(e).per_layer_embedding); },
       .explain = [](E) -> std::string {
         return "Gemma 3n's embed_tokens_per_layer: in params.total and in the weights tally loads, but Google's PLE "
                "caching keeps it in host memory and fetches each token's rows";
       }},
      {.key = "params.effective",
       .label = "effective (Gemma 3n's E2B/E4B count)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).per_layer_embedding > 0, P(e).effective); },
       .explain =
           [](E e) {
             return Grouped(P(e).total) +
                    " less the token and per-layer embeddings, the audio and vision towers and their embedders = " +
                    Grouped(P(e).effective) + ": the parameters Google's Gemma 3n overview calls effective";
           }},
      {.key = "params.mtp",
       .label = "multi-token prediction (not in total)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(e.transformer() && P(e).mtp > 0, P(e).mtp); },
       .explain = [](E) -> std::string {
         return "DeepSeek-V3's and GLM-4.5's MTP modules: stored in the checkpoint, not built by transformers";
       }},
      {.key = "params.components", .label = "by component"},
      {.key = "params.components", .unit = Unit::kCount, .entries = Components},
  };
  return kKeys;
}

}  // namespace tally
