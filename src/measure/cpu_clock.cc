#include "measure/cpu_clock.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <utility>

#include "measure/stopwatch.h"
#include "util/units.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tally {
namespace {

// The fastest x86 clock shipped: 6.2 GHz, Intel Core i9-14900KS's maximum turbo (Intel ARK).
constexpr double kFastestX86Hz = 6.2e9;
// The slowest clock a busy core of any x86 part of the last 15 years runs: none is sold below
// 0.4 GHz of base (Atom and Core m parts idle at 0.4-0.8 GHz); half of that is the floor.
constexpr double kSlowestHz = 0.2e9;
// How far turbo goes over the nominal clock, the rate an invariant TSC ticks at (Intel SDM vol. 3,
// 18.17 "Time-Stamp Counter"; AMD APM vol. 2, 13.2.4: the P0 frequency). Servers reach about 2x:
// Xeon Platinum 8480+ 2.0 -> 3.8 GHz, Xeon w9-3495X 1.9 -> 4.8 (2.5x), EPYC 9B14 2.6 -> 3.7 (Intel
// and AMD product pages); this development machine runs 1.42x its TSC, the Zen 5 machine of
// shared/reference/machine.md 1.69x, so 1.5x would refuse true clocks. Low-power laptop parts
// reach 3.6x (Core i5-1035G1: 1.0 GHz base, 3.6 GHz turbo, Intel ARK). 4x bounds every part,
// while an add chain folded at rename (issue 31: 24.1 GHz on a 2.0 GHz Xeon, 12x) exceeds it.
constexpr double kMaxTurboOverNominal = 4;
// A busy core below a quarter of its nominal rate was descheduled or throttled while it was read.
constexpr double kMinOverNominal = 0.25;
constexpr double kSlack = 1.05;  // timing noise of a best-of-trials reading
// An invariant TSC ticks at the nominal clock the model name states (to the MHz on bare metal);
// a hypervisor's calibration may differ by a little.
constexpr double kNominalAgreement = 0.05;

std::string Ghz(double hz) { return FormatFixed(hz / 1e9) + " GHz"; }

// The nominal clock: the TSC rate, else the model name's "@ X GHz"; the larger when both are
// read (the looser ceiling; ChooseClock notes the disagreement).
double NominalHz(const ClockReadings& r) { return std::max(r.tsc_hz, r.nominal_mhz * 1e6); }

// The ceiling and its reason; the floor and its reason.
struct Bounds {
  double lo = 0, hi = 0;
  std::string lo_why, hi_why;
};

Bounds BoundsOf(const ClockReadings& r) {
  Bounds b;
  const double nominal = NominalHz(r);
  const std::string what = r.tsc_hz > 0 ? "the TSC rate" : "the model name's clock";
  if (r.max_mhz > 0) {
    b.hi = r.max_mhz * 1e6 * kSlack;
    b.hi_why = "cpufreq's maximum of " + Ghz(r.max_mhz * 1e6);
  } else if (nominal > 0 && kMaxTurboOverNominal * nominal < kFastestX86Hz) {
    b.hi = kMaxTurboOverNominal * nominal * kSlack;
    b.hi_why = "4 x " + what + " of " + Ghz(nominal) + ", more turbo than any CPU has";
  } else {
    b.hi = kFastestX86Hz * kSlack;
    b.hi_why = "6.2 GHz, the fastest x86 clock shipped";
  }
  b.lo = kSlowestHz;
  b.lo_why = "0.2 GHz, slower than any x86 core runs busy";
  if (kMinOverNominal * nominal > kSlowestHz) {
    b.lo = kMinOverNominal * nominal;
    b.lo_why = "a quarter of " + what + " of " + Ghz(nominal);
  }
  return b;
}

// The next source when the probe is unusable: cpufreq's maximum (what a busy core boosts to), else
// the TSC rate (the nominal clock), else the model name's nominal clock, else cpuinfo's MHz; each
// only within the bounds (a VM may report anything).
ClockChoice Fallback(const ClockReadings& r, const Bounds& b) {
  const std::pair<double, const char*> sources[] = {{r.max_mhz * 1e6, "cpufreq maximum"},
                                                    {r.tsc_hz, "TSC rate (the nominal clock)"},
                                                    {r.nominal_mhz * 1e6, "model name's nominal clock"},
                                                    {r.cpuinfo_mhz * 1e6, "/proc/cpuinfo cpu MHz"}};
  for (const auto& [hz, name] : sources) {
    if (hz >= b.lo && hz <= b.hi && hz > 0) return {.hz = hz, .source = name};
  }
  return {.hz = 0, .source = "none"};
}

}  // namespace

ClockChoice ChooseClock(const ClockReadings& r) {
  const Bounds b = BoundsOf(r);
  std::string basis =
      "probe held to at most " + Ghz(b.hi) + " (" + b.hi_why + ") and at least " + Ghz(b.lo) + " (" + b.lo_why + ")";
  std::string nominal_note;
  if (r.tsc_hz > 0 && r.nominal_mhz > 0 && std::fabs(r.tsc_hz / (r.nominal_mhz * 1e6) - 1) > kNominalAgreement) {
    nominal_note = "the TSC ticks at " + Ghz(r.tsc_hz) + " but the model name says " + Ghz(r.nominal_mhz * 1e6) +
                   " nominal: the clock bounds use the higher";
  }
  if (r.probe_hz >= b.lo && r.probe_hz > 0 && r.probe_hz <= b.hi) {
    if (r.tsc_hz > 0) basis += "; " + FormatFixed(r.probe_hz / r.tsc_hz) + " x the TSC rate (turbo over nominal)";
    return {.hz = r.probe_hz,
            .source = "dependent imul chain",
            .nominal_note = nominal_note,
            .basis = basis,
            .lo_hz = b.lo,
            .hi_hz = b.hi};
  }
  ClockChoice c = Fallback(r, b);
  c.basis = basis;
  c.nominal_note = nominal_note;
  c.lo_hz = b.lo;
  c.hi_hz = b.hi;
  const std::string use = c.hz > 0 ? "; peaks use the " + c.source + ", " + Ghz(c.hz) + ", instead"
                                   : "; no other source is within bounds: computed peaks and MFU are left out "
                                     "(give --peak)";
  if (r.probe_hz <= 0) {
    // Not x86: no probe ran, so nothing is inconsistent; say where the clock came from.
    c.note = c.hz > 0 ? "" : "no clock source on this CPU: computed peaks and MFU are left out (give --peak)";
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
