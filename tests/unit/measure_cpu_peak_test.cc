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

// One named CPU: its /proc/cpuinfo fields and its FLOP per cycle per core, by hand from the
// vendor's figures. fp32 = FMA units x (width / 32 lanes) x 2 FLOP; fp64 half of it; bf16 1024 with
// AMX (Intel: 1024 bf16 operations per cycle per core), twice fp32 with avx512_bf16 (vdpbf16ps: two
// products per fp32 lane), else fp32's (converted); fp16 likewise with amx_fp16 and avx512_fp16.
struct NamedCpu {
  const char* name;
  const char* vendor;
  int family, model;
  const char* flags;
  double fp32, fp64, bf16, fp16;
  const char* why;
};

const NamedCpu kNamedCpus[] = {
    {"Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", 6, 143,
     "avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile", 64, 32, 1024, 128,
     "Sapphire Rapids: 2 AVX-512 FMA units (ARK) = 2 x 16 x 2; AMX bf16 1024; avx512_fp16 2 x 64"},
    {"Intel(R) Xeon(R) 6980P", "GenuineIntel", 6, 173,
     "avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_fp16 amx_tile", 64, 32, 1024, 1024,
     "Granite Rapids: 2 AVX-512 FMA units; AMX does fp16 as bf16"},
    {"Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz", "GenuineIntel", 6, 85, "avx avx2 fma avx512f", 64, 32, 64, 64,
     "Cascade Lake Platinum: 2 AVX-512 FMA units (ARK); no bf16 arithmetic"},
    {"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz", "GenuineIntel", 6, 85, "avx avx2 fma avx512f", 64, 32, 64, 64,
     "Skylake-SP Gold 6100: 2 AVX-512 FMA units (ARK)"},
    {"Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz", "GenuineIntel", 6, 85, "avx avx2 fma avx512f", 64, 32, 64, 64,
     "Gold 5122: the one Gold 5100 with 2 AVX-512 FMA units (ARK)"},
    {"Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz", "GenuineIntel", 6, 85, "avx avx2 fma avx512f", 32, 16, 32, 32,
     "Cascade Lake Gold 5200: 1 AVX-512 FMA unit (ARK) = 1 x 16 x 2"},
    {"Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz", "GenuineIntel", 6, 85, "avx avx2 fma avx512f", 32, 16, 32, 32,
     "Cascade Lake Silver: 1 AVX-512 FMA unit (ARK)"},
    {"Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "GenuineIntel", 6, 106, "avx avx2 fma avx512f", 64, 32, 64, 64,
     "Ice Lake-SP: 2 AVX-512 FMA units"},
    {"11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "GenuineIntel", 6, 140, "avx avx2 fma avx512f", 32, 16, 32, 32,
     "Tiger Lake: one 512-bit FMA on fused ports 0+1 = 1 x 16 x 2"},
    {"12th Gen Intel(R) Core(TM) i9-12900K", "GenuineIntel", 6, 151, "avx avx2 fma", 32, 16, 32, 32,
     "Alder Lake P-core: 2 x 256-bit FMA = 2 x 8 x 2"},
    {"Intel(R) N100", "GenuineIntel", 6, 190, "avx avx2 fma", 16, 8, 16, 16,
     "Alder Lake-N (Gracemont E-cores): 2 x 128-bit FMA = 2 x 4 x 2"},
    {"AMD EPYC 7601 32-Core Processor", "AuthenticAMD", 23, 1, "avx avx2 fma", 16, 8, 16, 16,
     "Zen 1: FMA on two of four 128-bit FP pipes = 2 x 4 x 2"},
    {"AMD EPYC 7742 64-Core Processor", "AuthenticAMD", 23, 49, "avx avx2 fma", 32, 16, 32, 32,
     "Zen 2: two 256-bit FMA pipes = 2 x 8 x 2"},
    {"AMD EPYC 7763 64-Core Processor", "AuthenticAMD", 25, 1, "avx avx2 fma", 32, 16, 32, 32, "Zen 3: as Zen 2"},
    {"AMD EPYC 9654 96-Core Processor", "AuthenticAMD", 25, 17, "avx avx2 fma avx512f avx512_bf16", 32, 16, 64, 32,
     "Zen 4: AVX-512 in two 256-bit halves, so 2 x 8 x 2 as AVX2; vdpbf16ps twice that"},
    {"AMD Ryzen 9 7950X 16-Core Processor", "AuthenticAMD", 25, 97, "avx avx2 fma avx512f avx512_bf16", 32, 16, 64, 32,
     "Zen 4 desktop (Raphael)"},
    {"AMD EPYC 9755 128-Core Processor", "AuthenticAMD", 26, 2, "avx avx2 fma avx512f avx512_bf16", 64, 32, 128, 64,
     "Zen 5 server (Turin): two full 512-bit FMA pipes = 2 x 16 x 2"},
    {"AMD Ryzen 9 9950X 16-Core Processor", "AuthenticAMD", 26, 68, "avx avx2 fma avx512f avx512_bf16", 64, 32, 128, 64,
     "Zen 5 desktop (Granite Ridge): full 512-bit"},
    {"AMD Ryzen AI 9 HX 370 w/ Radeon 890M", "AuthenticAMD", 26, 36, "avx avx2 fma avx512f avx512_bf16", 32, 16, 64, 32,
     "Zen 5 mobile (Strix Point): 256-bit pipes, as Zen 4"},
};

TEST_CASE("measure cpu: FLOP per cycle of named CPUs, from the vendors' figures") {
  for (const NamedCpu& row : kNamedCpus) {
    CAPTURE(row.name);
    CAPTURE(row.why);
    const std::string text = std::string("vendor_id\t: ") + row.vendor +
                             "\ncpu family\t: " + std::to_string(row.family) +
                             "\nmodel\t\t: " + std::to_string(row.model) + "\nmodel name\t: " + row.name +
                             "\nflags\t\t: fpu sse2 " + row.flags + "\n";
    const CpuInfo cpu = ParseCpuInfo(text, 1);
    CHECK(FlopsPerCycle(cpu, GemmDType::kFp32) == row.fp32);
    CHECK(FlopsPerCycle(cpu, GemmDType::kFp64) == row.fp64);
    CHECK(FlopsPerCycle(cpu, GemmDType::kBf16) == row.bf16);
    CHECK(FlopsPerCycle(cpu, GemmDType::kFp16) == row.fp16);
  }
}

TEST_CASE("measure cpu: the model name's nominal clock") {
  CHECK(ParseCpuInfo("model name\t: Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz\n", 1).nominal_mhz == 2700);
  CHECK(ParseCpuInfo("model name\t: 11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz\n", 1).nominal_mhz == 2800);
  CHECK(ParseCpuInfo("model name\t: AMD EPYC 9654 96-Core Processor\n", 1).nominal_mhz == 0);
  CHECK(ParseCpuInfo("model name\t: Intel(R) Xeon(R) Platinum 8480+\n", 1).nominal_mhz == 0);
}

TEST_CASE("measure cpu: the detected machine is self-consistent") {
  const CpuInfo cpu = DetectCpu();
  CHECK(cpu.cores >= 1);
  CHECK(cpu.cores <= cpu.logical_cpus);
}

}  // namespace
}  // namespace tally
