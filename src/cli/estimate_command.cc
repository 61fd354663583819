// `tally estimate`: everything tally knows about MODEL: params, FLOPs, memory.
#include "cli/command.h"

namespace tally {

void AddEstimateFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, true); }

std::string RunEstimate(const ModelFlags& flags, RunContext& context) {
  return RunModelReport(flags, {.memory = true}, true, context.err);
}

}  // namespace tally
