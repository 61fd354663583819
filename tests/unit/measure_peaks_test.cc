// The computed peak checked against the FMA probe (CheckPeakAgainstProbe) on fixed figures. No timing.
#include <doctest/doctest.h>

#include "measure/peaks.h"

namespace tally {
namespace {

TEST_CASE("measure peaks: a probe within 0.55-1.10 x the computed peak agrees") {
  // This development machine (docs/performance.md): 32 FLOP/cycle x 2 cores x 3.69 GHz = 236.2
  // GFLOP/s fp32, the probe about 2% under it (all-core FMA clock).
  const PeakCheck c = CheckPeakAgainstProbe(GemmDType::kFp32, 32 * 2 * 3.69e9, 231.4e9, "basis");
  CHECK_FALSE(c.refuted);
  CHECK(c.note.empty());
  CHECK(CheckPeakAgainstProbe(GemmDType::kFp32, 0, 231.4e9, "basis").note.empty());  // no clock: nothing to check
  CHECK(CheckPeakAgainstProbe(GemmDType::kFp32, 236.2e9, 0, "basis").note.empty());  // no probe (not x86)
}

TEST_CASE("measure peaks: a probe above the computed peak refutes it") {
  // Issue 31's Xeon with its clock from the TSC rate: 64 FLOP/cycle x 8 cores x 2.0 GHz = 1.024
  // TFLOP/s, while its cores run near 3.8 GHz and the probe reaches 1.9 TFLOP/s, 1.86 x.
  const PeakCheck c = CheckPeakAgainstProbe(GemmDType::kFp32, 64 * 8 * 2.0e9, 1.9e12,
                                            "64 FLOP/cycle x 8 cores x 2.00 GHz (TSC rate (the nominal clock))");
  CHECK(c.refuted);
  CHECK(c.note ==
        "the fp32 FMA probe reached 1.90 TFLOP/s, 1.86 x the computed peak of 1.02 TFLOP/s (64 FLOP/cycle x 8 cores "
        "x 2.00 GHz (TSC rate (the nominal clock))): the clock or the FLOP per cycle undercount this CPU, so fp32 MFUs "
        "are left out");
  // 1.10 x is still noise.
  CHECK_FALSE(CheckPeakAgainstProbe(GemmDType::kFp32, 100e9, 110e9, "b").refuted);
}

TEST_CASE("measure peaks: a probe at half the computed peak is noted, not refuted") {
  // A Xeon Silver (one 512-bit FMA unit) counted with two: 64 x 2 cores x 3.0 GHz = 384 GFLOP/s
  // computed, 190 GFLOP/s probed (0.49 x). MFUs read low, never above 1: a note, no refusal.
  const PeakCheck c = CheckPeakAgainstProbe(GemmDType::kFp64, 384e9, 190e9, "b");
  CHECK_FALSE(c.refuted);
  CHECK(c.note ==
        "the fp64 FMA probe reached 190.00 GFLOP/s, 0.49 x the computed peak of 384.00 GFLOP/s (b): the cores may "
        "have half the FMA width counted, share physical cores (hyperthreads a hypervisor hides), slow down under "
        "wide FMAs, or be busy with other work; fp64 MFUs may read low");
  // With AMX the bf16 peak is the tiles' 1024 FLOP/cycle, and the probe runs vdpbf16ps (128): no
  // note from below, since the probe does not run the unit the peak counts.
  CHECK(CheckPeakAgainstProbe(GemmDType::kBf16, 1024 * 8 * 3.0e9, 128 * 8 * 3.0e9, "b", false).note.empty());
  CHECK(CheckPeakAgainstProbe(GemmDType::kBf16, 1024.0, 2000.0, "b", false).refuted);
}

}  // namespace
}  // namespace tally
