#include "measure/model_run.h"

#include <stdexcept>

#include "estimate/flops.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

// The rate the prediction assumes: a large square GEMM of the same dtype and threads, measured
// now. It stands for "what this BLAS reaches on big matmuls", what a practitioner plugs in.
constexpr uint64_t kReferenceSize = 2048;

// The step's timed part. A shape the library refused (skip_reason) has no time: the step's rates
// cover the timed ones.
struct StepTotals {
  double measured_s = 0, timed_flops = 0;
  uint64_t skipped = 0;
};

StepTotals Totals(const std::vector<GemmResult>& results) {
  StepTotals t;
  for (const GemmResult& g : results) {
    if (g.Skipped()) {
      ++t.skipped;
      continue;
    }
    t.measured_s += g.StepSeconds();
    t.timed_flops += static_cast<double>(GemmFlops(*g.step));
  }
  return t;
}

void AddModelReport(Session& s, const std::vector<StepGemm>& steps, const std::vector<GemmResult>& results,
                    const GemmResult& reference) {
  Report& r = s.report;
  const GemmResult& first = results.front();
  const uint64_t flops = StepFlops(steps);
  const auto [measured_s, timed_flops, skipped] = Totals(results);
  const double achieved = measured_s > 0 ? timed_flops / measured_s : 0;
  const double peak = first.peak_flop_per_s;
  r.Group("measure.model", "Model: one training step's GEMMs");
  r.Set("measure.model.name", "model", s.request.model_label, Unit::kText);
  r.Set("measure.model.dtype", "dtype", std::string(GemmDTypeName(first.dtype)), Unit::kText);
  r.Set("measure.model.threads", "threads", static_cast<uint64_t>(first.threads), Unit::kNumber);
  r.Set("measure.model.distinct_shapes", "distinct GEMM shapes timed", static_cast<uint64_t>(steps.size()),
        Unit::kNumber);
  r.Set("measure.model.flops", "matmul FLOPs (forward + backward)", flops, Unit::kFlop,
        "= flops.forward + flops.backward of the FLOPs estimator (recomputation excluded)");
  if (skipped > 0) {
    r.Set("measure.model.skipped_shapes", "shapes refused (not timed)", skipped, Unit::kNumber);
    r.notes.push_back("the step's time, rate and prediction leave out the " + std::to_string(skipped) +
                      " refused shape(s): they cover " + FormatFlops(timed_flops) + " of " +
                      FormatFlops(static_cast<double>(flops)));
  }
  r.Set("measure.model.measured_s", "measured step matmul time", measured_s, Unit::kSecond,
        "sum over shapes of count x median seconds (causal attention halved)");
  r.Set("measure.model.achieved_flop_per_s", "achieved FLOP/s", achieved, Unit::kFlopPerSecond);
  if (peak > 0 && achieved > peak) {
    r.notes.push_back(OverPeakNote("the step's GEMMs", achieved, peak, first.peak_basis));
  } else if (peak > 0 && !first.peak_refuted) {
    r.Set("measure.model.mfu",
          "MFU, of " + FormatRate(peak) + " " + GemmDTypeName(first.dtype) + " peak: " + first.peak_basis,
          achieved / peak, Unit::kRatio, "the step's achieved FLOP/s / the same peak as plain measure's MFU");
  }
  if (reference.Skipped() || reference.flop_per_s <= 0 || timed_flops <= 0) {
    r.notes.push_back("no prediction: the reference GEMM " + reference.shape.Text() + " was not timed");
    return;
  }
  r.Set("measure.model.reference_flop_per_s",
        "reference rate: " + reference.shape.Text() + " " + GemmDTypeName(reference.dtype) + " (median)",
        reference.flop_per_s, Unit::kFlopPerSecond);
  // The same GEMM plain `measure --sizes 2048` times, against the same peak: the two MFUs compare.
  if (reference.MfuShown()) {
    r.Set("measure.model.reference_mfu", "reference MFU (same peak)", reference.Mfu(), Unit::kRatio,
          "the reference GEMM's rate / the peak of measure.peak_basis, as plain measure reports it");
  }
  const double predicted = timed_flops / reference.flop_per_s;
  r.Set("measure.model.predicted_s", "predicted: FLOPs / reference rate", predicted, Unit::kSecond,
        "the analytic FLOPs at the rate of a large square GEMM measured now");
  r.Set("measure.model.ratio", "measured / predicted", measured_s / predicted, Unit::kTimes);
  if (peak > 0) {
    const double at_peak = timed_flops / peak;
    r.Set("measure.model.predicted_at_peak_s", "predicted at the computed peak (100% MFU)", at_peak, Unit::kSecond);
    r.Set("measure.model.ratio_to_peak", "measured / predicted at peak", measured_s / at_peak, Unit::kTimes);
  }
}

}  // namespace

void RunModel(Session& s, const std::vector<StepGemm>& steps, std::vector<GemmResult>& results) {
  if (s.dtypes.size() != 1 || s.threads.size() != 1) {
    throw InputError("--model: times one dtype at one thread count; give one value to --dtype and --threads");
  }
  if (steps.empty()) throw InputError("--model: '" + s.request.model_label + "' has no GEMMs to time");
  const FlopCounts counted = CountFlops(*s.request.model);
  if (StepFlops(steps) != counted.forward + counted.backward) {
    throw std::logic_error("measure: the model's GEMMs do not add up to the FLOPs estimator's forward + backward");
  }
  const GemmDType d = s.dtypes.front();
  const int threads = s.threads.front();
  std::vector<GemmShape> shapes = {{kReferenceSize, kReferenceSize, kReferenceSize}};
  for (const StepGemm& step : steps) shapes.push_back(step.shape);
  CheckBounds(s, shapes, "--model");
  s.total = steps.size() + 1;
  for (const StepGemm& step : steps) {
    results.push_back(TimeOne(s, step.shape, d, threads));
    results.back().step = &step;
  }
  results.push_back(TimeOne(s, {kReferenceSize, kReferenceSize, kReferenceSize}, d, threads));
  FinishTiming(s, results);
  const GemmResult reference = results.back();
  results.pop_back();  // the reference rate is not one of the step's GEMMs
  AddModelReport(s, steps, results, reference);
}

}  // namespace tally
