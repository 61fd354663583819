#include "measure/cpu_peak.h"

#include <sched.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "util/parse.h"

namespace tally {
namespace {

// "key\t: value" lines of /proc/cpuinfo's first processor block.
std::string Field(const std::string& block, const std::string& key) {
  std::istringstream lines(block);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    if (name != key) continue;
    const size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

int Int(const std::string& text) {
  const uint64_t value = ReadWhole(text).value_or(0);
  return value > 1'000'000 ? 0 : static_cast<int>(value);  // /proc/cpuinfo's family and model numbers
}

bool HasFlag(const std::string& flags, const std::string& flag) {
  return (" " + flags + " ").find(" " + flag + " ") != std::string::npos;
}

}  // namespace

std::string CpuInfo::Isa() const {
  std::string isa;
  const std::pair<bool, const char*> flags[] = {{avx, "avx"},
                                                {avx2, "avx2"},
                                                {fma, "fma"},
                                                {avx512f, "avx512f"},
                                                {avx512_bf16, "avx512_bf16"},
                                                {avx512_fp16, "avx512_fp16"},
                                                {amx_bf16, "amx_bf16"}};
  for (const auto& [present, name] : flags) {
    if (present) isa += (isa.empty() ? "" : " ") + std::string(name);
  }
  return isa.empty() ? "sse2" : isa;
}

CpuInfo ParseCpuInfo(const std::string& text, int logical_cpus) {
  const std::string block = text.substr(0, text.find("\n\n"));
  CpuInfo cpu;
  cpu.vendor = Field(block, "vendor_id");
  cpu.model_name = Field(block, "model name");
  cpu.family = Int(Field(block, "cpu family"));
  cpu.model = Int(Field(block, "model"));
  const std::string flags = Field(block, "flags");
  cpu.avx = HasFlag(flags, "avx");
  cpu.avx2 = HasFlag(flags, "avx2");
  cpu.fma = HasFlag(flags, "fma");
  cpu.avx512f = HasFlag(flags, "avx512f");
  cpu.avx512_bf16 = HasFlag(flags, "avx512_bf16");
  cpu.avx512_fp16 = HasFlag(flags, "avx512_fp16");
  cpu.amx_bf16 = HasFlag(flags, "amx_bf16");
  const std::string mhz = Field(block, "cpu MHz");
  cpu.cpuinfo_mhz = ReadDouble(mhz).value_or(0);
  cpu.logical_cpus = logical_cpus > 0 ? logical_cpus : 1;
  // siblings = logical CPUs per package, cpu cores = physical cores per package.
  const int siblings = Int(Field(block, "siblings")), cores = Int(Field(block, "cpu cores"));
  const int per_core = siblings > 0 && cores > 0 && siblings >= cores ? siblings / cores : 1;
  cpu.cores = std::max(1, cpu.logical_cpus / per_core);
  return cpu;
}

CpuInfo DetectCpu() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  cpu_set_t set;
  CPU_ZERO(&set);
  const int logical = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return ParseCpuInfo(text.str(), logical);
}

uint64_t SystemMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

FmaUnits CoreFmaUnits(const CpuInfo& c) {
  const bool amd = c.vendor == "AuthenticAMD", intel = c.vendor == "GenuineIntel";
  if (amd && c.family == 0x1A && c.avx512f) {
    // Mobile Zen 5 splits 512-bit operations in two; the probe shows it.
    return {2, 512, true, "Zen 5: two 512-bit FMA pipes (AMD Zen 5 optimization guide)"};
  }
  if (amd && (c.family == 0x19 || (c.family == 0x17 && c.model >= 0x30)) && c.fma) {
    return {2, 256, true, "Zen 2-4: two 256-bit FMA pipes, AVX-512 in two halves (AMD guides)"};
  }
  if (amd && c.family == 0x17 && c.fma) return {2, 128, true, "Zen 1: two 128-bit FMA pipes (AMD family 17h guide)"};
  if (intel && c.avx512f) {
    // Some Xeon Silver/Bronze parts have one; the probe shows it.
    return {2, 512, true, "Intel AVX-512: two 512-bit FMA units (Xeon Gold/Platinum)"};
  }
  if (c.avx2 && c.fma) return {2, 256, true, "AVX2: two 256-bit FMA units (Intel Haswell onward)"};
  if (c.avx) return {1, 256, false, "AVX: one 256-bit multiply and one add pipe"};
  return {1, 128, false, "SSE2: one 128-bit multiply and one add pipe"};
}

double FlopsPerCycle(const CpuInfo& c, GemmDType d) {
  const FmaUnits u = CoreFmaUnits(c);
  // Each FMA lane does a multiply and an add: 2 FLOP (without FMA, one mul and one add pipe: same).
  const double fp32 = u.units * (u.vector_bits / 32.0) * 2;
  switch (d) {
    case GemmDType::kFp32:
      return fp32;
    case GemmDType::kFp64:
      return fp32 / 2;
    // AMX: a 16x32 by 32x16 bf16 tile product every 16 cycles = 1024 FLOP/cycle (Intel AMX overview).
    // vdpbf16ps: two bf16 products per fp32 lane per instruction, twice fp32's rate.
    case GemmDType::kBf16:
      return c.amx_bf16 ? 1024 : c.avx512_bf16 ? 2 * fp32 : fp32;
    case GemmDType::kFp16:
      return c.avx512_fp16 ? 2 * fp32 : fp32;  // else converted and computed in fp32
    case GemmDType::kTf32:
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      return 0;
  }
  return 0;
}

std::string FlopsPerCycleFormula(const CpuInfo& c, GemmDType d) {
  const FmaUnits u = CoreFmaUnits(c);
  const std::string base =
      std::to_string(u.units) + " x " + std::to_string(u.vector_bits) + "-bit " + (u.fma ? "FMA" : "mul+add");
  switch (d) {
    case GemmDType::kFp32:
      return base + " x " + std::to_string(u.vector_bits / 32) + " lanes x 2";
    case GemmDType::kFp64:
      return base + " x " + std::to_string(u.vector_bits / 64) + " lanes x 2";
    case GemmDType::kBf16:
      if (c.amx_bf16) return "AMX: 1024 bf16 FLOP per cycle";
      return c.avx512_bf16 ? "fp32 rate x 2 (vdpbf16ps)" : "fp32 rate (no bf16 arithmetic: converted to fp32)";
    case GemmDType::kFp16:
      return c.avx512_fp16 ? "fp32 rate x 2 (avx512_fp16)" : "fp32 rate (no fp16 arithmetic: converted to fp32)";
    case GemmDType::kTf32:
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      break;
  }
  return "no CPU arithmetic";
}

}  // namespace tally
