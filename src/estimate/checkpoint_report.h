// The checkpoint's own counts beside the graph's: params.checkpoint (every stored tensor's
// elements) and checkpoint.bytes with its split by dtype, when the model came with weights.
#pragma once

#include "config/model_spec.h"
#include "report/report.h"

namespace tally {

// Adds model.quantization when the config has a quantization_config, and params.checkpoint and
// the checkpoint group when `spec.checkpoint` is set.
// Call after the params group, so that params.checkpoint follows params.total.
void AddCheckpoint(const ModelSpec& spec, Report& r);

}  // namespace tally
