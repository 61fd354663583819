#include "config/names.h"
#include "estimate/flops.h"
#include "estimate/kv_cache.h"
#include "sections/explain_text.h"
#include "sections/sections.h"

namespace tally {
namespace {

// "2 · m · k · n [· count] = flops" for one GEMM, the form the nanoGPT notebook writes.
std::string GemmText(const Gemm& g, const std::string& path) {
  std::string out = "2 · " + Grouped(g.m) + " · " + Grouped(g.k) + " · " + Grouped(g.n);
  if (g.count > 1) out += " · " + Grouped(g.count);
  if (g.halved) out += " / 2 (causal)";
  return out + " = " + Grouped(GemmForwardFlops(g, path));
}

}  // namespace

// A layer's attention node (QK^T) also names its attention kind (and span) and the KV-cache bytes
// one token adds to that layer (whole layer, --kv-dtype).
void AddLayersTable(const LayerGraph& graph, const Settings& settings, Report& r) {
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

}  // namespace tally
