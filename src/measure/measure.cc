#include "measure/measure.h"

#include "measure/bandwidth_probe.h"
#include "measure/calibration.h"
#include "measure/model_run.h"
#include "measure/session.h"
#include "util/units.h"

namespace tally {
namespace {

std::vector<GemmShape> SweepShapes(const MeasureRequest& r) {
  if (!r.shapes.empty()) return r.shapes;
  std::vector<GemmShape> shapes;
  for (uint64_t n : {uint64_t{256}, uint64_t{512}, uint64_t{1024}, uint64_t{2048}}) shapes.push_back({n, n, n});
  return shapes;
}

void RunSweep(Session& s, std::vector<GemmResult>& results) {
  const std::vector<GemmShape> shapes = SweepShapes(s.request);
  CheckBounds(s, shapes, "--sizes/--shapes");
  s.total = s.threads.size() * s.dtypes.size() * shapes.size();
  for (int t : s.threads) {
    for (GemmDType d : s.dtypes) {
      for (const GemmShape& shape : shapes) results.push_back(TimeOne(s, shape, d, t));
    }
  }
  FinishTiming(s, results);
}

double DevicePeak(const Session& s, GemmDType d) { return s.peaks->Computed(d, s.peaks->Cores()); }

std::string DeviceName(const Session& s) {
  return s.peaks->IsCpu() ? s.peaks->cpu().model_name : s.backend->Facts().name;
}

RooflineChart Chart(Session& s, const std::vector<GemmResult>& results, double bandwidth) {
  RooflineChart c;
  c.title = "Roofline: " + DeviceName(s) + " (" + s.request.device + ")";
  c.bandwidth_bytes_per_s = bandwidth;
  for (GemmDType d : s.dtypes) {
    const std::string name = GemmDTypeName(d);
    c.roofs.push_back({name + (s.peaks->IsCpu() ? " computed peak" : " peak"), DevicePeak(s, d)});
    if (s.peaks->IsCpu()) c.roofs.push_back({name + " probed peak", s.peaks->Probed(d, s.peaks->Cores())});
  }
  for (const GemmResult& r : results) {
    if (r.Skipped()) continue;
    const double intensity = static_cast<double>(r.shape.Flops()) / GemmMinBytes(r.shape, r.dtype);
    const std::string series = std::string(GemmDTypeName(r.dtype)) + ", " + std::to_string(r.threads) +
                               (r.threads == 1 ? " thread" : " threads");
    c.points.push_back(
        {intensity, r.flop_per_s, series, r.shape.Text() + " " + series + ": " + FormatFlops(r.flop_per_s) + "/s"});
  }
  return c;
}

Calibration Calibrate(Session& s, const std::vector<GemmResult>& results, double bandwidth) {
  Calibration c;
  const bool cpu = s.peaks->IsCpu();
  c.kind = cpu ? "cpu" : "gpu";
  c.name = cpu ? "cpu" : Slug(DeviceName(s));
  c.description = cpu ? DeviceName(s) + ", " + std::to_string(s.peaks->Cores()) + " cores at " +
                            FormatFixed(s.peaks->ClockHz() / 1e9) + " GHz (measured)"
                      : DeviceName(s);
  c.memory_bytes = cpu ? SystemMemoryBytes() : s.backend->Facts().memory_bytes;
  c.memory_bandwidth = bandwidth;
  c.clock_hz = s.peaks->ClockHz();
  c.threads = s.threads.empty() ? 1 : s.threads.back();
  // Every dtype the device computes in, measured or not: `tally time` looks up the precision's.
  for (GemmDType d :
       {GemmDType::kFp64, GemmDType::kFp32, GemmDType::kTf32, GemmDType::kFp16, GemmDType::kBf16, GemmDType::kFp8}) {
    // The catalog lists a dtype only where the hardware computes in it, not by conversion to fp32.
    const CpuInfo& isa = s.peaks->cpu();
    const bool converted = cpu && ((d == GemmDType::kFp16 && !isa.avx512_fp16 && !isa.amx_fp16) ||
                                   (d == GemmDType::kBf16 && !isa.avx512_bf16 && !isa.amx_bf16));
    if (DevicePeak(s, d) > 0 && !converted) c.peak_flops.push_back({d, DevicePeak(s, d)});
  }
  for (GemmDType d : s.dtypes) {
    if (cpu) c.probed_flops.push_back({d, s.peaks->Probed(d, s.peaks->Cores())});
    const GemmResult* best = nullptr;
    for (const GemmResult& r : results) {
      if (r.dtype == d && (best == nullptr || r.flop_per_s > best->flop_per_s)) best = &r;
    }
    if (best == nullptr || best->Skipped()) continue;
    const ReportNode* step = s.report.Find("measure.model.achieved_flop_per_s");
    const double achieved = step != nullptr ? std::get<double>(step->value) : best->flop_per_s;
    c.achieved_flops.push_back({d, achieved});
    // Above 1 the peak is wrong (a note says so): no MFU to pass on.
    if (DevicePeak(s, d) > 0 && achieved <= DevicePeak(s, d) && !s.peaks->Check(d).refuted) {
      c.mfu.push_back({d, achieved / DevicePeak(s, d)});
    }
    c.threads = best->threads;
  }
  c.source = s.request.model != nullptr ? "tally measure --model: " + s.request.model_label + ", one training step"
                                        : "tally measure: best GEMM of the sweep per dtype";
  return c;
}

}  // namespace

MeasureOutcome RunMeasure(const MeasureRequest& request) {
  Session s(request);
  OpenSession(s);
  std::vector<StepGemm> steps;  // results point into it
  std::vector<GemmResult> results;
  if (!request.peak_only) {
    s.report.Set("measure.budget_s", "time budget per case", request.bench.budget_s, Unit::kSecond);
    if (request.model != nullptr) {
      steps = DistinctGemms(StepGemms(*request.model));
      RunModel(s, steps, results);
    } else {
      RunSweep(s, results);
    }
  }
  s.peaks->AddTo(s.report, s.dtypes);
  double bandwidth = 0;
  if (request.bandwidth || request.peak_only) {
    bandwidth =
        s.peaks->IsCpu() ? ProbeReadBandwidth(s.peaks->Cores()) : s.backend->Facts().memory_bandwidth_bytes_per_s;
    s.report.Set("measure.bandwidth_bytes_per_s",
                 s.peaks->IsCpu() ? "memory read bandwidth (probed, all cores)" : "memory bandwidth (from clocks)",
                 bandwidth, Unit::kBytePerSecond);
  }
  if (BestResult(results) == nullptr) {
    AddResults(s.report, results, 0);  // every GEMM refused: the table says why
    s.report.Set("measure.peak_flop_per_s", std::string("peak, ") + GemmDTypeName(s.dtypes.front()) + " (whole device)",
                 DevicePeak(s, s.dtypes.front()), Unit::kFlopPerSecond);
  } else {
    const GemmDType best = BestResult(results)->dtype;
    AddResults(s.report, results, DevicePeak(s, best), s.peaks->PeakBasis(best));
  }
  MeasureOutcome out;
  out.chart = Chart(s, results, bandwidth);
  out.calibration = CalibrationYaml(Calibrate(s, results, bandwidth));
  out.report = std::move(s.report);
  return out;
}

}  // namespace tally
