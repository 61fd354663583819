#include "measure/measure_report.h"

#include <algorithm>

#include "util/units.h"

namespace tally {
namespace {

// The results table's columns: every figure of a result; the human table shows the usual few.
std::vector<Column> Columns(bool model, bool padded, bool skipped) {
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
                           // One MFU is shown, against the computed peak; the fraction of the FMA
                           // probe checks that peak (JSON and CSV carry it). A GPU has no probe.
                           {.key = "mfu_probed", .label = "mfu (probe)", .unit = ratio, .shown = false},
                           {.key = "arithmetic_intensity", .unit = ratio, .shown = false},
                           // cuBLASLt's fp8 takes multiples of 16: the shape run when it differs.
                           {.key = "padded_to", .label = "run as", .shown = padded},
                           {.key = "run_flop_per_s", .label = "run FLOP/s", .unit = f, .shown = padded},
                           {.key = "skip_reason", .shown = skipped}};
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
  const bool timed = !r.Skipped();
  auto figure = [timed](double v) { return timed ? Cell(v) : Cell(); };
  auto count = [timed](uint64_t v) { return timed ? Cell(v) : Cell(); };
  std::vector<Cell> row = {r.shape.m,
                           r.shape.n,
                           r.shape.k,
                           r.shape.Layout(),
                           std::string(GemmDTypeName(r.dtype)),
                           r.device,
                           static_cast<uint64_t>(r.threads),
                           figure(b.seconds.median),
                           figure(r.flop_per_s),
                           r.MfuShown() ? Cell(r.Mfu()) : Cell(),
                           figure(b.seconds.min),
                           figure(b.seconds.max),
                           figure(b.seconds.cv),
                           count(b.reps),
                           count(b.iterations_per_rep),
                           r.peak_flop_per_s,
                           r.probed_flop_per_s,
                           timed && r.probed_flop_per_s > 0 && r.MfuProbed() <= 1 ? Cell(r.MfuProbed()) : Cell(),
                           intensity,
                           r.Padded() ? Cell(r.run_shape.Text()) : Cell(),
                           r.Padded() ? Cell(r.RunFlopPerS()) : Cell(),
                           timed ? Cell() : Cell(r.skip_reason)};
  if (r.step != nullptr) {
    row.insert(row.end(), {r.step->count, r.step->passes, r.step->path, r.step->halved, figure(r.StepSeconds())});
  }
  return row;
}

// What was padded and what was refused, once each.
void NoteShapes(Report& report, const std::vector<GemmResult>& results) {
  const auto padded = std::count_if(results.begin(), results.end(), [](const GemmResult& r) { return r.Padded(); });
  const auto first_padded =
      std::find_if(results.begin(), results.end(), [](const GemmResult& r) { return r.Padded(); });
  if (padded > 0) {
    report.notes.push_back(std::to_string(padded) + (padded == 1 ? " shape was" : " shapes were") +
                           " padded with zeros to multiples of 16, as cuBLASLt's fp8 kernels require (e.g. " +
                           first_padded->shape.Text() + " run as " + first_padded->run_shape.Text() +
                           "); FLOP/s and MFU count the asked shape's FLOPs, run_flop_per_s the padded "
                           "shape's");
  }
  const auto skipped = std::count_if(results.begin(), results.end(), [](const GemmResult& r) { return r.Skipped(); });
  const auto first = std::find_if(results.begin(), results.end(), [](const GemmResult& r) { return r.Skipped(); });
  if (skipped > 0) {
    report.notes.push_back(std::to_string(skipped) + (skipped == 1 ? " GEMM was" : " GEMMs were") +
                           " not timed (skip_reason in the results), e.g. " + first->shape.Text() + " " +
                           GemmDTypeName(first->dtype) + ": " + first->skip_reason);
  }
}

}  // namespace

double GemmResult::RunFlopPerS() const {
  const GemmShape& run = run_shape.m != 0 ? run_shape : shape;
  return bench.seconds.median > 0 ? static_cast<double>(run.Flops()) / bench.seconds.median : 0;
}

double GemmResult::StepSeconds() const {
  if (step == nullptr) return bench.seconds.median;
  const double seconds = static_cast<double>(step->count) * bench.seconds.median;
  // A causal kernel skips the masked half; a dense GEMM of the full shape was timed.
  return step->halved ? seconds / 2 : seconds;
}

const GemmResult* BestResult(const std::vector<GemmResult>& results) {
  const GemmResult* best = nullptr;
  for (const GemmResult& r : results) {
    if (r.Skipped()) continue;
    if (best == nullptr || r.Mfu() > best->Mfu() || (r.Mfu() == best->Mfu() && r.flop_per_s > best->flop_per_s)) {
      best = &r;
    }
  }
  return best;
}

std::string OverPeakNote(const std::string& what, double flop_per_s, double peak, const std::string& basis) {
  std::string why;
  if (basis == "--peak") {
    why = "the --peak given is too low";
  } else if (basis.find("FLOP/cycle") != std::string::npos) {
    why = "the clock it assumes is below the one the cores ran at, or the FLOP per cycle undercount this core";
  } else {
    why = "the datasheet figure does not describe this device (another SKU or clock); give --peak";
  }
  return what + " ran at " + FormatRate(flop_per_s) + ", above the peak of " + FormatRate(peak) + " (" + basis +
         "): that peak is wrong (" + why + "), so its MFU is left out rather than shown above 1";
}

namespace {

// One note per dtype whose results beat their peak, naming the fastest of them.
void NoteOverPeak(Report& report, const std::vector<GemmResult>& results) {
  std::vector<const GemmResult*> worst;
  for (const GemmResult& r : results) {
    if (!r.AbovePeak()) continue;
    auto same = std::find_if(worst.begin(), worst.end(), [&](const GemmResult* w) { return w->dtype == r.dtype; });
    if (same == worst.end()) {
      worst.push_back(&r);
    } else if (r.Mfu() > (*same)->Mfu()) {
      *same = &r;
    }
  }
  for (const GemmResult* r : worst) {
    const std::string what = std::string(GemmDTypeName(r->dtype)) + " " + r->shape.Text() + " on " +
                             std::to_string(r->threads) + (r->threads == 1 ? " thread" : " threads");
    report.notes.push_back(OverPeakNote(what, r->flop_per_s, r->peak_flop_per_s, r->peak_basis));
  }
}

}  // namespace

void AddResults(Report& report, const std::vector<GemmResult>& results, double device_peak,
                const std::string& device_basis) {
  if (results.empty()) return;
  NoteShapes(report, results);
  const bool padded = std::any_of(results.begin(), results.end(), [](const GemmResult& r) { return r.Padded(); });
  const bool skipped = std::any_of(results.begin(), results.end(), [](const GemmResult& r) { return r.Skipped(); });
  auto table = [&] {
    Table& t = report.AddTable("measure.results", "Results", Columns(results.front().step != nullptr, padded, skipped));
    for (const GemmResult& r : results) t.rows.push_back(Row(r));
  };
  const GemmResult* best = BestResult(results);
  if (best == nullptr) return table();  // every GEMM refused: the table says why
  report.Set("measure.peak_flop_per_s", std::string("peak, ") + GemmDTypeName(best->dtype) + " (whole device)",
             device_peak, Unit::kFlopPerSecond, device_basis);
  const bool cpu = best->device == "cpu";
  NoteOverPeak(report, results);
  // The one MFU shown names its peak and that peak's basis: what it is divided by, and where that
  // came from (the cores its threads occupy, on a CPU).
  if (!best->peak_basis.empty()) {
    report.Set("measure.peak_basis", "peak basis", best->peak_basis, Unit::kText,
               "the peak MFU divides by: FLOP/cycle x cores x clock on a CPU, the datasheet on a GPU, or --peak");
  }
  if (best->MfuShown()) {
    const std::string of = "best MFU, of " + FormatRate(best->peak_flop_per_s) + " " + GemmDTypeName(best->dtype) +
                           " peak: " + best->peak_basis;
    report.Set("measure.best_mfu", of, best->Mfu(), Unit::kRatio,
               cpu ? "achieved / the computed peak of the cores its threads occupy"
                   : "achieved / the dense peak of the hardware catalog, or --peak");
  }
  report.Group("measure.best", "Best result");
  report.Set("measure.best.shape", "shape (m x n x k)", best->shape.Text(), Unit::kText);
  report.Set("measure.best.dtype", "dtype", std::string(GemmDTypeName(best->dtype)), Unit::kText);
  report.Set("measure.best.threads", "threads", static_cast<uint64_t>(best->threads), Unit::kNumber);
  report.Set("measure.best.flop_per_s", "achieved FLOP/s (median)", best->flop_per_s, Unit::kFlopPerSecond);
  if (cpu && best->MfuProbed() <= 1) {
    report.Set("measure.best.mfu_probed", "fraction of the FMA probe (checks the peak)", best->MfuProbed(),
               Unit::kRatio);
  }
  table();
}

}  // namespace tally
