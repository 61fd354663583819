// `tally check`: limits on report keys, from flags or a budget file; exit 1 when any fails.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/cli_fwd.h"
#include "cli/command.h"
#include "cli/settings_flags.h"
#include "cli/time_command.h"
#include "report/report.h"
#include "util/units.h"

namespace tally {

struct CheckFlags {
  std::vector<std::string> max;  // KEY=VALUE
  std::vector<std::string> min;
  std::optional<std::string> budget;  // a budget YAML file
};

void AddCheckFlags(CLI::App* cmd, CheckFlags& flags);

struct CheckOutcome {
  bool pass = true;
  Report report;  // check.results (a table: one row per limit and model) and check.{pass, passed, failed}
};

// `model` may be empty when the budget file names the models.
// With --hardware, the report has the time.* keys too, from `time_flags` (--tokens, --mfu, ...).
CheckOutcome RunCheck(const std::string& model, const WorkloadFlags& cli_flags, const CheckFlags& flags,
                      const TimeFlags& time_flags);

// The command: [MODEL], the workload, the limits, the time flags and the output; exit 1 on a failure.
struct CheckCommandFlags {
  std::string model;
  WorkloadFlags workload;
  CheckFlags check;
  TimeFlags time;
  OutputFlags output;
};
void AddCheckCommandFlags(CLI::App* cmd, CheckCommandFlags& flags);
SharedFlags SharedOf(const CheckCommandFlags& flags);
std::optional<Report> RunCheckCommand(const CheckCommandFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
