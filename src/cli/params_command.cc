// `tally params`: the parameter counts; no workload, so no workload flags.
#include "cli/command.h"

namespace tally {

void AddParamsFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, false); }

std::string RunParams(const ModelFlags& flags, RunContext& context) {
  return RunModelReport(flags, {.settings = false, .flops = false}, false, context.err);
}

}  // namespace tally
