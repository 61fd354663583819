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

// "Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz" -> 2500; 0 when the name carries no clock
// (AMD's names, Intel's since Sapphire Rapids).
double NominalMhz(const std::string& name) {
  const size_t at = name.rfind('@');
  const size_t ghz = name.rfind("GHz");
  if (at == std::string::npos || ghz == std::string::npos || ghz < at) return 0;
  std::string digits = name.substr(at + 1, ghz - at - 1);
  while (!digits.empty() && digits.front() == ' ') digits.erase(digits.begin());
  while (!digits.empty() && digits.back() == ' ') digits.pop_back();
  return ReadDouble(digits).value_or(0) * 1000;
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
                                                {amx_bf16, "amx_bf16"},
                                                {amx_fp16, "amx_fp16"}};
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
  cpu.amx_fp16 = HasFlag(flags, "amx_fp16");
  const std::string mhz = Field(block, "cpu MHz");
  cpu.cpuinfo_mhz = ReadDouble(mhz).value_or(0);
  cpu.nominal_mhz = NominalMhz(cpu.model_name);
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

namespace {

// A core's FMA pipes by vendor, family and model number. Model ranges are the Linux kernel's
// (arch/x86/kernel/cpu/amd.c, which sorts AMD families 17h-1Ah into Zen generations;
// arch/x86/include/asm/intel-family.h for Intel's family 6). Widths and counts come from the
// vendors' optimization guides: AMD's Software Optimization Guides for family 17h (pub. 55723,
// Zen 1: four 128-bit FP pipes, FMA on two), family 17h models 30h+ (56305, Zen 2: 256-bit),
// family 19h (56665 Zen 3, 57647 Zen 4: two 256-bit FMA pipes; Zen 4 runs a 512-bit operation as
// two 256-bit halves) and family 1Ah (58455, Zen 5: two 512-bit FMA pipes); Intel's Optimization
// Reference Manual (248966: Haswell onward, two 256-bit FMA units; Ice Lake/Tiger Lake client, one
// 512-bit FMA on fused ports 0+1; Xeon Scalable, a second one on port 5 on the SKUs ARK lists with
// two "AVX-512 FMA Units"; Gracemont and later E-cores, two 128-bit FMA units).
struct CoreRow {
  const char* vendor;
  int family, model_lo, model_hi;
  FmaUnits units;
};

const CoreRow kCores[] = {
    // Zen 5 on desktop (Granite Ridge 40h-4Fh), server (Turin 00h-1Fh) and Strix Halo (70h-7Fh,
    // the desktop core dies) has full 512-bit pipes; the monolithic mobile parts (Strix Point
    // 20h-2Fh, Krackan Point 60h-6Fh) keep 256-bit pipes and split 512-bit operations.
    {"AuthenticAMD", 0x1A, 0x00, 0x1F, {2, 512, true, "Zen 5 (server): two 512-bit FMA pipes (AMD pub. 58455)"}},
    {"AuthenticAMD", 0x1A, 0x40, 0x4F, {2, 512, true, "Zen 5 (desktop): two 512-bit FMA pipes (AMD pub. 58455)"}},
    {"AuthenticAMD", 0x1A, 0x70, 0x7F, {2, 512, true, "Zen 5 (Strix Halo): two 512-bit FMA pipes (AMD pub. 58455)"}},
    {"AuthenticAMD", 0x1A, 0x20, 0x2F, {2, 256, true, "Zen 5 (Strix Point): two 256-bit FMA pipes, 512-bit halved"}},
    {"AuthenticAMD", 0x1A, 0x60, 0x6F, {2, 256, true, "Zen 5 (Krackan Point): two 256-bit FMA pipes, 512-bit halved"}},
    {"AuthenticAMD", 0x19, 0x10, 0x1F, {2, 256, true, "Zen 4: two 256-bit FMA pipes, 512-bit halved (AMD pub. 57647)"}},
    {"AuthenticAMD", 0x19, 0x60, 0xAF, {2, 256, true, "Zen 4: two 256-bit FMA pipes, 512-bit halved (AMD pub. 57647)"}},
    {"AuthenticAMD", 0x19, 0x00, 0x0F, {2, 256, true, "Zen 3: two 256-bit FMA pipes (AMD pub. 56665)"}},
    {"AuthenticAMD", 0x19, 0x20, 0x5F, {2, 256, true, "Zen 3: two 256-bit FMA pipes (AMD pub. 56665)"}},
    {"AuthenticAMD", 0x17, 0x30, 0x4F, {2, 256, true, "Zen 2: two 256-bit FMA pipes (AMD pub. 56305)"}},
    {"AuthenticAMD", 0x17, 0x60, 0x7F, {2, 256, true, "Zen 2: two 256-bit FMA pipes (AMD pub. 56305)"}},
    {"AuthenticAMD", 0x17, 0x90, 0x91, {2, 256, true, "Zen 2: two 256-bit FMA pipes (AMD pub. 56305)"}},
    {"AuthenticAMD", 0x17, 0xA0, 0xAF, {2, 256, true, "Zen 2: two 256-bit FMA pipes (AMD pub. 56305)"}},
    {"AuthenticAMD", 0x17, 0x00, 0x2F, {2, 128, true, "Zen 1: two 128-bit FMA pipes (AMD pub. 55723)"}},
    {"AuthenticAMD", 0x17, 0x50, 0x5F, {2, 128, true, "Zen 1: two 128-bit FMA pipes (AMD pub. 55723)"}},
    // Intel family 6. Client cores with AVX-512 fuse ports 0 and 1 into one 512-bit FMA: Cannon
    // Lake (66h), Ice Lake (7Dh, 7Eh), Tiger Lake (8Ch, 8Dh), Rocket Lake (A7h).
    {"GenuineIntel", 6, 0x66, 0x66, {1, 512, true, "Intel client AVX-512: one 512-bit FMA unit (Intel ORM)"}},
    {"GenuineIntel", 6, 0x7D, 0x7E, {1, 512, true, "Intel client AVX-512: one 512-bit FMA unit (Intel ORM)"}},
    {"GenuineIntel", 6, 0x8C, 0x8D, {1, 512, true, "Intel client AVX-512: one 512-bit FMA unit (Intel ORM)"}},
    {"GenuineIntel", 6, 0xA7, 0xA7, {1, 512, true, "Intel client AVX-512: one 512-bit FMA unit (Intel ORM)"}},
    // Xeons from Ice Lake-SP (6Ah, 6Ch) on: two 512-bit FMA units on every SKU.
    {"GenuineIntel", 6, 0x6A, 0x6C, {2, 512, true, "Ice Lake-SP: two 512-bit FMA units (Intel ORM, ARK)"}},
    {"GenuineIntel", 6, 0x8F, 0x8F, {2, 512, true, "Sapphire Rapids: two 512-bit FMA units (Intel ORM, ARK)"}},
    {"GenuineIntel", 6, 0xCF, 0xCF, {2, 512, true, "Emerald Rapids: two 512-bit FMA units (Intel ORM, ARK)"}},
    {"GenuineIntel", 6, 0xAD, 0xAE, {2, 512, true, "Granite Rapids: two 512-bit FMA units (Intel ORM, ARK)"}},
    // E-core parts (Gracemont and after): Alder Lake-N (BEh), Sierra Forest (AFh), Grand Ridge (B6h).
    {"GenuineIntel", 6, 0xBE, 0xBE, {2, 128, true, "Intel E-core: two 128-bit FMA units (Intel ORM)"}},
    {"GenuineIntel", 6, 0xAF, 0xAF, {2, 128, true, "Intel E-core: two 128-bit FMA units (Intel ORM)"}},
    {"GenuineIntel", 6, 0xB6, 0xB6, {2, 128, true, "Intel E-core: two 128-bit FMA units (Intel ORM)"}},
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Skylake-SP, Cascade Lake and Cooper Lake share model 55h. ARK lists one AVX-512 FMA unit for
// the Bronze (31xx, 32xx) and Silver (41xx, 42xx) Xeons and the Gold 51xx/52xx but the 5122 and
// 5222; two for the other Gold and Platinum Xeons, Xeon W and the Core X-series.
FmaUnits SkylakeServer(const std::string& name) {
  const bool one = Contains(name, "Bronze") || Contains(name, "Silver") ||
                   ((Contains(name, "Gold 51") || Contains(name, "Gold 52")) && !Contains(name, "Gold 5122") &&
                    !Contains(name, "Gold 5222"));
  if (one) return {1, 512, true, "Skylake-SP Xeon Bronze/Silver/Gold 5100-5200: one 512-bit FMA unit (Intel ARK)"};
  return {2, 512, true, "Skylake-SP: two 512-bit FMA units (Intel ARK)"};
}

}  // namespace

FmaUnits CoreFmaUnits(const CpuInfo& c) {
  if (c.vendor == "GenuineIntel" && c.family == 6 && c.model == 0x55 && c.avx512f) return SkylakeServer(c.model_name);
  for (const CoreRow& row : kCores) {
    if (c.vendor == row.vendor && c.family == row.family && c.model >= row.model_lo && c.model <= row.model_hi &&
        (row.units.vector_bits < 512 || c.avx512f)) {
      return row.units;
    }
  }
  // Not in the table: the widest the flags allow, at two pipes (the FMA probe checks it).
  if (c.avx512f) return {2, 512, true, "AVX-512: two 512-bit FMA units assumed (core not in tally's table)"};
  if (c.avx2 && c.fma) return {2, 256, true, "AVX2: two 256-bit FMA units (Intel Haswell onward, AMD Zen 2 onward)"};
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
    // AMX: a 16x32 by 32x16 bf16 (or fp16) tile product, 16x16x32 multiply-adds, every 16 cycles
    // = 1024 FLOP/cycle (Intel ORM, AMX chapter: "1024 BF16 operations per cycle per core").
    // vdpbf16ps: two bf16 products per fp32 lane per instruction, twice fp32's rate.
    case GemmDType::kBf16:
      return c.amx_bf16 ? 1024 : c.avx512_bf16 ? 2 * fp32 : fp32;
    // avx512_fp16: 32 fp16 lanes per 512-bit FMA, twice fp32's rate.
    case GemmDType::kFp16:
      return c.amx_fp16 ? 1024 : c.avx512_fp16 ? 2 * fp32 : fp32;  // else converted and computed in fp32
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
      if (c.amx_fp16) return "AMX: 1024 fp16 FLOP per cycle";
      return c.avx512_fp16 ? "fp32 rate x 2 (avx512_fp16)" : "fp32 rate (no fp16 arithmetic: converted to fp32)";
    case GemmDType::kTf32:
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      break;
  }
  return "no CPU arithmetic";
}

}  // namespace tally
