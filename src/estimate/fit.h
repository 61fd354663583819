// `fit`: the largest batch or sequence, or the fewest devices, whose memory per device stays
// within a limit. Searches over the exact model: memory grows with batch and sequence and shrinks
// with data-parallel devices, so an exponential then binary search finds the boundary.
#pragma once

#include <cstdint>
#include <string>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/serving.h"
#include "util/names.h"

namespace tally {

// What fit searches: the largest micro-batch or sequence, the fewest devices, or the fewest blocks of
// each pipeline stage to recompute whole (--recompute full --recompute-layers N).
enum class Solve { kBatch, kSeq, kGpus, kRecompute };

template <>
struct EnumNames<Solve> {
  static constexpr NameEntry<Solve> kTable[] = {
      {Solve::kBatch, "batch"}, {Solve::kSeq, "seq"}, {Solve::kGpus, "gpus"}, {Solve::kRecompute, "recompute"}};
};

struct FitResult {
  bool fits = false;   // false: even the smallest value does not fit
  uint64_t value = 0;  // the answer (or the smallest value tried, when nothing fits)
  Settings settings;   // the settings at the answer
  uint64_t bytes = 0;  // memory per device at the answer (train or infer per settings.mode)
  std::string note;    // when the answer is the search's cap, not the memory limit: says so
};

// Memory per device for the settings: the training step's peak, or the inference total for
// Mode::kInfer, with the device's overheads (estimate/step_timeline.h).
uint64_t DeviceMemory(Evaluation& evaluation, const Settings& settings);

// Throws InputError for a setting that is wrong whatever the searched value; a value whose memory is
// too big to count (CountOverflow) just does not fit.
FitResult Fit(Evaluation& evaluation, const Settings& base, Solve solve, uint64_t limit_bytes);

// `tally fit`'s answer: the search at `limit` per device and, for a decoder's inference, what a
// server does with the memory left at the concurrency found (estimate/serving.h).
struct FitEstimate {
  FitResult result;
  Solve solve = Solve::kBatch;
  uint64_t limit = 0;  // memory per device the ledger must stay within
  uint64_t seq = 0;    // the sequence length at the answer
  std::optional<ServingEstimate> serving;
};

// `base`: resolved settings (--mode both fits training). `memory`: --memory per device, else the
// named device's usable memory (base.device must be set). A decoder's inference is fitted as a
// server allocates it: vLLM's defaults where unset, --gpu-memory-utilization of the memory claimed.
FitEstimate EstimateFit(Evaluation& evaluation, Settings base, Solve solve, std::optional<uint64_t> memory);

}  // namespace tally
