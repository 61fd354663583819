// The CPU clock's consistency rule (ChooseClock) on fixed readings: which source is used, and the
// note when the probe lies outside what the CPU can run. No timing here.
#include <doctest/doctest.h>

#include "measure/cpu_clock.h"

namespace tally {
namespace {

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_CASE("measure clock: this development machine's readings agree") {
  // The Zen 4 VM of 2026-11: the imul chain at 3.694 GHz, TSC 2.596 GHz (= cpuinfo's MHz), no
  // cpufreq. 3.694 / 2.596 = 1.42x turbo over nominal: under the 6.2 GHz x 1.05 ceiling (4 x 2.596
  // = 10.4 GHz is above 6.2, so the absolute bound holds) and over the 0.649 GHz floor.
  const ClockChoice c = ChooseClock({.probe_hz = 3.694e9, .tsc_hz = 2.596e9, .cpuinfo_mhz = 2596.134});
  CHECK(c.hz == 3.694e9);
  CHECK(c.source == "dependent imul chain");
  CHECK(c.note.empty());
  CHECK(Has(c.basis, "at most 6.51 GHz (6.2 GHz, the fastest x86 clock shipped)"));
  CHECK(Has(c.basis, "at least 0.65 GHz (a quarter of the TSC rate of 2.60 GHz)"));
  CHECK(Has(c.basis, "1.42 x the TSC rate"));
  CHECK(c.Within(3.694e9));
}

TEST_CASE("measure clock: the Xeon whose add chain read 24.1 GHz") {
  // Issue 31: an AVX-512/AMX Xeon at 2.0 GHz nominal read 24.1 GHz. No CPU runs that fast: the TSC
  // rate is the consistent source, and the note says what was wrong.
  const ClockChoice c = ChooseClock({.probe_hz = 24.1e9, .tsc_hz = 2.0e9, .cpuinfo_mhz = 2000});
  CHECK(c.hz == 2.0e9);
  CHECK(c.source == "TSC rate (the nominal clock)");
  CHECK(c.note ==
        "the clock probe read 24.10 GHz, more than this CPU can run (above 6.2 GHz, the fastest x86 clock shipped): "
        "the dependent chain ran faster than its latency allows; peaks use the TSC rate (the nominal clock), "
        "2.00 GHz, instead");
  SUBCASE("with cpufreq's maximum (3.8 GHz for a Xeon Platinum 8480+), that is used") {
    const ClockChoice m = ChooseClock({.probe_hz = 24.1e9, .tsc_hz = 2.0e9, .cpuinfo_mhz = 2000, .max_mhz = 3800});
    CHECK(m.hz == 3.8e9);
    CHECK(m.source == "cpufreq maximum");
    CHECK(Has(m.note, "above cpufreq's maximum of 3.80 GHz"));
  }
}

TEST_CASE("measure clock: the ceiling is cpufreq's maximum, else 4 x the TSC rate, else 6.2 GHz") {
  // cpufreq says 3.7 GHz: 3.7 x 1.05 = 3.885 GHz is the most a reading may show.
  CHECK(ChooseClock({.probe_hz = 3.88e9, .tsc_hz = 2.4e9, .max_mhz = 3700}).hz == 3.88e9);
  CHECK(ChooseClock({.probe_hz = 3.9e9, .tsc_hz = 2.4e9, .max_mhz = 3700}).hz == 3.7e9);
  // A 1.0 GHz-nominal laptop part turbos to 3.6 GHz (Core i5-1035G1): within 4 x 1.05 = 4.2 GHz.
  CHECK(ChooseClock({.probe_hz = 3.6e9, .tsc_hz = 1.0e9}).hz == 3.6e9);
  const ClockChoice fast = ChooseClock({.probe_hz = 4.5e9, .tsc_hz = 1.0e9});
  CHECK(fast.hz == 1.0e9);
  CHECK(fast.note ==
        "the clock probe read 4.50 GHz, more than this CPU can run (above 4 x the TSC rate of 1.00 GHz, more turbo "
        "than any CPU has): the dependent chain ran faster than its latency allows; peaks use the TSC rate (the "
        "nominal clock), 1.00 GHz, instead");
  // The refused reading is outside the bounds every printed clock is held to.
  CHECK(fast.hi_hz == doctest::Approx(4.2e9));
  CHECK_FALSE(fast.Within(4.5e9));
  CHECK(fast.Within(1.0e9));
}

TEST_CASE("measure clock: the model name's nominal clock stands in for the TSC and is checked against it") {
  // "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz" and a TSC at 2.3 GHz agree: no note.
  CHECK(ChooseClock({.probe_hz = 3.0e9, .tsc_hz = 2.3e9, .nominal_mhz = 2300}).nominal_note.empty());
  // A TSC at 2.0 GHz against a name saying 2.5 GHz (25% apart, more than 5%): one line says so.
  const ClockChoice apart = ChooseClock({.probe_hz = 3.0e9, .tsc_hz = 2.0e9, .nominal_mhz = 2500});
  CHECK(apart.hz == 3.0e9);
  CHECK(apart.nominal_note ==
        "the TSC ticks at 2.00 GHz but the model name says 2.50 GHz nominal: the clock bounds use the higher");
  // Without a TSC reading, the name's 1.0 GHz bounds the probe at 4 x 1.0 x 1.05 = 4.2 GHz.
  const ClockChoice named = ChooseClock({.probe_hz = 12e9, .nominal_mhz = 1000});
  CHECK(named.hz == 1.0e9);
  CHECK(named.source == "model name's nominal clock");
  CHECK(Has(named.note, "above 4 x the model name's clock of 1.00 GHz"));
}

TEST_CASE("measure clock: never under 0.2 GHz, and no fallback outside the bounds") {
  // No nominal clock: the floor is 0.2 GHz, half the slowest base clock sold.
  const ClockChoice slow = ChooseClock({.probe_hz = 0.1e9, .cpuinfo_mhz = 2000});
  CHECK(slow.hz == 2e9);
  CHECK(Has(slow.note, "the clock probe read 0.10 GHz, under 0.2 GHz, slower than any x86 core runs busy"));
  // A probe at 30 GHz and a cpuinfo of 50 GHz (a VM can report anything): neither is a clock, and
  // the peaks are left out rather than computed from either.
  const ClockChoice none = ChooseClock({.probe_hz = 30e9, .cpuinfo_mhz = 50000});
  CHECK(none.hz == 0);
  CHECK(none.note ==
        "the clock probe read 30.00 GHz, more than this CPU can run (above 6.2 GHz, the fastest x86 clock shipped): "
        "the dependent chain ran faster than its latency allows; no other source is within bounds: computed peaks "
        "and MFU are left out (give --peak)");
}

TEST_CASE("measure clock: a probe far below the TSC rate was descheduled") {
  const ClockChoice c = ChooseClock({.probe_hz = 0.3e9, .tsc_hz = 2.6e9, .cpuinfo_mhz = 2600});
  CHECK(c.hz == 2.6e9);
  CHECK(c.note ==
        "the clock probe read 0.30 GHz, under a quarter of the TSC rate of 2.60 GHz: the core was descheduled or "
        "throttled while it ran; peaks use the TSC rate (the nominal clock), 2.60 GHz, instead");
  // Exactly a quarter is still consistent.
  CHECK(ChooseClock({.probe_hz = 0.65e9, .tsc_hz = 2.6e9}).source == "dependent imul chain");
}

TEST_CASE("measure clock: without a probe (not x86), the next source and no complaint") {
  const ClockChoice c = ChooseClock({.cpuinfo_mhz = 2000});
  CHECK(c.hz == 2e9);
  CHECK(c.source == "/proc/cpuinfo cpu MHz");
  CHECK(c.note.empty());
  const ClockChoice none = ChooseClock({});
  CHECK(none.hz == 0);
  CHECK(Has(none.note, "give --peak"));
}

TEST_CASE("measure clock: imul latency by core") {
  // Agner Fog's tables: IMUL r32,r32 takes 3 cycles, 4 on AMD family 15h (Bulldozer).
  CpuInfo cpu;
  cpu.vendor = "AuthenticAMD";
  cpu.family = 0x1A;  // Zen 5
  CHECK(ImulLatencyCycles(cpu) == 3);
  cpu.family = 0x15;
  CHECK(ImulLatencyCycles(cpu) == 4);
  cpu.vendor = "GenuineIntel";
  cpu.family = 6;
  CHECK(ImulLatencyCycles(cpu) == 3);
}

}  // namespace
}  // namespace tally
