// `tally memory`: training and inference memory per device.
#include "cli/command.h"

namespace tally {

void AddMemoryFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, true); }

std::string RunMemory(const ModelFlags& flags, RunContext& context) {
  return RunModelReport(flags, {.params = false, .flops = false, .memory = true}, true, context.err);
}

}  // namespace tally
