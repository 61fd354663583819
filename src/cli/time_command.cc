#include "cli/time_command.h"

#include <charconv>
#include <cmath>

#include "cli/settings_flags.h"
#include "config/hardware.h"
#include "config/presets.h"
#include "report/format.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

double Ratio(const std::string& text, const char* flag) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // Below 1e-6 a utilization is no longer a rate but an overflow: times past any double.
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || v < 1e-6 || v > 1) {
    throw InputError(std::string("--") + flag + ": '" + text + "' is not a ratio in [1e-6, 1], such as 0.4");
  }
  return v;
}

}  // namespace

void AddTimeFlags(CLI::App* cmd, TimeFlags& f) {
  auto opt = [&](const char* name, std::optional<std::string>& into, const char* help, const char* type) {
    AddTextOption(cmd, name, into, help, type, "Time");
  };
  opt("--tokens", f.tokens, "training tokens, e.g. 2T or 300B (default: solve, or Chinchilla's 20 per parameter)", "N");
  opt("--days", f.days, "wall-clock budget in days (or 36h, 2w)", "D");
  opt("--hours", f.hours, "wall-clock budget in hours", "H");
  opt("--mfu", f.mfu, "training: end-to-end model FLOPs utilization of the dense peak; inference: each op's "
                      "compute efficiency inside the roofline (default 0.4)", "RATIO");
  opt("--achieved", f.achieved, "hardware FLOP/s per device actually reached (instead of --mfu), e.g. 140e12", "FLOP/S");
  opt("--mbu", f.mbu, "memory-bandwidth utilization for the inference roofline (default 0.8)", "RATIO");
  opt("--prompt", f.prompt, "inference: prompt tokens per sequence (default 512)", "N");
  opt("--generate", f.generate, "inference: generated tokens per sequence (default 128)", "N");
}

TimeRequest ReadTimeRequest(const TimeFlags& f, bool gpus_given, uint64_t gpus) {
  TimeRequest r;
  if (f.tokens) {
    std::optional<uint64_t> exact;
    r.train.tokens = ParseSiNumber(*f.tokens, "--tokens", exact);
    if (!(*r.train.tokens >= 1)) throw InputError("--tokens: must be at least 1");
  }
  if (f.days && f.hours) throw InputError("--days: give --days or --hours, not both");
  if (f.days) r.train.seconds = ParseDuration(*f.days, "days", 'd');
  if (f.hours) r.train.seconds = ParseDuration(*f.hours, "hours", 'h');
  if (gpus_given) r.train.gpus = gpus;
  if (r.train.tokens && r.train.seconds && r.train.gpus) {
    throw InputError("--tokens: give two of --tokens, --days/--hours and --gpus; tally solves for the third");
  }
  if (f.mfu && f.achieved) throw InputError("--achieved: give --mfu or --achieved, not both");
  if (f.mfu) r.train.mfu = Ratio(*f.mfu, "mfu");
  if (f.achieved) {
    std::optional<uint64_t> exact;
    r.train.achieved = ParseSiNumber(*f.achieved, "--achieved", exact);
    if (!(*r.train.achieved >= 1)) throw InputError("--achieved: must be at least 1 FLOP/s");
  }
  if (f.mbu) r.mbu = Ratio(*f.mbu, "mbu");
  if (f.prompt) r.prompt = ParseCount(*f.prompt, "prompt");
  if (f.generate) r.generate = ParseCount(*f.generate, "generate");
  return r;
}

Report HardwareReport() {
  Report r;
  ReportNode& group = r.Group("hardware", "Hardware catalog");
  for (const std::string& name : HardwareNames()) {
    const HardwareSpec h = ResolveHardware(name);
    ReportNode& n = group.AddGroup(name, name);
    n.AddLeaf("kind", "kind", h.kind, Unit::kText);
    n.AddLeaf("description", "description", h.description, Unit::kText);
    n.AddLeaf("memory_bytes", "memory", h.memory_bytes, Unit::kByte);
    n.AddLeaf("memory_bandwidth", "memory bandwidth", h.memory_bandwidth, Unit::kBytePerSecond);
    n.AddLeaf("interconnect_bandwidth", "interconnect per direction", h.interconnect_bandwidth, Unit::kBytePerSecond);
    ReportNode& peak = n.AddGroup("peak", "dense peak");
    for (const auto& [dtype, flops] : h.peak_flops) peak.AddLeaf(dtype, dtype, flops, Unit::kFlopPerSecond);
    n.AddLeaf("source", "file", h.source, Unit::kText);
  }
  return r;
}

std::string FormatHardwareTable(const Report& report) {
  std::string out = LeftCell("device", 11) + LeftCell("kind", 5) + LeftCell("bf16 peak", 16) + LeftCell("fp8 peak", 16) +
                    LeftCell("memory", 11) + "bandwidth\n";
  for (const ReportNode& n : report.Find("hardware")->children) {
    auto peak = [&](const char* dtype) {
      const ReportNode* p = n.Child("peak")->Child(dtype);
      return p ? FormatRate(std::get<double>(p->value)) : std::string("-");
    };
    out += LeftCell(n.key, 11) + LeftCell(std::get<std::string>(n.Child("kind")->value), 5) + LeftCell(peak("bf16"), 16) +
           LeftCell(peak("fp8"), 16) + LeftCell(FormatBytes(std::get<uint64_t>(n.Child("memory_bytes")->value), UnitSystem::kIec), 11) +
           FormatBytes(static_cast<uint64_t>(std::get<double>(n.Child("memory_bandwidth")->value)), UnitSystem::kSi) + "/s\n";
  }
  return out;
}

}  // namespace tally
