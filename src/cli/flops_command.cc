// `tally flops`: FLOPs of one step under the workload.
#include "cli/command.h"

namespace tally {

void AddFlopsFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, true); }

std::string RunFlops(const ModelFlags& flags, RunContext& context) {
  return RunModelReport(flags, {.params = false}, true, context.err);
}

}  // namespace tally
