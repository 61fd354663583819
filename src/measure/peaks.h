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

// What the FMA probe says of the computed peak, both whole-device figures of one dtype.
struct PeakCheck {
  bool refuted = false;  // the probe beat the computed peak: MFUs against it are left out
  std::string note;      // one line when the two disagree; empty when they agree
};
// The probe (independent FMA chains on every core) cannot run faster than the true peak, and runs
// at 90-100% of it on the machines measured (docs/measure.md). Above 1.10 x the computed peak, the
// clock or the FLOP/cycle table undercounts this CPU: refuted. Under 0.55 x, a note: the core may
// have half the FMA width the table gives (one 512-bit unit, a 256-bit datapath), the "cores" may
// be hyperthreads of half as many (the H200 host's 16 vCPUs of an Emerald Rapids Xeon probe at 0.45
// x, as 8 cores would), or slow down under wide FMAs; MFUs then read low, never above 1. No note without both figures.
// Where the peak counts a unit the probe does not run (AMX tiles: the bf16 probe runs vdpbf16ps), `same_unit` is false
// and only the upper check applies.
PeakCheck CheckPeakAgainstProbe(GemmDType d, double computed, double probed, const std::string& basis,
                                bool same_unit = true);

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
  // What the peak of `d` on `threads` threads (0: the whole device) is made of, e.g. "64
  // FLOP/cycle x 2 cores x 3.69 GHz (dependent imul chain)", "--peak", or the datasheet's entry:
  // the basis every MFU names.
  std::string PeakBasis(GemmDType d, int threads = 0) const;
  // The computed peak of `d` checked against the FMA probe on every core (probing if not done
  // yet); nothing to check on a GPU or with --peak.
  PeakCheck Check(GemmDType d);

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
