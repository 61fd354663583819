// The running clock of a CPU core, from sources that check each other: a dependent imul chain
// (the probe), the TSC rate, /proc/cpuinfo's "cpu MHz" and cpufreq's maximum. ChooseClock is the
// pure rule that picks the consistent one and says plainly when a source is out of bounds.
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
};

struct ClockChoice {
  double hz = 0;
  std::string source;  // "dependent imul chain", "TSC rate", ...
  std::string note;    // empty when the sources agree; else what was inconsistent and what was used
  std::string basis;   // the bounds the probe was held to, for --explain
};

// The probe's reading when it lies within what the CPU can run: at most cpufreq's maximum (+5%),
// else at most 4 x the TSC rate and never above 6.2 GHz (+5%); at least a quarter of the TSC
// rate. Otherwise cpufreq's maximum, else the TSC rate, else cpuinfo's MHz, with a note.
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
