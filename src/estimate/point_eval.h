// Report keys for many settings of one model, fast: the graph summary, parameter counts and
// per-sample FLOPs are computed once per sequence length (and whatever else changes the graph),
// and each point is arithmetic on them. `sweep` and tests use it; keys it does not know fall back
// to the full report (Evaluate returns nullopt for them).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config/model_spec.h"
#include "estimate/evaluation.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "report/report.h"

namespace tally {

class PointEvaluator {
 public:
  explicit PointEvaluator(const ModelSpec& spec) : evaluation_(spec) {}

  // Values of `keys` at `settings`, each nullopt when the key is not a fast key.
  std::vector<std::optional<Value>> Evaluate(const std::vector<std::string>& keys, const Settings& settings);

  static bool IsFastKey(const std::string& key);

 private:
  // Everything that depends on the graph but not on batch, dtypes, optimizer or parallelism.
  struct GraphCache {
    std::shared_ptr<const GraphSummary> summary;
    // The training ledger's parts, each keyed by the settings it depends on.
    std::map<std::vector<uint64_t>, ModelStates> states;
    std::map<std::vector<uint64_t>, ActivationMemory> activations;
  };
  TrainMemory Training(GraphCache& cache, const Settings& settings);
  GraphCache& CacheFor(const Settings& settings);

  Evaluation evaluation_;
  std::map<const GraphSummary*, GraphCache> caches_;
  GraphCache scratch_;  // the point's parts when caches_ is full
};

}  // namespace tally
