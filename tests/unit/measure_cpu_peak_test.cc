// CPU detection on fixed /proc/cpuinfo text, and the peak arithmetic per dtype.
#include <doctest/doctest.h>

#include "measure/cpu_peak.h"

namespace tally {
namespace {

// The development machine's first block (shared/reference/machine.md), flags abridged.
const char* const kZen5 =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 26\n"
    "model\t\t: 2\n"
    "model name\t: AMD EPYC\n"
    "cpu MHz\t\t: 2096.004\n"
    "siblings\t: 2\n"
    "cpu cores\t: 2\n"
    "flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: AuthenticAMD\n";

const char* const kSkylakeClient =
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 94\n"
    "model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz\n"
    "siblings\t: 8\n"
    "cpu cores\t: 4\n"
    "flags\t\t: fpu sse2 avx fma avx2 f16c\n";

TEST_CASE("measure cpu: /proc/cpuinfo of the Zen 5 machine") {
  const CpuInfo cpu = ParseCpuInfo(kZen5, 2);
  CHECK(cpu.vendor == "AuthenticAMD");
  CHECK(cpu.model_name == "AMD EPYC");
  CHECK(cpu.family == 26);
  CHECK(cpu.model == 2);
  CHECK(cpu.cores == 2);
  CHECK(cpu.cpuinfo_mhz == 2096.004);
  CHECK(cpu.Isa() == "avx avx2 fma avx512f avx512_bf16");
  // Two 512-bit FMA pipes: 2 x 16 lanes x 2 FLOP (fp32), half that for fp64, vdpbf16ps twice fp32.
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp32) == 64);
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp64) == 32);
  CHECK(FlopsPerCycle(cpu, GemmDType::kBf16) == 128);
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp16) == 64);
  CHECK(FlopsPerCycle(cpu, GemmDType::kTf32) == 0);
  CHECK(FlopsPerCycleFormula(cpu, GemmDType::kFp32) == "2 x 512-bit FMA x 16 lanes x 2");
  // The machine's figures: 2 cores x 3.54 GHz x 64 = 453 GFLOP/s fp32.
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp32) * cpu.cores * 3.54e9 == doctest::Approx(453.12e9));
}

TEST_CASE("measure cpu: an AVX2 client part with SMT") {
  const CpuInfo cpu = ParseCpuInfo(kSkylakeClient, 8);
  CHECK(cpu.cores == 4);  // 8 logical CPUs, 2 per core
  CHECK(cpu.Isa() == "avx avx2 fma");
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp32) == 32);  // 2 x 256-bit FMA x 8 lanes x 2
  CHECK(FlopsPerCycle(cpu, GemmDType::kFp64) == 16);
  CHECK(FlopsPerCycle(cpu, GemmDType::kBf16) == 32);  // no bf16 arithmetic: converted to fp32
  CHECK(FlopsPerCycleFormula(cpu, GemmDType::kBf16) == "fp32 rate (no bf16 arithmetic: converted to fp32)");
  SUBCASE("an affinity mask of 2 CPUs holds one core") { CHECK(ParseCpuInfo(kSkylakeClient, 2).cores == 1); }
}

TEST_CASE("measure cpu: Zen 4 runs AVX-512 on 256-bit units — AMX sets the bf16 peak") {
  CpuInfo zen4 =
      ParseCpuInfo("vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 17\nflags : avx avx2 fma avx512f\n", 1);
  CHECK(FlopsPerCycle(zen4, GemmDType::kFp32) == 32);
  CpuInfo spr = ParseCpuInfo(
      "vendor_id : GenuineIntel\ncpu family : 6\nmodel : 143\n"
      "flags : avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile\n",
      1);
  CHECK(FlopsPerCycle(spr, GemmDType::kFp32) == 64);
  CHECK(FlopsPerCycle(spr, GemmDType::kBf16) == 1024);  // a 16x32 by 32x16 tile product per 16 cycles
  CHECK(FlopsPerCycle(spr, GemmDType::kFp16) == 128);
  CHECK(ParseCpuInfo("", 0).cores == 1);
}

TEST_CASE("measure cpu: the detected machine is self-consistent") {
  const CpuInfo cpu = DetectCpu();
  CHECK(cpu.cores >= 1);
  CHECK(cpu.cores <= cpu.logical_cpus);
}

}  // namespace
}  // namespace tally
