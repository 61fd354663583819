#include "estimate/evaluation.h"

#include <algorithm>

#include "estimate/checkpoint_match.h"
#include "estimate/context_parallel.h"
#include "estimate/expert_parallel.h"
#include "util/checked_math.h"

namespace tally {
namespace {

constexpr size_t kMaxGraphs = 8;
constexpr std::string_view kFlopsWhat = "the model's FLOPs";

// The totals of `one` for `batch` samples; the split by component is left empty.
FlopCounts ScaleTotals(const FlopCounts& one, uint64_t batch) {
  constexpr std::string_view what = kFlopsWhat;
  FlopCounts f;
  f.forward = CheckedMul(one.forward, batch, what);
  f.backward = CheckedMul(one.backward, batch, what);
  f.non_matmul_forward = CheckedMul(one.non_matmul_forward, batch, what);
  f.per_layer_forward = CheckedMul(one.per_layer_forward, batch, what);
  CheckedAdd(f.forward, f.backward, what);  // flops.step is reported
  return f;
}

}  // namespace

// Every FLOP count is linear in the batch: each GEMM's m or count carries it, and halving a causal
// product stays exact because 2·m·n·k is even.
FlopCounts ScaleFlops(const FlopCounts& one, uint64_t batch) {
  FlopCounts f = ScaleTotals(one, batch);
  f.forward_by_component = ScaleByComponent(one, batch);
  return f;
}

std::map<Component, uint64_t> ScaleByComponent(const FlopCounts& one, uint64_t batch) {
  std::map<Component, uint64_t> out = one.forward_by_component;
  for (auto& [component, n] : out) n = CheckedMul(n, batch, kFlopsWhat);
  return out;
}

uint64_t RecomputeFlopsOf(const GraphSummary& summary, const Settings& s) {
  if (s.recompute == Recompute::kFull && s.recompute_layers) {
    // Some blocks of each stage: which, and of which distinct block, the graph says.
    const LayerGraph& g = *summary.graph;
    const uint64_t one = RecomputeFlops(g, RecomputeRule(g, s.recompute, s.pp, s.recompute_layers));
    return CheckedMul(one, s.batch, "the recomputation FLOPs");
  }
  const uint64_t one = s.recompute == Recompute::kFull        ? summary.recompute_full
                       : s.recompute == Recompute::kSelective ? summary.recompute_selective
                       : s.recompute == Recompute::kOp        ? summary.recompute_op
                                                              : 0;
  return CheckedMul(one, s.batch, "the recomputation FLOPs");
}

FlopTotals FlopTotalsOf(const GraphSummary& summary, const Settings& s) {
  FlopTotals f;
  f.counts = ScaleTotals(summary.flops, s.batch);
  f.recompute = RecomputeFlopsOf(summary, s);
  f.step = CheckedAdd(f.counts.forward + f.counts.backward, f.recompute, "the FLOPs of a step");
  f.units = summary.family == Family::kTransformer ? CheckedMul(s.batch, summary.seq, "the tokens") : s.batch;
  return f;
}

Evaluation::Evaluation(ModelSpec spec) : spec_(std::move(spec)) {
  // One token is enough: the parameters do not depend on the sequence.
  if (!spec_.guessed_layout.empty()) ConfirmGuessedLayout(spec_, *Graph({.seq = 1}));
}

std::shared_ptr<const GraphSummary> Evaluation::Summary(const Settings& settings) {
  CheckParallelism(spec_, settings);
  CheckContextParallel(spec_, settings);
  CheckExpertParallel(spec_, settings);
  std::shared_ptr<const GraphSummary> summary = SummaryOf(settings);
  // --recompute-layers counts blocks of a stage: refused where there are none, or fewer than asked
  // (Megatron-LM asserts the same of --recompute-num-layers), rather than read as "all".
  if (settings.recompute_layers) {
    const uint64_t blocks = summary->memory.n_layers;
    if (summary->family != Family::kTransformer || blocks == 0) {
      throw InputError("--recompute-layers: '" + spec_.name + "' has no transformer blocks to recompute");
    }
    const uint64_t most = StageFirstBlock(1, blocks, settings.pp);
    if (*settings.recompute_layers > most) {
      throw InputError(
          "--recompute-layers: " + std::to_string(*settings.recompute_layers) + " blocks, but " +
          (settings.pp > 1 ? "a pipeline stage of '" + spec_.name + "' holds at most " : "'" + spec_.name + "' has ") +
          std::to_string(most) + "; without it --recompute full reruns them all");
    }
  }
  return summary;
}

std::shared_ptr<const GraphSummary> Evaluation::SummaryOf(const Settings& settings) {
  GraphSettings key = GraphSettingsOf(settings);
  key.batch = 1;
  // A sweep's consecutive points mostly share a graph: compare with the last before the map.
  if (last_summary_ != nullptr && key == last_key_) return last_summary_;
  if (auto kept = summaries_.Find(key)) return Remember(std::move(key), std::move(kept));
  const LayerGraph graph = BuildGraph(spec_, key);
  MemoryModel memory = SummarizeMemory(graph);
  memory.quantization = spec_.quantization;
  auto s = std::make_shared<GraphSummary>();
  // Copies made once the building is done: exact-size blocks, allocated one after the other. A sweep
  // that cycles through thousands of graphs reads a little of one at each point, so the less memory
  // that little is spread over, the fewer cache misses.
  s->memory = memory;
  s->flops = CountFlops(graph);
  s->recompute_selective = RecomputeFlops(graph, RecomputeRule(graph, Recompute::kSelective));
  s->recompute_full = RecomputeFlops(graph, RecomputeRule(graph, Recompute::kFull));
  s->recompute_op = RecomputeFlops(graph, RecomputeRule(graph, Recompute::kOp));
  s->params = CountParams(graph);
  s->seq = graph.seq;
  s->family = graph.family;
  s->graph = std::make_shared<const LayerGraph>(graph);
  summaries_.Keep(key, s);
  return Remember(std::move(key), std::move(s));
}

std::shared_ptr<const GraphSummary> Evaluation::Remember(GraphSettings key,
                                                         std::shared_ptr<const GraphSummary> summary) {
  last_key_ = std::move(key);
  last_summary_ = std::move(summary);
  return last_summary_;
}

std::shared_ptr<const LayerGraph> Evaluation::Graph(const GraphSettings& settings) {
  if (auto it = graphs_.find(settings); it != graphs_.end()) return it->second;
  auto graph = std::make_shared<const LayerGraph>(BuildGraph(spec_, settings));
  if (graphs_.size() >= kMaxGraphs) return graph;
  return graphs_.emplace(settings, std::move(graph)).first->second;
}

}  // namespace tally
