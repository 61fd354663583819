// This CPU's peak FLOP/s: the ISA and cores (/proc/cpuinfo and the affinity mask), FLOP per cycle
// per dtype, and an FMA-throughput probe that measures what is reachable. The running clock is
// cpu_clock.h's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "measure/gemm_shape.h"

namespace tally {

struct CpuInfo {
  std::string vendor;      // vendor_id: GenuineIntel, AuthenticAMD
  std::string model_name;  // "AMD EPYC"
  int family = 0, model = 0;
  bool avx = false, avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, avx512_fp16 = false,
       amx_bf16 = false, amx_fp16 = false;
  int logical_cpus = 1;     // in this process's affinity mask
  int cores = 1;            // physical cores among them: logical / threads per core
  double cpuinfo_mhz = 0;   // a cross-check of the clock (often the TSC rate)
  double nominal_mhz = 0;   // the "@ 2.50GHz" of an Intel model name: the nominal (base) clock; 0 without
  std::string Isa() const;  // "avx2 fma avx512f avx512_bf16", the flags that set the peak
};

// Parses /proc/cpuinfo text (the first processor's block sets the ISA and SMT ratio).
CpuInfo ParseCpuInfo(const std::string& text, int logical_cpus);
// Reads /proc/cpuinfo and sched_getaffinity.
CpuInfo DetectCpu();
// MemTotal of /proc/meminfo in bytes; 0 when unreadable.
uint64_t SystemMemoryBytes();

// The FMA units of one core and their width, with the source of that figure. The table behind it
// names each core by vendor, family and model number (the Linux kernel's ranges) and, for
// Skylake-SP's Xeons, by the model name, which tells one 512-bit FMA unit from two.
struct FmaUnits {
  int units = 1;
  int vector_bits = 128;
  bool fma = false;  // fused multiply-add; without it a multiply and an add pipe (same FLOP/cycle)
  std::string source;
};
FmaUnits CoreFmaUnits(const CpuInfo& cpu);

// FLOP per cycle per core in `dtype`; 0 where the CPU has no arithmetic for it (tf32, fp8).
double FlopsPerCycle(const CpuInfo& cpu, GemmDType dtype);
// How the figure above is reached, e.g. "2 x 512-bit FMA x 16 lanes x 2".
std::string FlopsPerCycleFormula(const CpuInfo& cpu, GemmDType dtype);

// FLOP/s of independent FMA chains (16 per thread with AVX-512, 12 with AVX2) on `threads`
// threads, the best of three trials; bf16 uses vdpbf16ps when the CPU has it. 0 where there is
// no probe for `dtype`.
double ProbePeak(GemmDType dtype, int threads);

}  // namespace tally
