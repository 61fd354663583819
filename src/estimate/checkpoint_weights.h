// Inference weights from the checkpoint's own bytes. When weights were read (safetensors or GGUF
// headers), the stored bytes of each role (estimate/checkpoint_match.h's convention: norm, attention and MLP
// inside the blocks; embedding, head and norm outside) are spread over the graph's tensors of that
// role in proportion to their elements, so a GGUF of k-quants or a packed checkpoint costs what it
// stores, device by device. Stored tensors of no role (buffers, extra modules, blocks past the
// graph's, a tied head saved twice) are not loaded; a role the checkpoint lacks keeps the rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/checkpoint_match.h"
#include "estimate/memory_model.h"
#include "graph/layer_graph.h"

namespace tally {

struct CheckpointRates {
  struct Role {
    uint64_t stored_bytes = 0;
    uint64_t graph_elements = 0;
  };
  std::map<TensorRole, Role> roles;  // by GraphRole / StoredRole (estimate/checkpoint_match.h)

  // The bytes of `elements` of a graph tensor of `role`: elements · stored / graph elements, rounded
  // up; nullopt when the checkpoint stores nothing of the role.
  std::optional<uint64_t> Bytes(TensorRole role, uint64_t elements) const;
  // The same per element, for the roofline's approximate reads.
  std::optional<double> PerElement(TensorRole role) const;
  // "checkpoint" when the checkpoint stores every role the graph has, "checkpoint and rules" when
  // some, "rules" when none (tensor names tally cannot place).
  const char* Coverage() const;
};

// Whether inference takes its weight bytes from the checkpoint: weights were read, and neither
// --quant nor --param-dtype asks for another storage.
bool UsesCheckpointWeights(const ModelSpec& spec, const Settings& s);

// The checkpoint's bytes by role against the graph's elements by role (LoRA adapters left out).
CheckpointRates CheckpointRatesOf(const CheckpointInfo& c, const MemoryModel& m);
CheckpointRates CheckpointRatesOf(const CheckpointInfo& c, const LayerGraph& g);

}  // namespace tally
