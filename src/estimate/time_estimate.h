// Time, by mode: training time and its budget (estimate/training_estimate.h) or inference latency
// (estimate/inference_estimate.h), on the settings' device, as `tally time` and sweep's time.* ask.
#pragma once

#include <optional>

#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/inference_estimate.h"
#include "estimate/time_request.h"
#include "estimate/training_estimate.h"
#include "estimate/validation_band.h"

namespace tally {

// Exactly one of the two for a time estimate; neither for a point without a device (sweep's).
struct TimeEstimate {
  std::optional<TrainingEstimate> training;    // --mode train or both
  std::optional<InferenceEstimate> inference;  // --mode infer
  // How far validated runs of this regime fell from tally's time: only where tally's own model
  // gives the time (no --mfu, --achieved or --mbu) and runs validate the regime.
  std::optional<ValidationBand> validation;

  const std::vector<std::string>& notes() const;
};

// settings.mode's estimate at `settings` (resolved) as `request` asks; a calibrated hardware file's
// measured rate is the training throughput unless --mfu or --achieved is given. Throws InputError
// without a device (training may do with request.train.achieved alone). Reads `settings` by
// reference: it must outlive the result.
TimeEstimate EstimateTime(Evaluation& evaluation, const Settings& settings, const TimeRequest& request);

}  // namespace tally
