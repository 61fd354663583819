// The time sections of a report: training time and compute budget, or inference latency.
#pragma once

#include <optional>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/timing.h"
#include "report/report.h"

namespace tally {

struct TimeRequest {
  TrainQuery train;
  std::optional<double> mbu;       // memory-bandwidth utilization for the roofline (default 0.8)
  std::optional<uint64_t> prompt;  // default 512; an encoder–decoder's decoder: 1 (its start token)
  uint64_t generate = 128;
  bool layers = false;  // inference: the roofline of each node (--layers)
};

// Adds time.* to r for s.mode: training (train or both) or inference (infer), as `given` asks. Needs a
// hardware.
void AddTime(Evaluation& ev, const Settings& s, const TimeRequest& given, Report& r);

}  // namespace tally
