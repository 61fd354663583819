// `tally params`: the parameter counts; no workload, so no workload flags.
#include "cli/command.h"

namespace tally {

void AddParamsFlags(CLI::App* cmd, ParamsFlags& flags) { AddModelFlags(cmd, flags, false); }

std::optional<Report> RunParams(const ParamsFlags& flags, Prepared& prepared, RunContext& /*context*/) {
  return ModelReport(prepared, {.settings = false, .flops = false}, flags.layers);
}

}  // namespace tally
