// `tally time` flags (beyond the workload's) and `tally hardware`, the catalog.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "estimate/time_report.h"
#include "report/report.h"

namespace tally {

struct TimeFlags {
  std::optional<std::string> tokens, days, hours, mfu, achieved, mbu, prompt, generate, gpus_per_node, vp, price;
};

void AddTimeFlags(CLI::App* cmd, TimeFlags& flags);

// Validated; `gpus_given` says whether --gpus was on the command line (else devices may be solved for).
TimeRequest ReadTimeRequest(const TimeFlags& flags, bool gpus_given, uint64_t gpus);

// hardware: a table keyed by name, with kind, description, memory_bytes, memory_bandwidth,
// interconnect_bandwidth, peak.<dtype> and source (JSON hardware.<name>.*).
Report HardwareReport();

}  // namespace tally
