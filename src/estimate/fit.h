// `fit`: the largest batch or sequence, or the fewest devices, whose memory per device stays
// within a limit. Searches over the exact model: memory grows with batch and sequence and shrinks
// with data-parallel devices, so an exponential then binary search finds the boundary.
#pragma once

#include <cstdint>
#include <string>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/evaluation.h"

namespace tally {

enum class Solve { kBatch, kSeq, kGpus };

struct FitResult {
  bool fits = false;   // false: even the smallest value does not fit
  uint64_t value = 0;  // the answer (or the smallest value tried, when nothing fits)
  Settings settings;   // the settings at the answer
  uint64_t bytes = 0;  // memory per device at the answer (train or infer per settings.mode)
  std::string note;    // when the answer is the search's cap, not the memory limit: says so
};

// Memory per device for the settings: the training total, or the inference total for Mode::kInfer.
uint64_t DeviceMemory(Evaluation& evaluation, const Settings& settings);

// Throws InputError for a setting that is wrong whatever the searched value; a value whose memory is
// too big to count (CountOverflow) just does not fit.
FitResult Fit(Evaluation& evaluation, const Settings& base, Solve solve, uint64_t limit_bytes);

}  // namespace tally
