// `tally memory`: training and inference memory per device.
#include "cli/command.h"

namespace tally {

void AddMemoryFlags(CLI::App* cmd, ModelFlags& flags) { AddModelFlags(cmd, flags, true); }

std::optional<Report> RunMemory(const ModelFlags& flags, Prepared& prepared, RunContext& /*context*/) {
  return ModelReport(prepared, {.params = false, .flops = false, .memory = true}, flags.layers);
}

}  // namespace tally
