// The memory sections of a report: the training and inference ledgers per device, the KV cache per
// token and one block's activations, each line with its formula for --explain.
#pragma once

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/memory_model.h"
#include "report/report.h"

namespace tally {

void AddMemory(const ModelSpec& spec, const Settings& settings, const MemoryModel& model, Report& report);

// The precision, optimizer and parallelism settings, echoed under settings.*.
void AddMemorySettings(const ModelSpec& spec, const Settings& settings, Report& report);

}  // namespace tally
