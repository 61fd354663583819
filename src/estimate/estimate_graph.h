// Walks a LayerGraph through the estimators into a Report with the keys of DESIGN.md.
#pragma once

#include "config/model_spec.h"
#include "estimate/evaluation.h"
#include "graph/layer_graph.h"
#include "report/report.h"

namespace tally {

struct ReportRequest {
  bool settings = true;  // batch, seq: not for parameter counts, which depend on neither
  bool params = true;
  bool flops = true;
  bool memory = false;  // the ledgers, with the precision and parallelism settings
  bool layers = false;  // the per-node breakdown
};

// A per-token (or per-sample) figure: an exact integer when it divides evenly (always, for
// transformers), else a double.
Value PerUnit(uint64_t total, uint64_t units);

// The report for `settings` (one replica's batch), from the evaluation's cached graph summary.
Report EstimateReport(Evaluation& evaluation, const Settings& settings, const ReportRequest& request);

}  // namespace tally
