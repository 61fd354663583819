// The selective state-space mixers (Mamba, Mamba-2) as graph nodes, for the transformer builder's
// blocks whose LayerSpec::mixer says so (graph/build_transformer.cc builds the norm and residual
// around them).
#pragma once

#include <string>
#include <vector>

#include "config/model_spec.h"
#include "graph/layer.h"

namespace tally {

// Where a mixer sits: its path prefix ("blocks.3.mixer"), the batch and sequence, the model width
// and the id of the tensor it reads (the block's norm output).
struct SsmPlace {
  std::string prefix;
  uint64_t batch = 1;
  uint64_t seq = 1;
  uint64_t d_model = 0;
  std::string input;
};

// The mixer's nodes in order, each with its output shape; the last one's output is the mixer's.
std::vector<Layer> SsmMixer(const SsmSpec& ssm, MixerKind kind, const SsmPlace& place);

}  // namespace tally
