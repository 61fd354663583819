// Measured GEMMs as the Report's `measure.results` list and its summary figures.
#pragma once

#include <string>
#include <vector>

#include "measure/bench_loop.h"
#include "measure/gemm_shape.h"
#include "measure/model_gemms.h"
#include "report/report.h"

namespace tally {

struct GemmResult {
  GemmShape shape;
  GemmDType dtype = GemmDType::kFp32;
  std::string device;
  int threads = 1;
  BenchResult bench;
  double flop_per_s = 0;           // 2·m·n·k / median seconds
  double peak_flop_per_s = 0;      // computed (or --peak, or datasheet) for the cores used; 0 unknown
  double probed_flop_per_s = 0;    // the FMA probe on as many threads; 0 none
  std::string peak_basis;          // what the peak is made of (PeakTable::PeakBasis)
  bool peak_refuted = false;       // the FMA probe beat the computed peak (PeakCheck): no MFU
  GemmShape run_shape;             // what the device multiplied: `shape` padded where the library needs
  std::string skip_reason;         // why the library refused the shape; nothing timed when set
  const StepGemm* step = nullptr;  // model mode: where the shape comes from

  // MFU = achieved FLOP/s / peak FLOP/s (Chowdhery et al. 2022, PaLM, App. B), 0 without a peak.
  // Above 1 the peak is wrong, not the measurement: the report then leaves the MFU out.
  double Mfu() const { return peak_flop_per_s > 0 ? flop_per_s / peak_flop_per_s : 0; }
  double MfuProbed() const { return probed_flop_per_s > 0 ? flop_per_s / probed_flop_per_s : 0; }
  bool AbovePeak() const { return Mfu() > 1; }
  // Whether the MFU is printed: timed, against a known peak that neither it nor the probe exceeds.
  bool MfuShown() const { return !Skipped() && peak_flop_per_s > 0 && !AbovePeak() && !peak_refuted; }
  bool Skipped() const { return !skip_reason.empty(); }
  bool Padded() const { return !Skipped() && run_shape.m != 0 && !(run_shape == shape); }
  // The FLOP/s of the shape the device multiplied (2·m·n·k of run_shape / median): flop_per_s and
  // the MFU count the asked shape's FLOPs, the model's (PaLM's MFU); this counts the padding too.
  double RunFlopPerS() const;
  // Seconds this shape costs per training step: count x median, halved for causal attention.
  double StepSeconds() const;
};

// The table `measure.results` (a row per result; model mode adds count, passes, path, halved,
// step_seconds) plus measure.peak_flop_per_s, measure.best_mfu and measure.best.*. `device_peak`
// is the whole-device computed peak of the best result's dtype, `device_basis` what it is made of.
// An MFU above 1 is never printed: its cell is empty and a note says the peak is wrong and how
// (OverPeakNote); nor is one against a peak the FMA probe beat (PeakCheck says so).
void AddResults(Report& report, const std::vector<GemmResult>& results, double device_peak,
                const std::string& device_basis = "");

// The timed result with the highest MFU (by FLOP/s when no peak is known); nullptr for none.
const GemmResult* BestResult(const std::vector<GemmResult>& results);

// What a rate above its peak says about the peak: "fp32 2048x2048x2048 ran at 500 GFLOP/s, above
// the computed peak of 453 GFLOP/s (BASIS): ...; its MFU is left out". `what` names the rate.
std::string OverPeakNote(const std::string& what, double flop_per_s, double peak, const std::string& basis);

}  // namespace tally
