#include "measure/measure_report.h"

namespace tally {
namespace {

// The results table's columns: every figure of a result; the human table shows the usual few.
std::vector<Column> Columns(bool cpu, bool model) {
  const Unit n = Unit::kNumber, s = Unit::kSecond, f = Unit::kFlopPerSecond, ratio = Unit::kRatio;
  std::vector<Column> c = {{.key = "m", .unit = n},
                           {.key = "n", .unit = n},
                           {.key = "k", .unit = n},
                           {.key = "layout"},
                           {.key = "dtype"},
                           {.key = "device", .shown = false},
                           {.key = "threads", .unit = n},
                           {.key = "seconds", .label = "median", .unit = s},
                           {.key = "flop_per_s", .label = "FLOP/s", .unit = f},
                           {.key = "mfu", .unit = ratio},
                           {.key = "seconds_min", .label = "min", .unit = s, .shown = !model},
                           {.key = "seconds_max", .label = "max", .unit = s, .shown = !model},
                           {.key = "cv", .unit = ratio},
                           {.key = "reps", .unit = n, .shown = false},
                           {.key = "iterations_per_rep", .unit = n, .shown = false},
                           {.key = "peak_flop_per_s", .unit = f, .shown = false},
                           {.key = "probed_peak_flop_per_s", .unit = f, .shown = false},
                           // A GPU has no FMA probe: its column would be all zeros.
                           {.key = "mfu_probed", .label = "mfu (probe)", .unit = ratio, .shown = cpu && !model},
                           {.key = "arithmetic_intensity", .unit = ratio, .shown = false}};
  if (model) {
    c.insert(c.end(), {{.key = "count", .unit = n},
                       {.key = "passes"},
                       {.key = "path"},
                       {.key = "halved", .unit = Unit::kBool, .shown = false},
                       {.key = "step_seconds", .label = "step", .unit = s}});
  }
  return c;
}

std::vector<Cell> Row(const GemmResult& r) {
  const BenchResult& b = r.bench;
  // Arithmetic intensity: FLOPs per byte of A, B and C moved once (Williams et al. 2009).
  const double intensity = static_cast<double>(r.shape.Flops()) / GemmMinBytes(r.shape, r.dtype);
  std::vector<Cell> row = {r.shape.m,
                           r.shape.n,
                           r.shape.k,
                           r.shape.Layout(),
                           std::string(GemmDTypeName(r.dtype)),
                           r.device,
                           static_cast<uint64_t>(r.threads),
                           b.seconds.median,
                           r.flop_per_s,
                           r.Mfu(),
                           b.seconds.min,
                           b.seconds.max,
                           b.seconds.cv,
                           b.reps,
                           b.iterations_per_rep,
                           r.peak_flop_per_s,
                           r.probed_flop_per_s,
                           r.MfuProbed(),
                           intensity};
  if (r.step != nullptr) {
    row.insert(row.end(), {r.step->count, r.step->passes, r.step->path, r.step->halved, r.StepSeconds()});
  }
  return row;
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
  const GemmResult* best = BestResult(results);
  if (best == nullptr) return;
  report.Set("measure.peak_flop_per_s", std::string("peak, ") + GemmDTypeName(best->dtype) + " (whole device)",
             device_peak, Unit::kFlopPerSecond);
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
  report.Set("measure.best.flop_per_s", "achieved FLOP/s (median)", best->flop_per_s, Unit::kFlopPerSecond);
  if (cpu) report.Set("measure.best.mfu_probed", "MFU against the FMA probe", best->MfuProbed(), Unit::kRatio);
  Table& table = report.AddTable("measure.results", "Results", Columns(cpu, best->step != nullptr));
  for (const GemmResult& r : results) table.rows.push_back(Row(r));
}

}  // namespace tally
