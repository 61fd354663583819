// `tally hardware`: the hardware catalog (configs/hardware), one row per device.
#pragma once

#include <string>

#include "cli/command.h"
#include "report/report.h"

namespace tally {

// hardware: a table keyed by name, with kind, aliases (space-separated; absent when none),
// description, memory_bytes, memory_bandwidth, interconnect_bandwidth, the step-model fields,
// peak.<dtype>, gemm_efficiency.<dtype>, achieved.<dtype>, source, sources.<key> (the file's
// field_sources) and documents (JSON hardware.<name>.*); --explain lists every field of a device
// with its source under its row.
Report HardwareReport();

// [NAME]: one device (a name or an alias, in any case); without, the catalog.
struct HardwareFlags {
  OutputFlags output;
  std::string name;
};
void AddHardwareFlags(CLI::App* cmd, HardwareFlags& flags);
SharedFlags SharedOf(const HardwareFlags& flags);
std::optional<Report> RunHardware(const HardwareFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
