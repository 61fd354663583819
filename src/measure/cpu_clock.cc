#include "measure/cpu_clock.h"

#include <algorithm>
#include <fstream>

#include "measure/stopwatch.h"
#include "util/units.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tally {
namespace {

// The fastest x86 clock shipped: 6.2 GHz, Intel Core i9-14900KS's maximum turbo (Intel ARK).
constexpr double kFastestX86Hz = 6.2e9;
// Turbo over nominal reaches 3.6x on low-power laptop parts (Core i5-1035G1: 1.0 GHz base, 3.6 GHz
// turbo, Intel ARK); 4x bounds every part, while an add chain folded at rename (24 GHz on a 2 GHz
// Xeon) exceeds it.
constexpr double kMaxTurboOverTsc = 4;
// A busy core below a quarter of its nominal rate was descheduled or throttled while it was read.
constexpr double kMinOverTsc = 0.25;
constexpr double kSlack = 1.05;  // timing noise of a best-of-trials reading

std::string Ghz(double hz) { return FormatFixed(hz / 1e9) + " GHz"; }

// The ceiling and its reason; the floor and its reason.
struct Bounds {
  double lo = 0, hi = 0;
  std::string lo_why, hi_why;
};

Bounds BoundsOf(const ClockReadings& r) {
  Bounds b;
  if (r.max_mhz > 0) {
    b.hi = r.max_mhz * 1e6 * kSlack;
    b.hi_why = "cpufreq's maximum of " + Ghz(r.max_mhz * 1e6);
  } else if (r.tsc_hz > 0 && kMaxTurboOverTsc * r.tsc_hz < kFastestX86Hz) {
    b.hi = kMaxTurboOverTsc * r.tsc_hz * kSlack;
    b.hi_why = "4 x the TSC rate of " + Ghz(r.tsc_hz) + ", more turbo than any CPU has";
  } else {
    b.hi = kFastestX86Hz * kSlack;
    b.hi_why = "6.2 GHz, the fastest x86 clock shipped";
  }
  if (r.tsc_hz > 0) {
    b.lo = kMinOverTsc * r.tsc_hz;
    b.lo_why = "a quarter of the TSC rate of " + Ghz(r.tsc_hz);
  }
  return b;
}

// The next source when the probe is unusable: cpufreq's maximum (what a busy core boosts to), else
// the TSC rate (the nominal clock), else cpuinfo's MHz.
ClockChoice Fallback(const ClockReadings& r) {
  if (r.max_mhz > 0) return {r.max_mhz * 1e6, "cpufreq maximum", "", ""};
  if (r.tsc_hz > 0) return {r.tsc_hz, "TSC rate (the nominal clock)", "", ""};
  if (r.cpuinfo_mhz > 0) return {r.cpuinfo_mhz * 1e6, "/proc/cpuinfo cpu MHz", "", ""};
  return {0, "none", "", ""};
}

}  // namespace

ClockChoice ChooseClock(const ClockReadings& r) {
  const Bounds b = BoundsOf(r);
  std::string basis = "probe held to at most " + Ghz(b.hi) + " (" + b.hi_why + ")";
  if (b.lo > 0) basis += " and at least " + Ghz(b.lo) + " (" + b.lo_why + ")";
  if (r.probe_hz >= b.lo && r.probe_hz > 0 && r.probe_hz <= b.hi) {
    if (r.tsc_hz > 0) basis += "; " + FormatFixed(r.probe_hz / r.tsc_hz) + " x the TSC rate (turbo over nominal)";
    return {r.probe_hz, "dependent imul chain", "", basis};
  }
  ClockChoice c = Fallback(r);
  c.basis = basis;
  const std::string use = c.hz > 0 ? "; peaks use the " + c.source + ", " + Ghz(c.hz) + ", instead" : "";
  if (r.probe_hz <= 0) {
    // Not x86: no probe ran, so nothing is inconsistent; say where the clock came from.
    c.note = c.hz > 0 ? "" : "no clock source on this CPU: computed peaks are unknown (give --peak)";
  } else if (r.probe_hz > b.hi) {
    c.note = "the clock probe read " + Ghz(r.probe_hz) + ", more than this CPU can run (above " + b.hi_why +
             "): the dependent chain ran faster than its latency allows" + use;
  } else {
    c.note = "the clock probe read " + Ghz(r.probe_hz) + ", under " + b.lo_why +
             ": the core was descheduled or throttled while it ran" + use;
  }
  return c;
}

int ImulLatencyCycles(const CpuInfo& cpu) {
  // IMUL r32, r32 latency (Agner Fog, "Instruction tables", 2022): 3 cycles on Intel Nehalem through
  // Golden Cove and Gracemont, AMD K10, Bobcat/Jaguar and Zen 1-4; 4 on Bulldozer-Excavator (family
  // 15h). Zen 5: 3 (AMD, Software Optimization Guide for the Zen 5 Microarchitecture, pub. 58455).
  // Intel's Optimization Reference Manual gives 3 for every core since Nehalem.
  return cpu.vendor == "AuthenticAMD" && cpu.family == 0x15 ? 4 : 3;
}

#if defined(__x86_64__)

namespace {

constexpr uint64_t kImulsPerIteration = 64;

// 64 dependent imuls per iteration: a multiply cannot be folded at rename as an add of an immediate
// can (Golden Cove runs dependent `add reg, imm` several per cycle), so each waits out its latency.
// x stays 1 (1 x 1); the loop counter runs alongside on another port.
uint64_t ImulChain(uint64_t iterations) {
  uint32_t x = 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    asm volatile(".rept 64\n\timul %0, %0\n\t.endr" : "+r"(x));
  }
  return x;
}

}  // namespace

double MeasureClockHz(int latency_cycles) {
  constexpr uint64_t kIterations = 1 << 15;  // 6.3 M cycles: a few ms at any clock
  // A core can run slow for tens of milliseconds after waking (a VM's vCPU: 2.4-2.7 GHz instead
  // of 3.5 in about one process in 30), so: 30 ms of warm-up, then the fastest of as many trials
  // as fill 120 ms.
  const Clock::time_point warm = Clock::now();
  while (SecondsSince(warm) < 0.03) ImulChain(kIterations);
  double best = 0;
  const Clock::time_point trials = Clock::now();
  for (int trial = 0; trial < 7 || SecondsSince(trials) < 0.12; ++trial) {
    const Clock::time_point start = Clock::now();
    ImulChain(kIterations);
    const double t = SecondsSince(start);
    if (t > 0) best = std::max(best, static_cast<double>(kIterations * kImulsPerIteration) / t);
  }
  return best * latency_cycles;
}

double MeasureTscHz() {
  const Clock::time_point start = Clock::now();
  const uint64_t ticks = __rdtsc();
  double t = 0;
  while ((t = SecondsSince(start)) < 0.02) {
  }
  return static_cast<double>(__rdtsc() - ticks) / t;
}

#else

double MeasureClockHz(int) { return 0; }
double MeasureTscHz() { return 0; }

#endif  // __x86_64__

double CpufreqMaxMhz() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  return in >> khz ? khz / 1e3 : 0;
}

}  // namespace tally
