#include "measure/measure_report.h"

namespace tally {
namespace {

Report::Record Record(const GemmResult& r) {
  const BenchResult& b = r.bench;
  // Arithmetic intensity: FLOPs per byte of A, B and C moved once (Williams et al. 2009).
  const double intensity = static_cast<double>(r.shape.Flops()) / GemmMinBytes(r.shape, r.dtype);
  Report::Record record = {{"m", r.shape.m},
                           {"n", r.shape.n},
                           {"k", r.shape.k},
                           {"layout", r.shape.Layout()},
                           {"dtype", std::string(GemmDTypeName(r.dtype))},
                           {"device", r.device},
                           {"threads", static_cast<uint64_t>(r.threads)},
                           {"seconds", b.seconds.median},
                           {"flop_per_s", r.flop_per_s},
                           {"mfu", r.Mfu()},
                           {"seconds_min", b.seconds.min},
                           {"seconds_max", b.seconds.max},
                           {"cv", b.seconds.cv},
                           {"reps", b.reps},
                           {"iterations_per_rep", b.iterations_per_rep},
                           {"peak_flop_per_s", r.peak_flop_per_s},
                           {"probed_peak_flop_per_s", r.probed_flop_per_s},
                           {"mfu_probed", r.MfuProbed()},
                           {"arithmetic_intensity", intensity}};
  if (r.step != nullptr) {
    record.insert(record.end(), {{"count", r.step->count},
                                 {"passes", r.step->passes},
                                 {"path", r.step->path},
                                 {"halved", r.step->halved},
                                 {"step_seconds", r.StepSeconds()}});
  }
  return record;
}

}  // namespace

double GemmResult::StepSeconds() const {
  if (step == nullptr) return bench.seconds.median;
  const double seconds = static_cast<double>(step->count) * bench.seconds.median;
  // A causal kernel skips the masked half; a dense GEMM of the full shape was timed.
  return step->halved ? seconds / 2 : seconds;
}

const GemmResult* BestResult(const std::vector<GemmResult>& results) {
  const GemmResult* best = nullptr;
  for (const GemmResult& r : results) {
    if (best == nullptr || r.Mfu() > best->Mfu() || (r.Mfu() == best->Mfu() && r.flop_per_s > best->flop_per_s)) {
      best = &r;
    }
  }
  return best;
}

void AddResults(Report& report, const std::vector<GemmResult>& results, double device_peak) {
  report.records_path = "measure.results";
  for (const GemmResult& r : results) report.records.push_back(Record(r));
  const GemmResult* best = BestResult(results);
  if (best == nullptr) return;
  report.Set("measure.peak_flop_per_s", std::string("peak, ") + GemmDTypeName(best->dtype) + " (whole device)",
             device_peak, Unit::kRatio);
  const bool cpu = best->device == "cpu";
  if (cpu) {
    report.Set("measure.best_mfu", "best MFU (vs computed peak)", best->Mfu(), Unit::kRatio,
               "achieved / the computed peak of the cores its threads occupy");
  } else {
    report.Set("measure.best_mfu", "best MFU (vs datasheet peak)", best->Mfu(), Unit::kRatio,
               "achieved / the dense peak of the hardware catalog, or --peak");
  }
  report.Group("measure.best", "Best result");
  report.Set("measure.best.shape", "shape (m x n x k)", best->shape.Text(), Unit::kText);
  report.Set("measure.best.dtype", "dtype", std::string(GemmDTypeName(best->dtype)), Unit::kText);
  report.Set("measure.best.threads", "threads", static_cast<uint64_t>(best->threads), Unit::kNumber);
  report.Set("measure.best.flop_per_s", "achieved FLOP/s (median)", best->flop_per_s, Unit::kRatio);
  if (cpu) report.Set("measure.best.mfu_probed", "MFU against the FMA probe", best->MfuProbed(), Unit::kRatio);
}

}  // namespace tally
