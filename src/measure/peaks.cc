#include "measure/peaks.h"

#include <algorithm>
#include <cmath>

#include "measure/gpu_peaks.h"
#include "util/units.h"

namespace tally {

PeakTable::PeakTable(const GemmBackend& backend, std::map<GemmDType, double> overrides)
    : cpu_(backend.Device() == "cpu"), overrides_(std::move(overrides)) {
  if (cpu_) {
    cpu_info_ = DetectCpu();
    imul_latency_ = ImulLatencyCycles(cpu_info_);
    readings_ = {.probe_hz = MeasureClockHz(imul_latency_),
                 .tsc_hz = MeasureTscHz(),
                 .cpuinfo_mhz = cpu_info_.cpuinfo_mhz,
                 .max_mhz = CpufreqMaxMhz(),
                 .nominal_mhz = cpu_info_.nominal_mhz};
    clock_ = ChooseClock(readings_);
    clock_hz_ = clock_.hz;
  } else {
    gpu_ = backend.Facts();
    clock_hz_ = gpu_.clock_hz;
  }
}

std::string PeakTable::RemeasureClock() {
  if (!cpu_) return "";
  start_clock_hz_ = readings_.probe_hz;
  end_clock_hz_ = MeasureClockHz(imul_latency_);
  readings_.probe_hz = std::max(start_clock_hz_, end_clock_hz_);
  clock_ = ChooseClock(readings_);
  clock_hz_ = clock_.hz;
  if (std::fabs(end_clock_hz_ - start_clock_hz_) <= 0.03 * readings_.probe_hz) return "";
  return "the clock read " + FormatFixed(start_clock_hz_ / 1e9) + " GHz before the timing and " +
         FormatFixed(end_clock_hz_ / 1e9) + " GHz after (another process was busy); peaks use the higher";
}

PeakCheck CheckPeakAgainstProbe(GemmDType d, double computed, double probed, const std::string& basis, bool same_unit) {
  constexpr double kAbove = 1.10, kUnder = 0.55;
  if (computed <= 0 || probed <= 0) return {};
  const std::string what = std::string("the ") + GemmDTypeName(d) + " FMA probe reached " + FormatRate(probed) + ", ";
  const std::string peak = FormatRate(computed) + " (" + basis + ")";
  if (probed > kAbove * computed) {
    return {true, what + FormatFixed(probed / computed) + " x the computed peak of " + peak +
                      ": the clock or the FLOP per cycle undercount this CPU, so " + GemmDTypeName(d) +
                      " MFUs are left out"};
  }
  if (same_unit && probed < kUnder * computed) {
    return {false, what + FormatFixed(probed / computed) + " x the computed peak of " + peak +
                       ": the cores may have half the FMA width counted, share physical cores (hyperthreads a " +
                       "hypervisor hides), slow down under wide FMAs, or be busy with other work; " + GemmDTypeName(d) +
                       " MFUs may read low"};
  }
  return {};
}

std::string PeakTable::PeakBasis(GemmDType d, int threads) const {
  if (overrides_.count(d) != 0) return "--peak";
  if (!cpu_) {
    std::string source;
    GpuDatasheetPeak(gpu_.name, d, &source);
    return source.empty() ? "no datasheet peak: give --peak" : source;
  }
  const int cores = threads > 0 ? Used(threads) : Cores();
  return FormatDouble(FlopsPerCycle(cpu_info_, d)) + " FLOP/cycle x " + std::to_string(cores) +
         (cores == 1 ? " core x " : " cores x ") + FormatFixed(clock_hz_ / 1e9) + " GHz (" + clock_.source + ")";
}

PeakCheck PeakTable::Check(GemmDType d) {
  if (!cpu_ || overrides_.count(d) != 0) return {};
  // AMX's tiles set the bf16 (fp16) peak, but the probe runs vector FMAs: it checks only from above.
  const bool amx = (d == GemmDType::kBf16 && cpu_info_.amx_bf16) || (d == GemmDType::kFp16 && cpu_info_.amx_fp16);
  return CheckPeakAgainstProbe(d, DevicePeak(d, nullptr), Probed(d, Cores()), PeakBasis(d), !amx);
}

int PeakTable::Used(int threads) const { return std::clamp(threads, 1, Cores()); }

double PeakTable::DevicePeak(GemmDType d, std::string* source) const {
  if (auto it = overrides_.find(d); it != overrides_.end()) {
    if (source != nullptr) *source = "--peak";
    return it->second;
  }
  if (!cpu_) return GpuDatasheetPeak(gpu_.name, d, source);
  if (source != nullptr) *source = "ISA x cores x clock";
  // Peak = FLOP per cycle per core x cores x clock (the usual CPU roofline ceiling).
  return FlopsPerCycle(cpu_info_, d) * Cores() * clock_hz_;
}

double PeakTable::Computed(GemmDType d, int threads) const {
  // A run on fewer threads than cores is measured against the cores it can occupy.
  return DevicePeak(d, nullptr) * Used(threads) / Cores();
}

double PeakTable::Probed(GemmDType d, int threads) {
  if (!cpu_) return 0;
  const auto key = std::make_pair(d, Used(threads));
  auto it = probed_.find(key);
  if (it == probed_.end()) it = probed_.emplace(key, ProbePeak(d, key.second)).first;
  return it->second;
}

void PeakTable::AddClock(Report& r) const {
  r.Set("measure.cpu.clock_hz", "clock (" + clock_.source + ")", clock_hz_, Unit::kHertz,
        "the dependent imul chain's reading (" + std::to_string(imul_latency_) +
            " cycles each, after a 30 ms warm-up the fastest trial in 120 ms, read before and after the timing, the "
            "higher kept) when it is within what the CPU can run: " +
            clock_.basis);
  // A reading outside what the CPU can run is never printed as a clock: the note says what it was.
  if (clock_.Within(readings_.probe_hz)) {
    r.Set("measure.cpu.clock_probe_hz", "clock probe (dependent imul chain)", readings_.probe_hz, Unit::kHertz);
  }
  if (end_clock_hz_ > 0 && clock_.Within(start_clock_hz_) && clock_.Within(end_clock_hz_)) {
    r.Set("measure.cpu.clock_before_hz", "clock probe before the timing", start_clock_hz_, Unit::kHertz);
    r.Set("measure.cpu.clock_after_hz", "clock probe after the timing", end_clock_hz_, Unit::kHertz);
  }
  if (readings_.tsc_hz > 0) {
    r.Set("measure.cpu.tsc_hz", "TSC rate (nominal clock)", readings_.tsc_hz, Unit::kHertz,
          "rdtsc ticks over 20 ms of steady_clock; an invariant TSC ticks at the nominal clock, which turbo exceeds");
    if (clock_hz_ > 0) {
      r.Set("measure.cpu.clock_over_tsc", "clock / TSC rate (turbo over nominal)", clock_hz_ / readings_.tsc_hz,
            Unit::kTimes, "held to 0.25-4x (cpufreq's maximum where sysfs has it): " + clock_.basis);
    }
  }
  r.Set("measure.cpu.cpuinfo_mhz", "/proc/cpuinfo MHz (cross-check)", cpu_info_.cpuinfo_mhz, Unit::kMegahertz);
  if (readings_.nominal_mhz > 0) {
    r.Set("measure.cpu.nominal_mhz", "model name's nominal clock", readings_.nominal_mhz, Unit::kMegahertz);
  }
  if (readings_.max_mhz > 0) {
    r.Set("measure.cpu.max_mhz", "cpufreq maximum", readings_.max_mhz, Unit::kMegahertz);
  }
  r.Set("measure.cpu.clock_source", "clock source", clock_.source, Unit::kText);
  if (!clock_.note.empty()) r.notes.push_back(clock_.note);
  if (!clock_.nominal_note.empty()) r.notes.push_back(clock_.nominal_note);
}

void PeakTable::AddTo(Report& r, const std::vector<GemmDType>& dtypes) {
  // Each figure carries its unit: the table prints GHz and FLOP/s from it; JSON stays in base units.
  if (cpu_) {
    r.Group("measure.cpu", "CPU");
    r.Set("measure.cpu.name", "model name", cpu_info_.model_name, Unit::kText);
    r.Set("measure.cpu.family", "family, model",
          std::to_string(cpu_info_.family) + ", " + std::to_string(cpu_info_.model), Unit::kText);
    r.Set("measure.cpu.isa", "ISA", cpu_info_.Isa(), Unit::kText);
    r.Set("measure.cpu.cores", "cores (physical, in the affinity mask)", static_cast<uint64_t>(cpu_info_.cores),
          Unit::kNumber);
    r.Set("measure.cpu.logical_cpus", "logical CPUs", static_cast<uint64_t>(cpu_info_.logical_cpus), Unit::kNumber);
    AddClock(r);
    r.Set("measure.cpu.fma_units", "FMA units", CoreFmaUnits(cpu_info_).source, Unit::kText);
  } else {
    r.Group("measure.gpu", "GPU");
    r.Set("measure.gpu.name", "name", gpu_.name, Unit::kText);
    r.Set("measure.gpu.memory", "memory", gpu_.memory_bytes, Unit::kByte);
    r.Set("measure.gpu.multiprocessors", "multiprocessors", gpu_.n_multiprocessors, Unit::kNumber);
    r.Set("measure.gpu.clock_hz", "peak clock", gpu_.clock_hz, Unit::kHertz);
    r.Set("measure.gpu.memory_bandwidth_bytes_per_s", "memory bandwidth (from its clock and bus)",
          gpu_.memory_bandwidth_bytes_per_s, Unit::kBytePerSecond);
  }
  r.Group("measure.peak", cpu_ ? "Peak (all cores)" : "Peak");
  for (GemmDType d : dtypes) {
    const std::string key = std::string("measure.peak.") + GemmDTypeName(d);
    std::string source;
    const double peak = DevicePeak(d, &source);
    r.Group(key, GemmDTypeName(d));
    if (cpu_) {
      r.Set(key + ".flop_per_cycle", "FLOP per cycle per core", FlopsPerCycle(cpu_info_, d), Unit::kNumber,
            FlopsPerCycleFormula(cpu_info_, d));
    }
    const std::string from = source.empty() ? "unknown: give --peak" : source;
    r.Set(key + ".computed_flop_per_s", (cpu_ ? "computed (" : "datasheet (") + from + ")", peak, Unit::kFlopPerSecond,
          PeakBasis(d));
    if (cpu_) {
      r.Set(key + ".probed_flop_per_s", "probed (FMA loop, all cores)", Probed(d, Cores()), Unit::kFlopPerSecond);
      const PeakCheck check = Check(d);
      if (!check.note.empty()) r.notes.push_back(check.note);
    }
  }
}

}  // namespace tally
