// `tally estimate`: everything tally knows about MODEL: params, FLOPs, memory.
#include "cli/command.h"

namespace tally {

void AddEstimateFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, true); }

std::optional<Report> RunEstimate(const ModelFlags& flags, Prepared& prepared, RunContext& /*context*/) {
  return ModelReport(prepared, {.memory = true}, flags.layers);
}

}  // namespace tally
