// The one place graphs are built. An Evaluation holds one model and answers for any settings from
// graphs it caches by their GraphSettings: each graph once, and with it a batch-independent summary
// (built at batch 1: every FLOP and saved tensor scales exactly with the batch). Estimators are pure
// functions of a summary (or graph) and the settings; fit and sweep ask again with changed settings
// and rebuild only when a setting the graph depends on changed.
#pragma once

#include <map>
#include <memory>

#include "config/model_spec.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/memory_model.h"
#include "estimate/params.h"
#include "estimate/summary_cache.h"
#include "graph/build_graph.h"

namespace tally {

struct GraphSummary {
  std::shared_ptr<const LayerGraph> graph;  // at batch 1
  MemoryModel memory;
  FlopCounts flops;                                                        // at batch 1
  uint64_t recompute_selective = 0, recompute_full = 0, recompute_op = 0;  // at batch 1
  ParamCounts params;
  uint64_t seq = 1;
  Family family = Family::kTransformer;  // the graph's: read at every point, without the graph
  // The memory ledgers' parts already asked for at this graph (a sweep's other points ask again).
  mutable LedgerMemo ledgers;
};

// FLOP counts of `batch` samples from those of one.
FlopCounts ScaleFlops(const FlopCounts& one, uint64_t batch);
// The forward FLOPs by component of `batch` samples from those of one.
std::map<Component, uint64_t> ScaleByComponent(const FlopCounts& one, uint64_t batch);
// Recomputed forward FLOPs of `settings.recompute` for settings.batch samples.
uint64_t RecomputeFlopsOf(const GraphSummary& summary, const Settings& settings);

// The FLOPs of one training step at settings.batch, and the units (tokens, or samples for a
// sequential model) per-unit figures divide by: what the report's flops.* keys and the sweep read.
struct FlopTotals {
  FlopCounts counts;  // forward, backward, non-matmul at settings.batch; by component: ScaleByComponent
  uint64_t recompute = 0;
  uint64_t step = 0;  // forward + backward + recompute
  uint64_t units = 0;
};
FlopTotals FlopTotalsOf(const GraphSummary& summary, const Settings& settings);

class Evaluation {
 public:
  // A layout the reader guessed is checked against the model's checkpoint first (ConfirmGuessedLayout).
  explicit Evaluation(ModelSpec spec);

  const ModelSpec& spec() const { return spec_; }

  // The summary for `settings`; checks the parallelism against the model first.
  std::shared_ptr<const GraphSummary> Summary(const Settings& settings);
  // The graph at settings.batch: for the roofline, --layers and measure's GEMM list.
  std::shared_ptr<const LayerGraph> Graph(const GraphSettings& settings);

  // Keeps up to `capacity` summaries, one not used lately evicted when full: a sweep that cycles
  // through that many graphs then builds each once. By default the first kDefaultSummaries built are
  // kept and later ones answered uncached, so that a caller cycling through more graphs than the
  // cache holds still hits on those it has (evicting would miss on every one).
  void CacheSummaries(size_t capacity) { summaries_.Evicting(capacity); }
  static constexpr size_t kDefaultSummaries = 1024;

 private:
  ModelSpec spec_;
  // Bounded, so that memory follows the graphs a caller cycles through, not the number of points.
  SummaryCache summaries_{kDefaultSummaries};
  std::map<GraphSettings, std::shared_ptr<const LayerGraph>> graphs_;
  GraphSettings last_key_;
  std::shared_ptr<const GraphSummary> last_summary_;

  std::shared_ptr<const GraphSummary> Remember(GraphSettings key, std::shared_ptr<const GraphSummary> summary);
  std::shared_ptr<const GraphSummary> SummaryOf(const Settings& settings);
};

}  // namespace tally
