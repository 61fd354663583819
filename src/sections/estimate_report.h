// The model's report: the sections a command asks for, presented from the estimators' results.
#pragma once

#include "config/model_spec.h"
#include "estimate/evaluation.h"
#include "report/report.h"

namespace tally {

struct ReportRequest {
  bool settings = true;  // batch, seq: not for parameter counts, which depend on neither
  bool params = true;
  bool flops = true;
  bool memory = false;    // the ledgers, with the precision and parallelism settings
  bool layers = false;    // the per-node breakdown
  bool timeline = false;  // the training step's events (memory --timeline): a table memory.train.timeline
};

// The report for `settings` (one replica's batch), from the evaluation's cached graph summary.
Report EstimateReport(Evaluation& evaluation, const Settings& settings, const ReportRequest& request);

}  // namespace tally
