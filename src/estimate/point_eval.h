// Report keys for many settings of one model, fast: the values of the report's numeric keys without
// its labels and formulas. Every value comes from the functions the report itself calls
// (FlopTotalsOf, TrainingMemory, InferenceMemory, KvBytesPerToken) on the evaluation's cached
// summary, so nothing here is cached by hand and no setting can be missed; this file only names
// the keys (a unit test compares each with the full report over a grid of settings). `sweep` uses
// it; keys it does not know fall back to the full report (Evaluate returns nullopt for them).
#pragma once

#include <optional>
#include <string>
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
  // `keys` are named once here; each point then costs no string comparison.
  PointEvaluator(const ModelSpec& spec, const std::vector<std::string>& keys);

  // The keys' values at `settings`, each nullopt when the key is not a fast key (or the point
  // lacks it: an inference key in a training run).
  std::vector<std::optional<Value>> Evaluate(const Settings& settings);

  static bool IsFastKey(const std::string& key);

 private:
  Evaluation evaluation_;
  std::vector<int> keys_;  // an index into the fast keys' table, or -1
};

}  // namespace tally
