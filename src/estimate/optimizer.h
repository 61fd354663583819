// Optimizer state per parameter tensor, each optimizer with its source.
#pragma once

#include <cstdint>

#include "config/settings.h"
#include "graph/layer.h"

namespace tally {

// Bytes of optimizer state for one parameter tensor of `shape` (elements divided across `shards`).
// `elements` is the product of `shape`, given so the common optimizers need not recompute it.
uint64_t OptimizerStateBytes(Optimizer o, DType state, const std::vector<uint64_t>& shape, uint64_t elements,
                             uint64_t shards);

// A one-line description of what the optimizer keeps, for --explain and docs/memory.md.
const char* OptimizerStateFormula(Optimizer o);

}  // namespace tally
