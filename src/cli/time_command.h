// `tally time`: its flags (beyond the workload's) and the run.
#pragma once

#include <optional>
#include <string>

#include "cli/cli_fwd.h"
#include "cli/command.h"
#include "estimate/time_request.h"
#include "report/report.h"

namespace tally {

struct TimeFlags {
  std::optional<std::string> tokens, days, hours, mfu, achieved, mbu, prompt, generate, gpus_per_node, vp, price,
      kernels, pp_schedule, ep_dispatch, dp_bucket, moe_imbalance, fp8_recipe;
  bool tp_overlap = false;
  bool overlap_param_gather = false;
  bool no_dp_overlap = false;
  bool no_power_limit = false;
  bool ep_overlap = false;
};

void AddTimeFlags(CLI::App* cmd, TimeFlags& flags);

// Validated; `gpus_given` says whether --gpus was on the command line (else devices may be solved for).
TimeRequest ReadTimeRequest(const TimeFlags& flags, bool gpus_given, uint64_t gpus);

struct TimeCommandFlags {
  ModelFlags model;
  TimeFlags time;
};
void AddTimeCommandFlags(CLI::App* cmd, TimeCommandFlags& flags);
SharedFlags SharedOf(const TimeCommandFlags& flags);
std::optional<Report> RunTime(const TimeCommandFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
