#include "estimate/estimate_graph.h"

#include <map>
#include <set>

#include "config/names.h"
#include "estimate/checkpoint_report.h"
#include "estimate/flops.h"
#include "estimate/kv_cache.h"
#include "estimate/memory_report.h"
#include "estimate/params.h"
#include "util/checked_math.h"
#include "util/units.h"

namespace tally {
namespace {

std::string G(uint64_t n) { return FormatGrouped(n); }

// "a 1 + b 2 = 3" over a component map, for --explain.
std::string SumText(const std::map<Component, uint64_t>& parts, uint64_t total, bool (*keep)(Component) = nullptr) {
  std::string out;
  for (const auto& [component, n] : parts) {
    if (keep != nullptr && !keep(component)) continue;
    if (n == 0) continue;
    out += (out.empty() ? "" : " + ") + std::string(ComponentName(component)) + " " + G(n);
  }
  return out + " = " + G(total);
}

// "2 · m · k · n [· count] = flops" for one GEMM, the form the nanoGPT notebook writes.
std::string GemmText(const Gemm& g, const std::string& path) {
  std::string out = "2 · " + G(g.m) + " · " + G(g.k) + " · " + G(g.n);
  if (g.count > 1) out += " · " + G(g.count);
  if (g.halved) out += " / 2 (causal)";
  return out + " = " + G(GemmForwardFlops(g, path));
}

bool Parametric(Component c) {
  return c == Component::kEmbedding || c == Component::kAttention || c == Component::kMlp || c == Component::kNorm ||
         c == Component::kLmHead || c == Component::kLinear || c == Component::kConv2d || c == Component::kRouter ||
         c == Component::kEmbedProjection || c == Component::kLora || c == Component::kHead || c == Component::kSsm ||
         c == Component::kVision || c == Component::kProjector;
}

void AddModel(const ModelSpec& spec, Report& r) {
  r.Group("model", "Model");
  r.Set("model.name", "name", spec.name, Unit::kText);
  r.Set("model.family", "family", FamilyName(spec.family), Unit::kText);
  r.Set("model.source", "config", spec.source, Unit::kText);
  if (spec.family != Family::kTransformer) return;
  const TransformerSpec& t = spec.transformer;
  if (t.dtype) r.Set("model.dtype", "weight dtype", std::string(DTypeName(*t.dtype)), Unit::kText);
  if (t.sliding_window > 0) {
    // With per-layer kinds (Gemma 2/3, gpt-oss) the window is only the sliding layers': say how many.
    uint64_t sliding = 0;
    for (const auto& [layer, count] : LayerRuns(t)) sliding += layer.attention == AttentionKind::kSliding ? count : 0;
    const bool mixed = sliding != t.n_layers;
    r.Set("model.sliding_window",
          mixed ? "attention window of the sliding layers (tokens)" : "attention window (tokens)", t.sliding_window,
          Unit::kNumber);
    if (mixed) r.Set("model.sliding_layers", "layers with the sliding window", sliding, Unit::kNumber);
  }
  if (t.n_experts > 0) {
    r.Set("model.experts", "experts per block", t.n_experts, Unit::kNumber);
    r.Set("model.top_k", "experts per token", t.top_k, Unit::kNumber);
  }
}

void AddSettings(const LayerGraph& graph, const Settings& s, Report& r) {
  r.Group("settings", "Settings");
  r.Set("settings.batch", "batch", s.batch, Unit::kNumber);
  if (graph.family == Family::kTransformer) {
    r.Set("settings.seq", graph.target_seq > 0 ? "source sequence length (encoder)" : "sequence length", graph.seq,
          Unit::kNumber);
    if (graph.target_seq > 0) {
      r.Set("settings.target_seq", "target sequence length (decoder)", graph.target_seq, Unit::kNumber);
    }
    r.Set("settings.tokens", "tokens (batch x seq)", CheckedMul(s.batch, graph.seq, "the tokens"), Unit::kNumber);
    r.Set("settings.causal", "causal (attention FLOPs halved)", graph.causal, Unit::kBool);
    if (graph.images) r.Set("settings.images", "images per sequence (vision tower)", *graph.images, Unit::kNumber);
  }
}

// The first block's parameters node by node: "attn_norm 1,536 + attn.qkv 1,771,776 + ... = 7,087,872".
std::string BlockText(const LayerGraph& graph) {
  std::string out;
  uint64_t total = 0;
  const std::string prefix = "blocks.0.";
  const int first = graph.runs.empty() ? -2 : graph.runs.front().type;
  for (const Layer& l : graph.layers) {
    if (l.block_type != first || l.params == 0) continue;
    out += (out.empty() ? "" : " + ") + l.path.substr(prefix.size()) + " " + G(l.params);
    total += l.params;
  }
  return out + " = " + G(total);
}

void AddParams(const LayerGraph& graph, const ParamCounts& p, Report& r) {
  r.Group("params", "Parameters");
  if (graph.family == Family::kTransformer) {
    r.Set("params.total", "total (tied weights once)", p.total, Unit::kCount, SumText(p.by_component, p.total));
    r.Set("params.embedding", "embedding (tokens, positions, untied head)", p.embedding, Unit::kCount,
          "token and learned-position embeddings and an untied head: what Kaplan et al. 2020 (§2.1) leave out of N");
    r.Set("params.non_embedding", "non-embedding (Kaplan's N)", p.non_embedding, Unit::kCount,
          G(p.total) + " - " + G(p.embedding) + " = " + G(p.non_embedding));
    r.Set("params.per_layer", "per block", p.per_layer, Unit::kCount, BlockText(graph));
    if (p.trainable != p.total) r.Set("params.trainable", "trainable (the rest frozen)", p.trainable, Unit::kCount);
    if (p.active != p.total) {
      r.Set("params.active", "active per token (with input embedding)", p.active, Unit::kCount,
            "total less the experts a token is not routed to; with the input embedding, as Qwen, Meta and "
            "Microsoft count active parameters");
      r.Set("params.active_non_embedding", "active per token (no input embedding)", p.active_non_embedding,
            Unit::kCount,
            G(p.active) + " less the input embedding table = " + G(p.active_non_embedding) +
                ": DeepSeek's 'activated' and OpenAI's 'active' parameters");
      if (p.active_text != p.active) {
        r.Set("params.active_text", "active per text token (no vision tower)", p.active_text, Unit::kCount,
              G(p.active) + " less the vision tower and projector, which run once per image = " + G(p.active_text) +
                  ": Meta's 'active' parameters of Llama 4");
      }
    }
    if (p.mtp > 0) {
      r.Set("params.mtp", "multi-token prediction (not in total)", p.mtp, Unit::kCount,
            "DeepSeek-V3's MTP modules: stored in the checkpoint, not built by transformers");
    }
  } else {
    r.Set("params.total", "total", p.total, Unit::kCount, SumText(p.by_component, p.total));
  }
  bool tied = false;
  for (const Layer& l : graph.layers) tied = tied || (l.component == Component::kLmHead && l.weights_of);
  r.Group("params.components", "by component");
  for (const auto& [component, count] : p.by_component) {
    if (!Parametric(component)) continue;
    std::string label = component == Component::kLmHead && tied ? "lm_head (tied to embedding)" : "";
    r.Set(std::string("params.components.") + ComponentName(component), label, count, Unit::kCount);
  }
}

// Kaplan et al. 2020, Eq. 2.2 and §2.1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn per token, C ≈ 6N
// per token for training, with N the non-embedding parameters.
void AddApproximations(const LayerGraph& graph, const ModelSpec& spec, uint64_t batch, uint64_t n, const FlopCounts& f,
                       Report& r) {
  const TransformerSpec& t = spec.transformer;
  const uint64_t tokens = CheckedMul(batch, graph.seq, "the tokens");
  const std::string what = "the 6·N·D approximation";
  uint64_t six_nd = CheckedProduct({6, n, tokens}, what);
  uint64_t attn = CheckedProduct({2, t.n_layers, graph.seq, t.n_heads, t.head_dim}, what);
  uint64_t kaplan = CheckedMul(CheckedAdd(CheckedMul(2, n, what), attn, what), tokens, what);
  auto ratio = [](uint64_t exact, uint64_t approx) {
    return approx == 0 ? 0.0 : static_cast<double>(exact) / static_cast<double>(approx);
  };
  r.Group("flops.approx", "approximations (N = non-embedding params, D = tokens)");
  r.Set("flops.approx.six_nd", "6·N·D (Kaplan, training step)", six_nd, Unit::kFlop,
        "6 · " + G(n) + " · " + G(tokens) + " = " + G(six_nd) + " (Kaplan et al. 2020, §2.1)");
  r.Set("flops.approx.six_nd_ratio", "exact forward + backward / 6·N·D", ratio(f.forward + f.backward, six_nd),
        Unit::kRatio);
  r.Set("flops.approx.kaplan_forward", "(2N + 2·L·s·h)·D (Kaplan, forward)", kaplan, Unit::kFlop,
        "(2 · " + G(n) + " + 2 · " + G(t.n_layers) + " · " + G(graph.seq) + " · " + G(t.n_heads * t.head_dim) + ") · " +
            G(tokens) + " = " + G(kaplan) + " (Kaplan et al. 2020, Eq. 2.2)");
  r.Set("flops.approx.kaplan_forward_ratio", "exact forward / Kaplan", ratio(f.forward, kaplan), Unit::kRatio);
}

void AddFlops(const ModelSpec& spec, const Settings& settings, const GraphSummary& summary, Report& r) {
  const LayerGraph& graph = *summary.graph;
  const ParamCounts& p = summary.params;
  const FlopTotals totals = FlopTotalsOf(summary, settings);
  const FlopCounts& f = totals.counts;
  const bool transformer = graph.family == Family::kTransformer;
  const uint64_t units = totals.units, recompute = totals.recompute, step = totals.step;
  r.Group("flops", "FLOPs (matmul: 2·m·n·k per GEMM)");
  r.Set("flops.forward", "forward", f.forward, Unit::kFlop,
        "Σ 2·m·n·k over the GEMMs: " + SumText(f.forward_by_component, f.forward) + " (--layers --explain shows each)");
  r.Set("flops.backward", "backward (dX and dW per GEMM)", f.backward, Unit::kFlop,
        "per GEMM, 2·m·n·k for each operand that needs a gradient (dX unless it is raw input, dW unless frozen)");
  r.Set("flops.recompute", std::string("recomputation (") + RecomputeName(settings.recompute) + ")", recompute,
        Unit::kFlop, "forward FLOPs run again in backward: the attention core (selective) or every block (full)");
  r.Set("flops.step", "step (forward + backward + recomputation)", step, Unit::kFlop,
        G(f.forward) + " + " + G(f.backward) + " + " + G(recompute) + " = " + G(step));
  const std::string per = transformer ? "flops.per_token" : "flops.per_sample";
  r.Group(per, transformer ? "per token" : "per sample");
  r.Set(per + ".forward", "forward", PerUnit(f.forward, units), Unit::kFlop,
        G(f.forward) + " / " + G(units) + (transformer ? " tokens" : " samples"));
  r.Set(per + ".backward", "backward", PerUnit(f.backward, units), Unit::kFlop);
  r.Set(per + ".step", "step", PerUnit(step, units), Unit::kFlop);
  if (transformer) r.Set("flops.per_layer.forward", "per block, forward", f.per_layer_forward, Unit::kFlop);
  r.Set("flops.macs.forward", "forward in MACs (= FLOPs / 2)", f.forward / 2, Unit::kMac,
        "one multiply-accumulate is two FLOPs: " + G(f.forward) + " / 2");
  r.Set(
      "flops.non_matmul.forward", "non-matmul forward (apart)", f.non_matmul_forward, Unit::kFlop,
      "per element: 1 for activations, adds, softmax, dropout; 5 LayerNorm, 4 RMSNorm, 3 RoPE (DeepSpeed's profiler)");
  std::set<Component> with_gemms;
  for (const Layer& l : graph.layers) {
    if (!l.gemms.empty()) with_gemms.insert(l.component);
  }
  r.Group("flops.components", "forward by component");
  for (const auto& [component, flops] : f.forward_by_component) {
    if (with_gemms.count(component)) {
      r.Set(std::string("flops.components.") + ComponentName(component), "", flops, Unit::kFlop);
    }
  }
  // With experts, N is what a token uses: the experts it is not routed to cost it nothing.
  // Kaplan's per-token rules assume one stack over one sequence: not for an encoder–decoder.
  if (transformer && graph.target_seq == 0) {
    AddApproximations(graph, spec, settings.batch, p.non_embedding - (p.total - p.active), f, r);
  }
}

// Each node of the graph, blocks expanded. A layer's attention node (QK^T) also names its attention
// kind (and span) and the KV-cache bytes one token adds to that layer (whole layer, --kv-dtype).
void AddLayers(const LayerGraph& graph, const Settings& settings, Report& r) {
  Table& t = r.AddTable("layers", "Layers",
                        {{.key = "path"},
                         {.key = "kind"},
                         {.key = "component", .shown = false},
                         {.key = "shape", .unit = Unit::kShape, .shown = false},
                         {.key = "params", .unit = Unit::kCount},
                         {.key = "flops.forward", .label = "forward FLOPs", .unit = Unit::kFlop},
                         {.key = "flops.backward", .unit = Unit::kFlop, .shown = false},
                         {.key = "flops.non_matmul_forward", .unit = Unit::kFlop, .shown = false},
                         {.key = "attention"},
                         {.key = "attention_span", .unit = Unit::kCount, .shown = false},
                         {.key = "kv_bytes_per_token", .label = "KV per token", .unit = Unit::kByte}});
  const DType kv = KvDtype(settings);
  for (const Layer& l : graph.Expanded()) {
    const LayerFlops f = CountLayerFlops(l);
    std::string formulas;  // each GEMM instantiated, for --explain
    for (const Gemm& g : l.gemms) formulas += (formulas.empty() ? "" : "\n") + GemmText(g, l.path);
    Cell attention, span, kv_bytes;
    if (l.kind == LayerKind::kAttentionScores && l.kv_elements_per_token > 0) {
      attention = std::string(Name(l.attention));
      if (l.attention_span > 0) span = l.attention_span;
      kv_bytes = BytesOf(l.kv_elements_per_token, kv, "the KV cache");
    }
    t.rows.push_back({l.path, std::string(LayerKindName(l.kind)), std::string(ComponentName(l.component)), l.shape,
                      l.params, f.forward, f.backward, f.non_matmul_forward, attention, span, kv_bytes});
    t.explain.push_back(std::move(formulas));
  }
}

}  // namespace

Value PerUnit(uint64_t total, uint64_t units) {
  if (total % units == 0) return total / units;
  return static_cast<double>(total) / static_cast<double>(units);
}

namespace {

Report EstimateOnce(Evaluation& evaluation, const Settings& settings, const ReportRequest& request) {
  const ModelSpec& spec = evaluation.spec();
  const auto summary = evaluation.Summary(settings);
  const LayerGraph& graph = *summary->graph;
  Report r;
  AddModel(spec, r);
  if (request.settings) AddSettings(graph, settings, r);
  if (request.memory) AddMemorySettings(spec, settings, r);
  if (request.params) AddParams(graph, summary->params, r);
  if (request.params) AddCheckpoint(spec, r);
  if (request.flops) AddFlops(spec, settings, *summary, r);
  if (request.memory) AddMemory(spec, settings, summary->memory, r);
  if (request.layers) AddLayers(*evaluation.Graph(GraphSettingsOf(settings)), settings, r);
  if (request.layers) AddCheckpointMatch(spec, *evaluation.Graph(GraphSettingsOf(settings)), r);
  r.notes.insert(r.notes.end(), spec.notes.begin(), spec.notes.end());
  r.notes.insert(r.notes.end(), settings.notes.begin(), settings.notes.end());
  const std::optional<VisionSpec>& vision = spec.transformer.vision;
  if (vision && graph.images && graph.seq < *graph.images * vision->tokens_per_image) {
    r.notes.push_back("sequence length " + std::to_string(graph.seq) + " cannot hold the " +
                      std::to_string(*graph.images * vision->tokens_per_image) +
                      " image tokens of its image(s); the vision tower is still counted over them");
  }
  // A model without attention (Mamba) has no context limit: its context_length is only --seq's default.
  if (graph.family == Family::kTransformer && spec.transformer.n_heads > 0 &&
      graph.seq > spec.transformer.context_length) {
    r.notes.push_back("sequence length " + std::to_string(graph.seq) + " exceeds the context length " +
                      std::to_string(spec.transformer.context_length) + " of '" + spec.name + "'");
  }
  return r;
}

}  // namespace

// A count past 2^64 comes from the model's sizes with the batch and sequence: its config is named.
Report EstimateReport(Evaluation& evaluation, const Settings& settings, const ReportRequest& request) {
  return BlameOverflowOn(evaluation.spec().source, [&] { return EstimateOnce(evaluation, settings, request); });
}

}  // namespace tally
