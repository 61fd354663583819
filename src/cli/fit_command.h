// `tally fit`: its flags, the search, and the report at the answer.
#pragma once

#include <optional>
#include <string>

#include "cli/cli_fwd.h"
#include "cli/command.h"
#include "config/model_spec.h"
#include "estimate/fit.h"
#include "report/report.h"
#include "util/names.h"

namespace tally {

struct FitFlags {
  std::optional<std::string> memory;  // the limit per device, e.g. 80GiB
  std::optional<std::string> solve;   // batch | seq | gpus
};

void AddFitFlags(CLI::App* cmd, FitFlags& flags);

struct FitOutcome {
  bool fits = false;
  std::string message;  // why nothing fits, for stderr
  Report report;        // fit.* and the ledger at the answer (or at the smallest value tried)
};

FitOutcome RunFit(Evaluation& evaluation, const Settings& settings, const FitFlags& flags);

// The command: MODEL, the workload, --memory and --solve; exit 1 when nothing fits.
struct FitCommandFlags {
  ModelFlags model;
  FitFlags fit;
};
void AddFitCommandFlags(CLI::App* cmd, FitCommandFlags& flags);
SharedFlags SharedOf(const FitCommandFlags& flags);
std::optional<Report> RunFitCommand(const FitCommandFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
