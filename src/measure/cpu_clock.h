// The running clock of a CPU core, from sources that check each other: a dependent imul chain
// (the probe), the TSC rate, /proc/cpuinfo's "cpu MHz" and model name, and cpufreq's maximum.
// ChooseClock is the pure rule that picks the consistent one and says plainly, in one line, when a
// source is out of bounds; a reading out of bounds is never the clock.
#pragma once

#include <string>

#include "measure/cpu_peak.h"

namespace tally {

// What each source read; 0 where a source is absent (no x86, no cpufreq in sysfs).
struct ClockReadings {
  double probe_hz = 0;     // dependent imul chain: latency x imuls per second
  double tsc_hz = 0;       // rdtsc ticks over a timed interval: the nominal (base) clock
  double cpuinfo_mhz = 0;  // /proc/cpuinfo "cpu MHz": often the TSC rate, else cpu0's clock when read
  double max_mhz = 0;      // cpufreq cpuinfo_max_freq: the highest clock the CPU can run
  double nominal_mhz = 0;  // the model name's "@ 2.50GHz" (Intel before Sapphire Rapids): the base clock
};

struct ClockChoice {
  double hz = 0;
  std::string source;           // "dependent imul chain", "TSC rate", ...
  std::string note;             // empty when the probe is within bounds; else what was inconsistent and what was used
  std::string nominal_note;     // empty unless the TSC rate and the model name's clock disagree
  std::string basis;            // the bounds the probe was held to, for --explain
  double lo_hz = 0, hi_hz = 0;  // those bounds: a clock reading outside them is never printed
  bool Within(double hz_reading) const { return hz_reading >= lo_hz && hz_reading <= hi_hz && hz_reading > 0; }
};

// The probe's reading when it lies within what the CPU can run:
// - at most cpufreq's maximum (+5%); without cpufreq, at most 4 x the nominal clock (the TSC rate,
//   else the model name's) and never above 6.2 GHz (+5%);
// - at least a quarter of the nominal clock and never under 0.2 GHz.
// Otherwise cpufreq's maximum, else the TSC rate, else cpuinfo's MHz (each only within the same
// bounds), with a one-line note saying what was inconsistent.
ClockChoice ChooseClock(const ClockReadings& readings);

// Cycles of latency of a dependent `imul r32, r32` on this core (3, or 4 on AMD family 15h).
int ImulLatencyCycles(const CpuInfo& cpu);

// Dependent imuls per second x `latency_cycles`, the fastest of several trials after a warm-up.
// 0 on CPUs other than x86-64.
double MeasureClockHz(int latency_cycles);

// TSC ticks per second over about 20 ms of steady_clock; 0 on CPUs other than x86-64.
double MeasureTscHz();

// cpufreq's cpuinfo_max_freq of cpu0 in MHz; 0 when sysfs has none (most virtual machines).
double CpufreqMaxMhz();

}  // namespace tally
