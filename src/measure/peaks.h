// The peak FLOP/s every measurement is divided by, per dtype and thread count: on a CPU computed
// from ISA x cores x clock and probed with FMA loops; on a GPU from the datasheet table. --peak
// replaces the computed (or datasheet) figure.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "measure/backend.h"
#include "measure/cpu_clock.h"
#include "measure/cpu_peak.h"
#include "report/report.h"

namespace tally {

class PeakTable {
 public:
  // `overrides` are whole-device figures from --peak. On a CPU this measures the clock (a few ms).
  PeakTable(const GemmBackend& backend, std::map<GemmDType, double> overrides);

  // The peak for `threads` threads: the cores they occupy, never more than the device has.
  double Computed(GemmDType d, int threads) const;
  // The FMA probe on as many threads (cached); 0 on a GPU or where there is no probe.
  double Probed(GemmDType d, int threads);
  int Cores() const { return cpu_ ? cpu_info_.cores : 1; }
  bool IsCpu() const { return cpu_; }
  const CpuInfo& cpu() const { return cpu_info_; }
  double ClockHz() const { return clock_hz_; }
  // On a CPU, reads the clock probe again after the timing and keeps the higher reading: a
  // neighbour busy at start-up (a shell pipeline's next process starting) can hold the chain at
  // 2.5-3 GHz for the whole first reading. Returns a note when the two differ by more than 3%.
  std::string RemeasureClock();
  // What the peak of `d` is made of, e.g. "64 FLOP/cycle x 2 cores x 3.69 GHz (dependent imul
  // chain)", "--peak", or the datasheet's entry: the basis every MFU names.
  std::string PeakBasis(GemmDType d) const;

  // measure.cpu.* (or measure.gpu.*) and measure.peak.<dtype>.{computed,probed,...} for `dtypes`,
  // whole device; probing here if not done yet.
  void AddTo(Report& report, const std::vector<GemmDType>& dtypes);

 private:
  int Used(int threads) const;
  void AddClock(Report& report) const;  // measure.cpu.clock_hz and its sources
  double DevicePeak(GemmDType d, std::string* source) const;

  bool cpu_ = true;
  CpuInfo cpu_info_;
  DeviceFacts gpu_;
  double clock_hz_ = 0;
  int imul_latency_ = 3;
  ClockReadings readings_;                        // the CPU's clock sources
  ClockChoice clock_;                             // what ChooseClock made of them
  double start_clock_hz_ = 0, end_clock_hz_ = 0;  // the two probe readings, once RemeasureClock ran
  std::map<GemmDType, double> overrides_;
  std::map<std::pair<GemmDType, int>, double> probed_;
};

}  // namespace tally
