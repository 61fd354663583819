// `tally hardware`: the hardware catalog (configs/hardware), one row per device.
#pragma once

#include <string>

#include "cli/command.h"
#include "report/report.h"

namespace tally {

// hardware: a table keyed by name, with kind, description, memory_bytes, memory_bandwidth,
// interconnect_bandwidth, peak.<dtype> and source (JSON hardware.<name>.*).
Report HardwareReport();

void AddHardwareFlags(CLI::App* cmd, OutputFlags& flags);
std::string RunHardware(const OutputFlags& flags, RunContext& context);

}  // namespace tally
