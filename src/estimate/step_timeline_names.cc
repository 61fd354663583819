// The names of step_timeline.h's enums and the sum of live bytes; the timeline itself is built in
// step_timeline.cc.
#include "estimate/step_timeline.h"
#include "util/checked_math.h"

namespace tally {

// Switches without a default, so that -Wswitch names a phase or category added without a name.
const char* StepPhaseName(StepPhase p) {
  switch (p) {
    case StepPhase::kForward:
      return "forward";
    case StepPhase::kLoss:
      return "loss";
    case StepPhase::kBackward:
      return "backward";
    case StepPhase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

const char* LiveCategoryName(LiveCategory c) {
  switch (c) {
    case LiveCategory::kWeights:
      return "weights";
    case LiveCategory::kGradients:
      return "gradients";
    case LiveCategory::kOptimizer:
      return "optimizer_states";
    case LiveCategory::kActivations:
      return "activations";
    case LiveCategory::kTemporaries:
      return "temporaries";
  }
  return "?";
}

uint64_t LiveBytes::Total() const {
  uint64_t total = 0;
  for (uint64_t b : bytes) total = CheckedAdd(total, b, "live bytes");
  return total;
}

}  // namespace tally
